package anonymize

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/pramkit/pramkit/pkg/rng"
)

// skewedShares is a skewed distribution over V = 15 values whose largest
// share (0.10) keeps the column eligible up to ℓ′ = 10.
var skewedShares = []float64{0.10, 0.10, 0.10, 0.10, 0.09, 0.08, 0.08, 0.07, 0.06, 0.05, 0.05, 0.04, 0.03, 0.03, 0.02}

func skewedColumn(n int) []uint32 {
	s := make([]uint32, 0, n)
	for x, share := range skewedShares {
		for range int(share * float64(n)) {
			s = append(s, uint32(x))
		}
	}
	for len(s) < n {
		s = append(s, uint32(len(skewedShares)-1))
	}
	r := rng.NewSeeded(99)
	r.Shuffle(n, func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s
}

// benchBytesPerRow runs f b.N times and reports, per table row, the bytes
// allocated, the wall time and the process CPU time (GC included).
func benchBytesPerRow(b *testing.B, n int, f func()) {
	b.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := processCPU()
	b.ResetTimer()
	for b.Loop() {
		f()
	}
	b.StopTimer()
	cpu := processCPU() - cpu0
	runtime.ReadMemStats(&after)
	rows := float64(b.N) * float64(n)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/rows, "B/row")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/rows, "ns/row")
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/rows, "cpu-ns/row")
	}
}

// Partition + A′ on 500k rows, V = 15 skewed, ℓ′ ∈ {2, 5, 10} (paper §9.6:
// under 10 s in C++ on a 3.1 GHz i3).
func BenchmarkAnonymize500k(b *testing.B) {
	const n = 500_000
	s := skewedColumn(n)
	for _, l := range []int{2, 5, 10} {
		b.Run(fmt.Sprintf("l=%d", l), func(b *testing.B) {
			r := rng.NewSeeded(1)
			benchBytesPerRow(b, n, func() {
				if _, err := Anonymize([]Column{{Values: s, V: 15}}, l, r); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// The group creation alone, ids given (V = 50 as in the paper's census data
// is the costlier case for the O(N·V/ℓ′) merge).
func BenchmarkNewPartition500k(b *testing.B) {
	const n = 500_000
	r := rng.NewSeeded(2)
	for _, v := range []int{15, 50} {
		s := make([]uint32, n)
		if v == 15 {
			s = skewedColumn(n)
		} else {
			for i := range s {
				s[i] = uint32(r.IntN(v))
			}
		}
		ids, _ := AssignIDs(n, r)
		for _, l := range []int{2, 5, 10} {
			b.Run(fmt.Sprintf("V=%d/l=%d", v, l), func(b *testing.B) {
				benchBytesPerRow(b, n, func() {
					if _, err := NewPartition(ids, s, v, l); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}

func BenchmarkRandomize500k(b *testing.B) {
	const n = 500_000
	s := skewedColumn(n)
	r := rng.NewSeeded(3)
	benchBytesPerRow(b, n, func() {
		if _, err := Randomize(s, 15, 0.2, r); err != nil {
			b.Fatal(err)
		}
	})
}
