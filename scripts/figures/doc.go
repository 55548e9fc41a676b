// Command figures recomputes the papers' experiments on UCI Adult with the
// pramkit libraries and draws them (SPEC §6 claims, §7 "plots of the
// reproduced figures"). `make figures` runs it; it writes, into -out
// (default out/figures), the CSV of its numbers for each figure and an SVG
// and a PNG drawn from that CSV alone (draw.go, with the report's chart
// code, pkg/report/chart), so -replot redraws them without measuring and
// the README's committed SVGs (docs/figures) can be checked against their
// committed CSVs:
//
//   - error_vs_m: Lin–Wang–Rane's sampling/PRAM trade-off at ε = 1. Mean ℓ2
//     error of the education × income joint estimate (K = 32) against the
//     sample size m, from m*/8 to n, for the inverse, projected and MLE
//     estimators, with the Theorem III.4 bound and m* marked. Each release
//     is the real pipeline: coordinated bottom-m sampling (package sample,
//     AES PRF of the row position under a fresh secret), γ-diagonal PRAM of
//     the joint rows (package pram, γ = 1 + (n/m)(e^ε − 1), Theorem III.2)
//     and estimation (package estimate). The one-time pads are left out:
//     they cancel exactly (Lemma III.1, tested in package pram).
//   - error_vs_epsilon: the same at m = m*(ε) for ε ∈ {0.25, 0.5, 1, 2, 4},
//     with PRAM alone (m = n) at the same ε for comparison.
//   - anonymize_error_vs_l: Fu et al.'s mechanism A′ (occupation sensitive)
//     against Anatomy (ℓ = ℓ′) and global randomization (retention 1/ℓ′),
//     ℓ′ = 2…7: mean relative error of count queries with selectivity 2–5 %
//     (utility) and with true count 1–10 (small-count privacy), over a pool
//     of random predicates combined with every occupation (paper §9.1–9.4,
//     Figures 4, 5, 8–10).
//
// Every random draw comes from a ChaCha8 stream keyed by -seed and the name
// of the figure, point and release (stream.go), so a run is reproducible
// and does not depend on how the releases are spread over the workers. -quick shrinks the grids for a smoke
// run. The plotting library (gonum.org/v1/plot) is linked here and into
// report only, never into the other tools.
package main
