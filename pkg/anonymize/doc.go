// Package anonymize publishes a table's sensitive attribute with mechanism A′
// of Fu, Wang, Wang and Wong, "Small Count Privacy and Large Count Utility in
// Data Publishing" (seed 003, §4), and with the baselines that paper compares
// against: Anatomy (ℓ-diverse groups published with their value counts) and
// global randomization (mechanism A, §3).
//
// Everything works on columns of value indexes: S[row] is the position of the
// row's sensitive value in the attribute's codebook, 0 ≤ S[row] < V. Callers
// map labels to indexes and back with the codebook; error values name value
// indexes for the same reason.
//
// Mechanism A′ (§4.1, Algorithm 1) in this package:
//
//  1. Every row gets a random tuple id, a uniformly random permutation of
//     0..N−1 drawn from the injected CSPRNG, independent of the content.
//  2. N mod ℓ′ rows are dropped (the ones with the largest ids, so a uniformly
//     random choice) to make N a multiple of ℓ′.
//  3. The (id, S) projection is partitioned into decoy groups of exactly ℓ′
//     rows with ℓ′ distinct values by Anatomy's group creation (§9: buckets by
//     value, repeatedly one row, the smallest id, from each of the ℓ′ largest
//     buckets). The partition depends on (id, S) only.
//  4. Each row publishes a value drawn uniformly from its group's ℓ′ values,
//     p = q = 1/ℓ′ (Fact 1, Theorem 1); rows are emitted in a fresh random
//     order and nothing about the groups is released.
//
// The guarantees per value (Lemma 4's utility threshold, Definition 5's
// privacy probability) are in guarantee.go; the count estimators for a
// published table are in package countquery.
package anonymize
