// Package pram is the server's perturbation step of the Lin–Wang–Rane release
// pipeline: γ-diagonal post-randomization (PRAM) of joint rows over the
// curators' mixed-radix alphabet, and the privacy accounting that ties γ to
// ε (B.-R. Lin, Y. Wang, S. Rane, "On the Benefits of Sampling in Privacy
// Preserving Statistical Analysis on Distributed Databases", §III-A and
// §III-B; SPEC §3.3).
//
// The joint alphabet is G = Z_{k_1} × … × Z_{k_d}, one factor per column of
// the curators' joined table, with K = k_1·…·k_d joint values (Domain). Each
// joint row x̌ ∈ G is replaced by x̄ with probability
//
//	A[x̄, x̌] = γ/q  if x̄ = x̌,   1/q otherwise,   q = γ + K − 1,  γ > 1.
//
// A depends only on the difference x̄ − x̌ in the group G, so the server
// applies it by adding a random offset o ∈ G component-wise mod k_j, with
// P(o = 0) = γ/q and P(o = g) = 1/q for every g ≠ 0 (Mechanism). Addition
// commutes with the curators' additive one-time pads (package pad), so the
// researcher's decrypted rows are exactly the sampled rows perturbed by A
// (Lemma III.1) while the server never sees a plaintext.
//
// Privacy (Theorem III.2, tight by Example III.3): sampling m of n rows
// uniformly without replacement and then applying A gives ε-differential
// privacy (neighbours differ by replacing one row) with
//
//	ε = ln((n + m(γ − 1))/n)   ⇔   γ = 1 + (n/m)(e^ε − 1),
//
// against ε = ln γ for PRAM of the whole table (m = n).
package pram
