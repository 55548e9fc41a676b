package estimate

import (
	"testing"

	"github.com/pramkit/pramkit/pkg/rng"
)

// sparseBenchCounts: 10 000 observed cells of K = 2^40 (a sparse release).
func sparseBenchCounts(b *testing.B) Counts {
	return randomCounts(b, rng.NewSeeded(90), 1<<40, 10_000)
}

func BenchmarkInverseSparse10k(b *testing.B) {
	c := sparseBenchCounts(b)
	for b.Loop() {
		_, _ = Inverse(c, 1e6)
	}
}

func BenchmarkProjectedSparse10k(b *testing.B) {
	c := sparseBenchCounts(b)
	for b.Loop() {
		_, _ = Projected(c, 1e6)
	}
}

func BenchmarkMLEIterationSparse10k(b *testing.B) {
	c := sparseBenchCounts(b)
	var iters int
	for b.Loop() {
		res, _ := MLE(c, 1e6, EMOptions{MaxIter: 100, Tol: 1e-300})
		iters += res.Iterations
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(iters), "ns/iteration")
}

func BenchmarkMLEAdultLike(b *testing.B) {
	// K = 32, m = 2057, γ = 28.2 (Adult education × income at ε = 1, m*).
	pop := syntheticPopulation(b, rng.NewSeeded(91), []uint32{16, 2}, skewed(32), 32561)
	mech := mustMechanism(b, 28.2, pop.domain)
	c := newReleaser(pop).release(b, rng.NewSeeded(92), 2057, mech)
	var iters int
	for b.Loop() {
		res, _ := MLE(c, 28.2, EMOptions{})
		iters = res.Iterations
	}
	b.ReportMetric(float64(iters), "iterations")
}

func BenchmarkCounterAdd(b *testing.B) {
	cnt, _ := NewCounter(1 << 40)
	r := rng.NewSeeded(93)
	g := make([]uint64, 4096)
	for i := range g {
		g[i] = r.Uint64N(5000)
	}
	i := 0
	for b.Loop() {
		_ = cnt.Add(g[i&4095])
		i++
	}
}
