// Package bitflip is K-randomization: randomized response on bit vectors
// (M. Zhilyaev, D. Zeber, "K-Randomization", 2016, §1–2; SPEC §5).
//
// A record is a bit vector v ∈ {0,1}^L: binary columns contribute one bit,
// categorical columns one bit per category of their codebook (one-hot), as
// described by a Layout. The randomization R with lie probability q,
// 0 < q < 1/2, flips every bit independently with probability q:
//
//	R(b) = (1 − b)·X + b·(1 − X),   X ~ Ber(q),   independently per bit,
//
// so that, with d(v, s) the Hamming distance and m(v, s) = L − d(v, s) the
// number of matching bits (the paper's notation),
//
//	P[R(v) = s] = q^d(v,s) · (1 − q)^(L − d(v,s)) = q^(L − m(v,s)) · (1 − q)^m(v,s).
//
// Privacy. For two records v, v′ and any report s the likelihood ratio is
// ((1 − q)/q)^(d(v′,s) − d(v,s)) ≤ ((1 − q)/q)^d(v,v′), so
//
//	ε_bit    = ln((1 − q)/q)           (one bit, d = 1),
//	ε_record = L · ln((1 − q)/q)       (any two vectors in {0,1}^L, SPEC §5).
//
// (The paper's §2 first writes the bound as P ≤ ε·P′ and then as
// log(P/P′) ≤ ε; ε here is the logarithmic, standard one.) When every
// record is a valid encoding of a Layout, two records differ in
// at most D = 2·(one-hot groups of width ≥ 2) + (binary groups) bits, and
// D·ln((1 − q)/q) is the tight bound (Mechanism.EpsilonEncoded).
//
// Estimation. A reported bit is 1 with probability μ = q + f·(1 − 2q), where
// f is the bit's frequency, so the report mean ȳ over n reports gives
//
//	f̂ = (ȳ − q)/(1 − 2q)   (unbiased: E ȳ = μ).
//
// Its variance depends on what f is the frequency of. If the n records are
// drawn independently from a population with frequency f, each report is
// Ber(μ) and
//
//	Var f̂ = μ(1 − μ) / (n(1 − 2q)²)                       (Estimate.SE²),
//
// estimated by plugging in ȳ for μ; this is the variance the confidence
// interval f̂ ± z·SE uses (normal approximation). If f is the frequency in
// the fixed table itself, only the flips are random; a record's report is
// Ber(q) or Ber(1 − q), both of variance q(1 − q), so exactly
//
//	Var f̂ = q(1 − q) / (n(1 − 2q)²)                       (Estimate.SETable²),
//
// smaller by f(1 − f)/n, the sampling variance of the population version
// (μ(1 − μ) = q(1 − q) + f(1 − f)(1 − 2q)²). For a one-hot group the
// per-category estimates need not form a distribution; Distribution
// projects them onto the probability simplex (Euclidean projection).
//
// Anonymity. For a collection T (a multiset of records) the paper defines
//
//	A_p = min over v ∈ T, s ∈ {0,1}^L of  P[s ∈ R(T∖{v})] / P[R(v) = s],
//	P[s ∈ R(T)] = 1 − Π_{u∈T} (1 − P[R(u) = s]),
//
// the chance that someone else's report equals s, relative to v's chance of
// reporting s. Mechanism.Anonymity computes it exactly for L ≤ MaxExactBits
// in O(L·2^L) time; Mechanism.AnonymityMonteCarlo samples reports for any L.
//
// Randomness is injected: production code passes rng.New(), tests
// rng.NewSeeded(seed).
package bitflip
