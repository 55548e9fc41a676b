package estimate

import (
	"math"
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

func BenchmarkMLESparse10k(b *testing.B) {
	c := sparseBenchCounts(b)
	for b.Loop() {
		_, _ = MLE(c, 1e6, EMOptions{})
	}
}

func BenchmarkMLEIterationSparse10k(b *testing.B) {
	c := sparseBenchCounts(b)
	var iters int
	for b.Loop() {
		res, _ := MLE(c, 1e6, EMOptions{Iterative: true, MaxIter: 100, Tol: 1e-300})
		iters += res.Iterations
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(iters), "ns/iteration")
}

// benchmarkMLE reports, besides the time, EM's iterations and how far
// its ℓ ends below the closed form's (0 for the closed form itself).
func benchmarkMLE(b *testing.B, c Counts, gamma float64) {
	exact, err := MLE(c, gamma, EMOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		opts EMOptions
	}{{"closed-form", EMOptions{}}, {"EM", EMOptions{Iterative: true}}} {
		b.Run(bc.name, func(b *testing.B) {
			var res EMResult
			for b.Loop() {
				res, _ = MLE(c, gamma, bc.opts)
			}
			b.ReportMetric(float64(res.Iterations), "iterations")
			b.ReportMetric(exact.LogLikelihood[0]-res.LogLikelihood[res.Iterations], "loglik-gap")
		})
	}
}

func BenchmarkMLEAdultLike(b *testing.B) {
	// K = 32, m = 2057, γ = 28.2 (Adult education × income at ε = 1, m*).
	pop := syntheticPopulation(b, rng.NewSeeded(91), []uint32{16, 2}, skewed(32), 32561)
	mech := mustMechanism(b, 28.2, pop.domain)
	benchmarkMLE(b, newReleaser(pop).release(b, rng.NewSeeded(92), 2057, mech), 28.2)
}

func BenchmarkMLEHeavyNoise(b *testing.B) {
	// K = 1000, m = n = 10⁶, γ = e (ε = 1 without sampling).
	benchmarkMLE(b, heavyNoiseCounts(b, 100, 1_000_000, math.E), math.E)
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
