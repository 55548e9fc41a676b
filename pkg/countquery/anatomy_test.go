package countquery

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/release"
)

// synthAnatomy is a random Anatomy release: rows (a, b, group) and the
// sensitive table (group, s, count) of groups of ℓ′ distinct values with
// counts 1–3, in no particular order of groups.
func synthAnatomy(t *testing.T, seed uint64, l, v, groups int) (rel *Release, rows []string, table string) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, uint64(v)))
	labels := make([]string, v)
	for i := range labels {
		labels[i] = fmt.Sprintf("s%d", i)
	}
	s, err := codebook.NewColumn(codebook.Spec{Name: "s", Categories: labels})
	if err != nil {
		t.Fatal(err)
	}
	var gt strings.Builder
	gt.WriteString("group,s,count\n")
	for _, g := range r.Perm(groups) {
		seen := map[int]bool{}
		for len(seen) < min(l, v) {
			if x := min(r.IntN(v), r.IntN(v)); !seen[x] {
				seen[x] = true
				fmt.Fprintf(&gt, "%d,%s,%d\n", g, labels[x], 1+r.IntN(3))
			}
		}
	}
	n := groups * l
	for range n {
		rows = append(rows, fmt.Sprintf("a%d,b%d,%d", min(r.IntN(4), r.IntN(4)), r.IntN(3), r.IntN(groups)))
	}
	rel = &Release{Name: "rows.csv", Mechanism: release.MechanismAnatomy, L: l, Rows: int64(n),
		Sensitive: []string{"s"}, Columns: []*codebook.Column{&s}, GroupColumn: "group", Groups: groups}
	return rel, rows, gt.String()
}

// anatomyQueries are queries of every kind on synthAnatomy's release:
// P and a value, a value alone, P alone.
func anatomyQueries(v int) []Query {
	var texts []string
	for s := range v {
		texts = append(texts, fmt.Sprintf("s=s%d", s), fmt.Sprintf("a=a%d,s=s%d", s%4, s), fmt.Sprintf("a=a%d,b=b%d,s=s%d", s%4, s%3, s))
	}
	texts = append(texts, "a=a1", "b=b2,a=a0")
	qs := make([]Query, len(texts))
	for i, q := range texts {
		conds, err := Parse(q)
		if err != nil {
			panic(err)
		}
		qs[i] = Query{Text: q, Conds: conds}
	}
	return qs
}

// TestAnatomyHeldAndStreamedSumsAreEqual: a plan's integer sums
// Σ m_g·c_g(s) by group size, and so its answers bit for bit, are the
// same with the sensitive table held or streamed (m_g as uint32, or int64
// without N; and as the memory rule chooses), over the rows in one part or
// in three (rows, a count table of estimate --tabulate, rows), for several
// ℓ′ and V.
func TestAnatomyHeldAndStreamedSumsAreEqual(t *testing.T) {
	for _, tc := range []struct{ l, v, groups int }{
		{2, 5, 40},
		{3, 60, 200},
		{5, 300, 500},
	} {
		t.Run(fmt.Sprintf("l=%d/V=%d", tc.l, tc.v), func(t *testing.T) {
			rel, rows, groups := synthAnatomy(t, uint64(tc.l), tc.l, tc.v, tc.groups)
			qs := anatomyQueries(tc.v)
			head := "a,b,group\n"
			whole := head + strings.Join(rows, "\n") + "\n"
			third := len(rows) / 3
			parts := []struct{ text, count string }{
				{head + strings.Join(rows[:third], "\n") + "\n", ""},
				{tabulate(head + strings.Join(rows[third:2*third], "\n") + "\n"), "count"},
				{head + strings.Join(rows[2*third:], "\n") + "\n", ""},
			}
			type result struct {
				sums    [][]int64
				answers []float64
			}
			run := func(way int, split bool, rel *Release) result {
				in := csvReader(t, whole)
				passes := 0
				p, err := anatomyPlan(t, rel, in, qs, way, groups, &passes)
				if err != nil {
					t.Fatal(err)
				}
				if p.anat.streamed != (way == anatomyStreamed) && way != anatomyAuto {
					t.Fatalf("way %d: streamed is %v", way, p.anat.streamed)
				}
				if split {
					for _, part := range parts {
						if _, err := p.ScanPart(csvReader(t, part.text), part.count, nil); err != nil {
							t.Fatal(err)
						}
					}
					err = p.EndScan()
				} else {
					err = p.ScanRelease(in, nil)
				}
				if err != nil {
					t.Fatal(err)
				}
				var res result
				for _, g := range p.groups {
					res.sums = append(res.sums, g.anatSum)
				}
				answers, err := p.Answers(Options{})
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range answers {
					res.answers = append(res.answers, a.Estimate)
				}
				return res
			}
			want := run(anatomyHeld, false, rel)
			nonzero := 0
			for _, s := range want.sums {
				for _, x := range s {
					if x != 0 {
						nonzero++
					}
				}
			}
			if nonzero == 0 {
				t.Fatal("no sum is nonzero: the test compares nothing")
			}
			// Without N (a Release of Rows 0), streamed keeps m_g as int64.
			noN := *rel
			noN.Rows = 0
			for _, way := range []int{anatomyHeld, anatomyStreamed, anatomyAuto} {
				for _, split := range []bool{false, true} {
					for _, r := range []*Release{rel, &noN} {
						got := run(way, split, r)
						if !slices.EqualFunc(got.sums, want.sums, slices.Equal) {
							t.Errorf("way %d, parts %v, N %d: the integer sums differ from held's", way, split, r.Rows)
						}
						if !slices.EqualFunc(got.answers, want.answers, func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }) {
							t.Errorf("way %d, parts %v, N %d: the answers differ from held's", way, split, r.Rows)
						}
					}
				}
			}
		})
	}
}

// TestReadAnatomyGroupsChoosesTheSmallerWay: the table is streamed when
// G·Q counts m_g (4 bytes each below 2^32 rows) take no more than its E
// entries held (8 bytes each, and 4 a group), and held otherwise.
func TestReadAnatomyGroupsChoosesTheSmallerWay(t *testing.T) {
	rel, rows, groups := synthAnatomy(t, 7, 3, 40, 100) // E = 300 entries, G = 100: 2,800 bytes held
	preds := []string{"", "a=a0,", "a=a1,", "a=a2,", "a=a3,", "b=b0,", "b=b1,", "b=b2,"}
	for _, tc := range []struct {
		queries  []string
		streamed bool
	}{
		{[]string{"s=s1"}, true},                               // Q = 1: 400 bytes
		{[]string{"a=a1", "s=s3", "s=s4"}, true},               // one query group names s
		{withPreds(preds[:7], "s=s1"), true},                   // Q = 7: 2,800 bytes, no less held
		{withPreds(preds, "s=s1"), false},                      // Q = 8: 3,200 bytes
		{append(withPreds(preds, "s=s1"), "a=a0,s=s5"), false}, // a query group per P
	} {
		var qs []Query
		for _, q := range tc.queries {
			conds, _ := Parse(q)
			qs = append(qs, Query{Text: q, Conds: conds})
		}
		in := csvReader(t, "a,b,group\n"+strings.Join(rows, "\n")+"\n")
		passes := 0
		p, err := anatomyPlan(t, rel, in, qs, anatomyAuto, groups, &passes)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.anat.streamed; got != tc.streamed {
			t.Errorf("%v: streamed %v, want %v", tc.queries, got, tc.streamed)
		}
	}
}

// withPreds is query q after each predicate of preds.
func withPreds(preds []string, q string) []string {
	out := make([]string, len(preds))
	for i, p := range preds {
		out[i] = p + q
	}
	return out
}
