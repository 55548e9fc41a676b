package adultquery

import (
	"testing"

	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/rng"
)

func TestPredicatesMatchExactlyTheirRowsAndStatesPartitionTheTable(t *testing.T) {
	r := rng.NewSeeded(4)
	tab := &Table{N: 500, V: 3, S: make([]uint32, 500), NSA: [][]uint32{make([]uint32, 500), make([]uint32, 500), make([]uint32, 500)}}
	for i := range tab.N {
		tab.S[i] = uint32(r.IntN(3))
		for a := range tab.NSA {
			tab.NSA[a][i] = uint32(r.IntN(4))
		}
	}
	preds := RandomPredicates(tab, 20, r)
	for _, p := range preds {
		want := 0
		for row := range tab.N {
			match := true
			for i, a := range p.Attrs {
				match = match && tab.NSA[a][row] == p.Values[i]
			}
			if match {
				want++
			}
		}
		if len(p.Rows) != want || want == 0 {
			t.Fatalf("predicate %v matches %d rows, lists %d", p, want, len(p.Rows))
		}
	}
	pub := append([]uint32(nil), tab.S...)
	pub[0] = anonymize.NotPublished
	for _, q := range Observe(tab, preds, pub, 0, float64(tab.N)) {
		if sum := q.Y[0] + q.Y[1] + q.Y[2] + q.Y[3]; sum != float64(tab.N-1) {
			t.Fatalf("states of %+v sum to %v, want %d published rows", q, sum, tab.N-1)
		}
		if q.Y[3] != q.Truth { // published = true values here
			t.Fatalf("query %+v: y3 %v differs from the truth", q, q.Y[3])
		}
	}
}
