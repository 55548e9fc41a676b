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
// # Streaming A′ in two passes (Plan)
//
// Anonymize holds the whole column; Plan computes the same release law in
// two passes over the rows with memory independent of N:
//
//   - pass 1 counts each sensitive column's values (counts c_v) and keeps a
//     reservoir of ℓ′ − 1 uniformly random rows (Algorithm R); N mod ℓ′ of
//     them, chosen uniformly, are dropped and their values uncounted;
//   - the Schedule of each column — the multiset of its decoy groups' value
//     sets — is computed from the counts alone (NewSchedule);
//   - pass 2 gives every kept row of value v one of v's remaining slots,
//     uniformly, without replacement (Dealer: the slot's set type T is drawn
//     with probability n_{v,T}/Σ_T′ n_{v,T′}, v's remaining slots in T over
//     all its remaining slots), and publishes a uniform member of T's set;
//   - the published rows go through a uniform shuffle (package shuffle), so
//     the output order does not depend on the input order.
//
// Claim: the published table (as a sequence of rows) has the same law as
// SPEC §4's algorithm, for either grouping. Proof.
//
//  1. The drop. In §4 the dropped rows are those with the N mod ℓ′ largest
//     ids, a uniformly random subset since the ids are a uniform
//     permutation. The reservoir holds a uniform (ℓ′−1)-subset of the N rows
//     and Reservoir.Drop takes a uniform subset of it, which is a uniform
//     (N mod ℓ′)-subset of the N rows. In both, conditionally on the dropped
//     set D, the kept rows' ids (§4) are a uniform permutation of
//     0..N″−1, N″ = N − |D|.
//  2. The sets. Both groupings form the groups' value sets from the kept
//     counts alone (and, for random, fresh CSPRNG draws): Anatomy's group
//     creation compares bucket sizes and value indexes, never ids, and
//     takes the smallest id of a bucket only to choose which row fills the
//     slot. So the schedule has the same law in both, given D.
//  3. The rows in the slots. In §4 value v's rows fill v's slots in the
//     order of their ids. Given D and the schedule, the ids' relative order
//     within each value's rows is uniform and independent across values (a
//     uniform permutation restricted to disjoint sets), so each value's
//     rows go to its slots by a uniformly random bijection, independently
//     across values. Pass 2 deals v's rows one slot at a time, uniformly
//     among the remaining ones: that too is a uniform bijection, whatever
//     the input order, and independent across values. Drawing the type with
//     probability proportional to v's remaining slots in it is drawing a
//     uniform remaining slot and keeping only its type, which is all that
//     step 3 of §4 reads.
//  4. The published values. In §4 a row publishes the value of a uniformly
//     random member of its group; a group holds one row of each value of
//     its set, so that is a uniform member of the set, independently across
//     rows given the groups — as in pass 2.
//  5. The order. §4 shuffles the published rows uniformly, and so does the
//     shuffle of package shuffle; a uniform shuffle of rows with the same
//     joint law of (non-sensitive values, published values) gives the same
//     law of the sequence, and neither depends on the input order.
//
// Several sensitive columns: each has its own schedule and its own dealing,
// drawn independently (§7.2's independent ids per column), with one common
// drop, as in Anonymize. Randomness: pass 1, the schedules and pass 2 draw
// from one stream in row order, so a seeded run does not depend on how the
// rows are batched.
//
// Memory: the counts (O(V) per column), the reservoir (O(ℓ′)), and per
// column the schedule and the dealer's remaining slots, O(ℓ′) per distinct
// value set (about 0.3 KB at ℓ′ = 5 with the Schedule's SetTypes, 6ℓ′
// bytes for the Dealer of a Plan told DivertOnly, plus 2 bytes a value:
// see Dealer): at most min(C(V, ℓ′), N/ℓ′) of them (C(15, 5) = 3003 for
// Adult's occupation at ℓ′ = 5), and for the random grouping at most
// T + V + ℓ′ + 1 whatever N (T = 2^14 runs, below). A Plan told
// DropCounts before Finish computes the schedules in the counts' memory
// and lets them go.
//
// The in-memory Anonymize, Anatomize and NewPartition stay: the figures
// (scripts/figures) and countquery's Adult tests use them, and they are the
// reference the streaming version is tested against (stream_test.go).
//
// The guarantees per value (Lemma 4's utility threshold, Definition 5's
// privacy probability) are in guarantee.go; the count estimators for a
// published table are in package countquery.
//
// # Randomized decoy groups keep A′'s guarantees
//
// GroupingRandom (anonymize --grouping random) chooses the groups' ℓ′
// values by draws in proportion to the remaining counts, with the values at
// the bound forced (randomSets), instead of Anatomy's ℓ′ largest buckets.
// One draw serves a run of up to k = ⌈G/T⌉ consecutive groups (G groups,
// T = 2^14): k′ = min(k, n, min_{v∈set} cnt(v), n − max_{v∉set} cnt(v))
// of them, n the groups left. Up to T groups (Adult: 6,512 at ℓ′ = 5)
// every run is one group, the per-group draw of issue 12, draw for draw.
// Above, it is that draw coarsened into runs, so that a column has at most
// T + V + ℓ′ + 1 distinct sets — a few MB of schedule and dealer whatever N,
// where one draw per group kept up to min(C(V, ℓ′), G) sets (238 MB for
// anonymize on 4M rows of a 60-value column at ℓ′ = 5).
// Claim: every guarantee of SPEC §4 holds unchanged. Proof.
//
//  1. Diversity. Every group has ℓ′ rows with ℓ′ distinct values, every kept
//     row is in exactly one group, and eligibility (f_v ≤ N/ℓ′) is enough
//     to the last group: randomSets keeps cnt(v) ≤ n with n groups left
//     after every run (the values at n are forced into the set, at most ℓ′
//     of them since Σ cnt = nℓ′, so the draws always find ℓ′ distinct
//     values; a run stops before a value in the set runs out and before a
//     value outside it would exceed the groups left, and k′ ≥ 1 because
//     drawn values have cnt ≥ 1 and values outside the set have
//     cnt ≤ n − 1). A run shorter than k ends the schedule, exhausts a value
//     of the set (at most once per value), or brings a value outside it to
//     the bound, after which it is in every later set (at most ℓ′ values
//     ever are), so there are at most T + V + ℓ′ + 1 ≤ T + 2V + 1 runs
//     (randomSets' comment has the details). The drop of N mod ℓ′ rows is
//     the same as for Anatomy's grouping.
//  2. p = q = 1/ℓ′ and Theorem 1. A row publishes a uniform member of its
//     group's ℓ′ distinct values: its own with probability p = 1/ℓ′, each
//     of the ℓ′ − 1 others with q = 1/ℓ′ (Fact 1: all members of a group
//     have the same output law). Theorem 1 (ℓ′-diverted zero-differential
//     privacy) compares tables that differ by swapping the non-sensitive
//     values of two members of one group. The grouping is drawn from the
//     counts and the CSPRNG, and rows are dealt to slots by their values
//     and the CSPRNG: nothing of it reads the non-sensitive values. So both
//     tables give the same law of the grouping, and given any grouping
//     the published values have the same law (each member independently
//     uniform over the same set); the laws of D′ agree after mixing over
//     the grouping too. The proof of Theorem 1 never looks at which values
//     share a group, only at the ℓ′ distinct values of each — so it holds
//     for runs as for single draws, and for any other grouping drawn
//     without reading the non-sensitive values.
//  3. Theorem 3, Lemma 4 and Definition 5. Given any grouping, value s is
//     in exactly f_s groups (one s row each); their ℓ′ f_s rows publish s
//     independently with probability 1/ℓ′ and no other row can, so
//     f′_s ~ Binomial(ℓ′ f_s, 1/ℓ′): E f′_s = f_s (Theorem 3), Var f′_s =
//     f_s(ℓ′ − 1)/ℓ′ (Inequality 3, hence Lemma 4's T_f), and Definition
//     5's T_P is computed from that law (guarantee.go). The law depends on
//     f_s and ℓ′ only, not on which values share s's groups, so it holds
//     for each grouping and for the mixture over random ones, runs or not. (The joint law
//     of the f′_s across values does depend on the grouping; no guarantee
//     uses it.)
//  4. What changes is the law of (true, published) for a row without s:
//     a row of value v publishes s with probability a01(v→s) =
//     E[C_vs]/(ℓ′ f_v), C_vs the groups holding both. Its average over the
//     rows without s is f_s(ℓ′−1)/(ℓ′(N−f_s)) for every grouping (Fact 1 of
//     package countquery: each s row has ℓ′ − 1 partners, so
//     Σ_{v≠s} C_vs = f_s(ℓ′ − 1) in every release, runs or not), and that
//     exact average is all the estimator uses, so it is unchanged; with
//     random groups a01(v→s) is close to that average for every v, with
//     Anatomy's it is not — which is why the count estimator is more
//     accurate on randomly grouped releases (package countquery, "The decoy
//     probability a01"). Nothing about the groups is published in either
//     case.
//  5. What the runs cost (above T groups only). Measured on a 60-value
//     column of 40,000 groups at ℓ′ = 5 with runs of k = 50, as 4M rows
//     have (TestRandomRunsDecoyProbability): E[C_vs] is the per-group
//     draw's — a01(v→s)/ā01(s) in [0.944, 1.030] against [0.963, 1.024],
//     the differences within sampling noise (mean z² 1.04) — because a run
//     of k groups draws its set from counts that k groups hardly change.
//     What grows is the variability of C_vs from one release to the next:
//     a schedule of T runs varies like one of T groups, so C_vs's
//     coefficient of variation is √k times the per-group draw's (0.53
//     against 0.074 there), and stops shrinking as 1/√G above T groups.
//     That is a per-release deviation of a01(v→s) from its mean, as with a
//     table of T groups; their row-weighted average is still exactly the
//     ā01(s) the estimator uses, in every release.
package anonymize
