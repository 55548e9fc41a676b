// Package sample draws the same uniform sample of rows at every curator
// without the curators exchanging row lists (Lin–Wang–Rane §III, SPEC §3.1).
//
// Each row id gets a priority u = PRF_s(id) under a secret s shared by the
// curators; the sample is the m rows of smallest priority (bottom-m). Since
// the PRF's outputs are indistinguishable from independent uniform draws,
// the bottom-m set is a uniform sample without replacement of size m; since
// every curator computes the same priorities, they keep the same rows, and
// emitting rows in priority order aligns the samples by position. Memory is
// bounded whatever m and n: the candidate rows are held in memory up to
// Budget bytes and in sorted run files past it (store), merged at the end.
package sample
