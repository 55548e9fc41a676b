// Package encrypt is the `encrypt` command: each curator replaces the value
// indices of its sampled columns by additive one-time-pad ciphertexts before
// the server sees them (Lin–Wang–Rane §III-A "Encryption", SPEC §3.2).
//
// For row i and column j with codebook length k_j,
//
//	c_ij = (x_ij + v_ij) mod k_j,   v_ij uniform on Z_{k_j}, independent per cell,
//
// where x_ij is the cell's value index. c is then uniform on Z_{k_j}
// whatever x is, so the encrypted table is independent of the data; the
// pads v form the key file that the curator keeps and later hands to the
// researcher. The layout of both files is in package release.
package encrypt
