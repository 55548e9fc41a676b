// Package ddps is Distributed Differential Privacy by Sampling, the
// two-round mechanism for a categorical value with V categories
// (J. Joy, "Distributed Differential Privacy By Sampling", §6.3 Eq. 36–41,
// §7.1 Eq. 42–45; SPEC §5).
//
// Outputs are ⊥0 (not participating) and ⊥1, …, ⊥V (the categories),
// numbered 0..V. The parameters are the sampling mass π_s and the noise
// masses π_⊥ = (π_⊥0, …, π_⊥V), with
//
//	π_s > 0,   π_⊥o ≥ 0,   π_⊥0 + π_⊥1 + … + π_⊥V + π_s = 1
//
// (the last case of Eq. 36 gives ⊥V the remaining mass; its formula also
// subtracts π_⊥V, a slip for 1 − π_⊥0 − … − π_⊥(V−1) − π_s, so the π_⊥ and
// π_s exhaust the distribution). By default π_⊥o = (1 − π_s)/(V + 1).
// Category j of a codebook (0-based) is true value and output j + 1.
//
// Every data owner with true value v sends two reports, drawn independently:
//
//	round one (Eq. 36):  P[⊥o] = π_⊥o + π_s·[o = 0]    (ignores v)
//	round two (Eq. 37):  P[⊥o] = π_⊥o + π_s·[o = v]
//
// A non-participant (v = 0, "No", Eq. 38) thus reports the same way in both
// rounds. Each round is one draw from the V + 2 masses (π_⊥0, …, π_⊥V, π_s),
// the π_s outcome standing for ⊥0 in round one and for ⊥v in round two; a
// draw is one 64-bit random word and a binary search of a cumulative table,
// O(log V) (strided past 4,096 outcomes: O(1) memory per 16 values).
//
// The rounds are independent on purpose. The paper's "error cancellation"
// could suggest reusing one draw for both rounds, but then a pair
// (⊥0, ⊥v) with v ≠ 0 would occur only for an owner whose value is v, so a
// released row holding both reports would reveal it.
//
// Privacy (Eq. 42–44, with the logarithm that Eq. 45 drops). Round one does
// not depend on v, so only round two matters: for values a ≠ b in the
// domain D of true values and an output o, P[⊥o | a]/P[⊥o | b] is
// (π_⊥o + π_s)/π_⊥o when o = a, its inverse when o = b, and 1 otherwise, so
//
//	ε = max_{o ∈ D} ln((π_⊥o + π_s)/π_⊥o),
//
// with D = {1, …, V}, plus 0 when non-participants are allowed (their "No"
// output ⊥0 plays the role of ⊥3 in Eq. 42). ε = 0 when D has one value.
//
// Estimation. With N owners, n_o of them with value o, the expected counts
// are (Eq. 39–40)
//
//	E C1[o] = N·π_⊥o + N·π_s·[o = 0],   E C2[o] = N·π_⊥o + n_o·π_s,
//
// and the paper's estimator (Eq. 41), with N·[o = 0] added for the
// non-participant count, is
//
//	n̂_o = (C2[o] − C1[o])/π_s + N·[o = 0].
//
// C1[o] is Binomial(N, c_o), c_o = π_⊥o + π_s·[o = 0]; C2[o] is the sum of
// Binomial(n_o, a_o) and Binomial(N − n_o, b_o), a_o = π_⊥o + π_s,
// b_o = π_⊥o, the two Bernoulli populations of Lemma 6.2; the rounds are
// independent, so
//
//	Var n̂_o = [N·c_o(1 − c_o) + n_o·a_o(1 − a_o) + (N − n_o)·b_o(1 − b_o)] / π_s².
//
// The stated standard deviation plugs in n̂_o clamped to [0, N]; the
// variance is linear in n_o, so the plug-in variance is unbiased when no
// clamping occurs. The number of participants is P̂ = N − n̂_0 =
// (C1[0] − C2[0])/π_s = Σ_{v≥1} n̂_v, with the variance of n̂_0.
//
// N is known (every owner sends a report, §5.5: "the total number of data
// owners DO can be computed by summing the total number of … responses"),
// so E C1[o] is known exactly and round two alone also gives an unbiased
// estimator,
//
//	ñ_o = (C2[o] − N·π_⊥o)/π_s,
//	Var ñ_o = [n_o·a_o(1 − a_o) + (N − n_o)·b_o(1 − b_o)] / π_s²,
//
// smaller than Var n̂_o by N·c_o(1 − c_o)/π_s² (EstimateRoundTwo). Round
// one's counts then serve as a check: they must fit the known distribution
// (π_⊥o + π_s·[o = 0]) whatever the data.
package ddps
