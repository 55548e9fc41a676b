// Package estimate recovers the joint distribution (type) of the full table
// from a decrypted γ-diagonal PRAM release, plans the sample size, and
// measures errors (Lin, Wang, Rane, "On the Benefits of Sampling in Privacy
// Preserving Statistical Analysis on Distributed Databases", §III-A
// "Release" and §III-C; SPEC §3.5).
//
// Notation. G is the joint alphabet (package pram's Domain), K = |G|; the
// release has m rows; T(g) is the observed frequency of joint value g among
// them; A is the PRAM matrix A[x̄, x̌] = γ/q if x̄ = x̌ else 1/q with
// q = γ + K − 1. Given the sample, each released row has the law A·T̃ where
// T̃ is the sample's type, and E[T] = A·t for the full table's type t.
//
// Three estimators of t:
//
//   - Inverse, the paper's T̂ = A⁻¹T, in closed form
//     T̂(g) = (q·T(g) − 1)/(γ − 1). Unbiased, sums to 1, may be negative.
//   - Projected: the Euclidean projection of T̂ onto the probability simplex.
//     Never further from t than T̂ (projection onto a convex set holding t
//     is non-expansive).
//   - MLE: the maximum-likelihood t under the PRAM model, on the simplex.
//     Exact, in closed form: the Inverse estimate of the release restricted
//     to its most frequent values, as many as keep that estimate positive,
//     and 0 elsewhere (see MLE). EM, the iterative Bayesian update, is
//     kept as an option to compare with.
//
// Sparse representation. K may be astronomically larger than m (up to 2^62),
// but at most m joint values are observed, and the estimators treat all
// never-observed values alike: A is invariant under relabelling G, so they
// share one value by symmetry. Counts holds only the observed (index, count)
// pairs and Vector the estimates of listed cells plus one value Rest for
// each of the K − len(Index) others. The estimators, intervals, L2 and
// Marginal run in memory O(observed) and time O(observed) up to a log
// factor (times the iterations for MLE by EM, the replicates for the
// bootstrap); only Vector.Dense expands to K cells.
//
// Also here: confidence intervals (InverseInterval; BootstrapInterval for
// Projected and MLE), the Theorem III.4 error bound and the optimal sample
// size (Bound, NewPlan), ℓ2 error against a known distribution (L2) and
// marginals (Marginal).
package estimate
