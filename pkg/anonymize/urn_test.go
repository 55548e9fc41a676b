package anonymize

import (
	"testing"

	"github.com/pramkit/pramkit/pkg/rng"
)

// TestUrnModes: the flat urn and the segment tree answer every operation
// alike (total, weights, largest with its tie rule, find at random ranks) through a
// random sequence of updates, so randomSets draws the same schedule from
// the same seed whichever mode its V selects.
func TestUrnModes(t *testing.T) {
	r := rng.NewSeeded(7)
	for _, n := range []int{1, 2, 3, 15, 16, 17, 64, 65, 100, 129, 1000} {
		w := make([]int64, n)
		for i := range w {
			w[i] = r.Int64N(6) // small weights: many ties and zeros
		}
		flat, tree := newUrnMode(w, true, false), newUrnMode(w, false, false)
		for step := range 2000 {
			if ft, tt := flat.total(), tree.total(); ft != tt {
				t.Fatalf("n=%d step %d: total %d (flat) vs %d (tree)", n, step, ft, tt)
			}
			fi, fm := flat.largest()
			ti, tm := tree.largest()
			if fi != ti || fm != tm {
				t.Fatalf("n=%d step %d: largest %d at %d (flat) vs %d at %d (tree)", n, step, fm, fi, tm, ti)
			}
			if tot := flat.total(); tot > 0 {
				for range 4 {
					x := r.Int64N(tot)
					if f, g := flat.find(x), tree.find(x); f != g {
						t.Fatalf("n=%d step %d: find(%d) = %d (flat) vs %d (tree)", n, step, x, f, g)
					}
				}
			}
			i, x := r.IntN(n), r.Int64N(6)
			if fw, tw := flat.weight(i), tree.weight(i); fw != tw {
				t.Fatalf("n=%d step %d: weight(%d) = %d (flat) vs %d (tree)", n, step, i, fw, tw)
			}
			flat.set(i, x)
			tree.set(i, x)
		}
	}
}

// BenchmarkRandomSchedule10M: the random grouping's schedule of a 10M-row
// column with V = 15 at ℓ′ = 5, the serial step between anonymize's passes.
func BenchmarkRandomSchedule10M(b *testing.B) {
	const n = 10_000_000
	counts := make([]int64, len(skewedShares))
	var sum int64
	for v, s := range skewedShares {
		counts[v] = int64(s * n)
		sum += counts[v]
	}
	counts[len(counts)-1] += n - sum
	counts[len(counts)-1] -= n % 5
	r := rng.NewSeeded(1)
	for b.Loop() {
		if _, err := NewSchedule(counts, 5, GroupingRandom, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnatomySchedule85kValues: Anatomy's schedule for 4M rows over
// 85,000 values of 1–93 rows each, where nearly every run is one group
// (the case where merging all V buckets per run took minutes).
func BenchmarkAnatomySchedule85kValues(b *testing.B) {
	const v = 85_000
	r := rng.NewSeeded(1)
	counts := make([]int64, v)
	var n int64
	for i := range counts {
		counts[i] = 1 + int64(r.IntN(93))
		n += counts[i]
	}
	counts[0] -= n % 5
	for b.Loop() {
		if _, err := NewSchedule(counts, 5, GroupingAnatomy, nil); err != nil {
			b.Fatal(err)
		}
	}
}
