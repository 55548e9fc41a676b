// Package adultquery is the count-query workload of the anonymize
// experiments (Fu et al. §9.1), shared by pkg/countquery's Adult tests and
// scripts/figures so both draw the same query pool from the same seed:
// random conjunctions of 1–3 equality conditions on non-sensitive
// attributes, each combined with every value of the sensitive attribute.
package adultquery

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/pramkit/pramkit/pkg/anonymize"
)

// Table is a data set encoded as value indexes: the sensitive column S
// with V values, and the non-sensitive attributes NSA[attribute][row].
type Table struct {
	N   int
	S   []uint32
	V   int
	NSA [][]uint32
}

// Predicate is a conjunction of equality conditions (attribute Attrs[i]
// has value Values[i]) with the rows of the table that satisfy it.
type Predicate struct {
	Attrs  []int
	Values []uint32
	Rows   []uint32
}

// RandomPredicates draws count distinct conjunctions of 1–3 conditions on
// distinct attributes, the values taken from a uniformly random row so
// that each matches at least one row (the paper's query pool, §9.1).
func RandomPredicates(t *Table, count int, r *rand.Rand) []Predicate {
	seen := map[string]bool{}
	var out []Predicate
	for len(out) < count {
		d := 1 + r.IntN(3)
		attrs := r.Perm(len(t.NSA))[:d]
		slices.Sort(attrs)
		row := r.IntN(t.N)
		p := Predicate{Attrs: attrs}
		var key strings.Builder
		for _, a := range attrs {
			p.Values = append(p.Values, t.NSA[a][row])
			fmt.Fprintf(&key, "%d=%d;", a, t.NSA[a][row])
		}
		if seen[key.String()] {
			continue
		}
		seen[key.String()] = true
	rows:
		for row := range t.N {
			for i, a := range p.Attrs {
				if t.NSA[a][row] != p.Values[i] {
					continue rows
				}
			}
			p.Rows = append(p.Rows, uint32(row))
		}
		out = append(out, p)
	}
	return out
}

// Query is one (P, s) count: its true value over the published rows and
// the four state counts y of Figure 3 (P̄s̄, P̄s, Ps̄, Ps) in the published
// table.
type Query struct {
	Pred  int
	S     uint32
	Truth float64
	Y     [4]float64
}

// Observe returns the queries (every predicate with every value s) whose
// true count over the published rows lies in [lo, hi], for a column
// published as pub (anonymize.NotPublished for dropped rows); the truth is
// counted from t.S over the same rows. This is the one pass over D′ a
// caller makes: y needs the counts of s among the P rows and in all of D′.
func Observe(t *Table, preds []Predicate, pub []uint32, lo, hi float64) []Query {
	fPrime := make([]float64, t.V)
	var n float64
	for _, x := range pub {
		if x != anonymize.NotPublished {
			fPrime[x]++
			n++
		}
	}
	var out []Query
	truth := make([]float64, t.V)
	pubP := make([]float64, t.V)
	for pi, p := range preds {
		clear(truth)
		clear(pubP)
		var nP float64
		for _, row := range p.Rows {
			if pub[row] == anonymize.NotPublished {
				continue
			}
			nP++
			truth[t.S[row]]++
			pubP[pub[row]]++
		}
		for s := range t.V {
			if truth[s] < lo || truth[s] > hi {
				continue
			}
			y3 := pubP[s]
			out = append(out, Query{Pred: pi, S: uint32(s), Truth: truth[s],
				Y: [4]float64{n - nP - (fPrime[s] - y3), fPrime[s] - y3, nP - y3, y3}})
		}
	}
	return out
}
