package countquery

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/release"
)

// valueQueries are the queries "col=s" of every value of rel's sensitive
// columns, in column then codebook order.
func valueQueries(rel *Release) []Query {
	var qs []Query
	for k, name := range rel.Sensitive {
		for i := range rel.Columns[k].K() {
			lab := rel.Columns[k].Label(i)
			qs = append(qs, Query{Text: name + "=" + lab, Conds: []Cond{{Col: name, Value: lab}}})
		}
	}
	return qs
}

// TestValuesAreThePlansAnswers: the count of every sensitive value that
// Values computes from its table of V counts is, bit for bit, what a Plan
// of the V queries "col=s" answers (with estimate's default options), and
// so are the true counts, on random tables of every mechanism, several ℓ′
// and V up to past 2^16 (where the plan's groups change size), with rows
// anonymize dropped (--missing drop) left out of the truth; and the
// release's count table gives the same estimates as its rows.
func TestValuesAreThePlansAnswers(t *testing.T) {
	for _, tc := range []struct {
		mech string
		l, v int
		drop bool
	}{
		{release.MechanismDiverted, 2, 5, false},
		{release.MechanismDiverted, 5, 300, true},
		{release.MechanismDiverted, 3, 70000, false},
		{release.MechanismGlobal, 4, 7, true},
		{release.MechanismGlobal, 5, 3000, false},
		{release.MechanismAnatomy, 2, 6, false},
		{release.MechanismAnatomy, 5, 400, true},
		{release.MechanismAnatomy, 3, 70000, false},
	} {
		t.Run(fmt.Sprintf("%s/l=%d/V=%d", tc.mech, tc.l, tc.v), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.l), uint64(tc.v)))
			labels := make([]string, tc.v)
			for i := range labels {
				labels[i] = fmt.Sprintf("s%d", i)
			}
			s, err := codebook.NewColumn(codebook.Spec{Name: "s", Categories: labels, Missing: "?"})
			if err != nil {
				t.Fatal(err)
			}
			u, err := codebook.NewColumn(codebook.Spec{Name: "u", Categories: []string{"u0", "u1", "u2"}})
			if err != nil {
				t.Fatal(err)
			}
			rel := &Release{Name: "pub.csv", Mechanism: tc.mech, L: tc.l, Sensitive: []string{"s", "u"}, Columns: []*codebook.Column{&s, &u}}
			if tc.drop {
				rel.Policy = codebook.Policy{Missing: codebook.MissingDrop}
			}
			// Values skewed toward the small indexes, so counts differ.
			value := func() int { return min(r.IntN(tc.v), r.IntN(tc.v), r.IntN(tc.v)) }
			n := 3*tc.v + 50
			var pub, truth, groups strings.Builder
			switch tc.mech {
			case release.MechanismAnatomy:
				rel.Sensitive, rel.Columns = rel.Sensitive[:1], rel.Columns[:1]
				rel.GroupColumn, rel.Groups = "group", n/tc.l
				// Groups of ℓ′ distinct values with counts 1–2 (sizes
				// ℓ′ … 2ℓ′), and rows per group m_g not always n_g.
				groups.WriteString("group,s,count\n")
				for g := range rel.Groups {
					seen := map[int]bool{}
					for len(seen) < min(tc.l, tc.v) {
						x := value()
						if seen[x] {
							continue
						}
						seen[x] = true
						fmt.Fprintf(&groups, "%d,%s,%d\n", g, labels[x], 1+r.IntN(2))
					}
				}
				pub.WriteString("a,group\n")
				for range n {
					fmt.Fprintf(&pub, "x,%d\n", r.IntN(rel.Groups))
				}
			default:
				pub.WriteString("a,s,u\n")
				for range n {
					fmt.Fprintf(&pub, "x,%s,u%d\n", s.Label(value()), r.IntN(3))
				}
				if tc.mech == release.MechanismGlobal {
					rel.Keep = []float64{1 / float64(tc.l), 0.7}
				}
			}
			rel.Rows = int64(n)
			truth.WriteString("a,s,u\n")
			for i := range n + 7 {
				raw := labels[value()]
				if i%11 == 0 {
					raw = "?" // missing: a category, or dropped under --missing drop
				}
				fmt.Fprintf(&truth, "x,%s,u%d\n", raw, r.IntN(3))
			}

			qs := valueQueries(rel)
			in := csvReader(t, pub.String())
			p, err := NewPlanFor(rel, in.Schema(), nil, qs, "", DefaultOptions(true))
			if err != nil {
				t.Fatal(err)
			}
			anatomy := tc.mech == release.MechanismAnatomy
			passes := 0
			if anatomy {
				if err := p.ReadAnatomyGroups(groupsOpener(t, groups.String(), &passes)); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.ScanRelease(in, nil); err != nil {
				t.Fatal(err)
			}
			if err := p.ScanTruth(csvReader(t, truth.String()), nil); err != nil {
				t.Fatal(err)
			}
			answers, err := p.Answers(DefaultOptions(true))
			if err != nil {
				t.Fatal(err)
			}

			vs, err := NewValues(rel)
			if err != nil {
				t.Fatal(err)
			}
			if err := vs.ScanRelease(csvReader(t, pub.String()), ""); err != nil {
				t.Fatal(err)
			}
			if anatomy {
				if err := vs.ScanAnatomyGroups(groupsOpener(t, groups.String(), &passes)); err != nil {
					t.Fatal(err)
				}
			}
			// The release's count table (estimate --tabulate) gives the same.
			counted, err := NewValues(rel)
			if err != nil {
				t.Fatal(err)
			}
			if err := counted.ScanRelease(csvReader(t, tabulate(pub.String())), "count"); err != nil {
				t.Fatal(err)
			}
			if anatomy {
				if err := counted.ScanAnatomyGroups(groupsOpener(t, groups.String(), &passes)); err != nil {
					t.Fatal(err)
				}
			}
			if err := vs.ScanTruth(csvReader(t, truth.String())); err != nil {
				t.Fatal(err)
			}
			i, bad := 0, 0
			for k := range rel.Sensitive {
				est, err := vs.Estimates(k)
				if err != nil {
					t.Fatal(err)
				}
				fromCounts, err := counted.Estimates(k)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(est, fromCounts) {
					t.Errorf("%s: the count table's estimates differ from the rows'", rel.Sensitive[k])
				}
				tr := vs.Truth(k)
				for s := range est {
					a := answers[i]
					if est[s] != a.Estimate || float64(tr[s]) != a.Truth {
						if bad++; bad < 5 {
							t.Errorf("%s: Values %v (truth %d), the plan %v (truth %v)", qs[i].Text, est[s], tr[s], a.Estimate, a.Truth)
						}
					}
					i++
				}
			}
			if i != len(qs) {
				t.Fatalf("%d values, %d queries", i, len(qs))
			}
			if bad > 0 {
				t.Errorf("%d of %d values differ", bad, len(qs))
			}
		})
	}
}

// TestValuesRefuseWhatThePlanRefuses: an edited release (a label outside
// the codebook, a group id outside the release's, a row count other than
// N) and a global release of keep probability 0 are refused with the
// plan's messages.
func TestValuesRefuseWhatThePlanRefuses(t *testing.T) {
	syn := newPlanSynth(t, 30, release.MechanismDiverted)
	rows := func(edit func([][]string) [][]string) string {
		var b strings.Builder
		b.WriteString(strings.Join(syn.header, ",") + "\n")
		for _, r := range edit(syn.rows) {
			b.WriteString(strings.Join(r, ",") + "\n")
		}
		return b.String()
	}
	global := *syn.rel
	global.Mechanism, global.Keep = release.MechanismGlobal, []float64{0, 0.5}
	for _, tc := range []struct {
		name  string
		rel   *Release
		table string
		want  string
	}{
		{"label", syn.rel, rows(func(r [][]string) [][]string { r = clone(r); r[4][2] = "s9"; return r }), `"s9" is not a category of the release's codebook`},
		{"rows", syn.rel, rows(func(r [][]string) [][]string { return r[:29] }), "has 29 rows but its metadata says N = 30"},
		{"no rows", syn.rel, rows(func([][]string) [][]string { return nil }), "has no data rows"},
		{"group id", anatomyRelease(t), strings.Replace(anatomyRows, "x,2", "x,3", 1), `"3" is not a group id of this release (0 to 2)`},
		{"keep 0", &global, rows(func(r [][]string) [][]string { return r }), "s was published with keep probability p = 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs, err := NewValues(tc.rel)
			if err != nil {
				t.Fatal(err)
			}
			err = vs.ScanRelease(csvReader(t, tc.table), "")
			if err == nil {
				_, err = vs.Estimates(0)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want an error containing %s", err, tc.want)
			}
		})
	}
}

// tabulate is a CSV table's count table: each distinct row once, in order
// of first appearance, with its number of rows in a column "count".
func tabulate(text string) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	count := map[string]int{}
	var order []string
	for _, l := range lines[1:] {
		if count[l] == 0 {
			order = append(order, l)
		}
		count[l]++
	}
	var b strings.Builder
	b.WriteString(lines[0] + ",count\n")
	for _, l := range order {
		fmt.Fprintf(&b, "%s,%d\n", l, count[l])
	}
	return b.String()
}

func clone(rows [][]string) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = append([]string(nil), r...)
	}
	return out
}

// Estimates of an A′ release are its counts (Theorem 3's f′_s), made in the
// counts' own memory — no second table of V values at report's peak — and
// a second call gives the same slice.
func TestEstimatesReuseTheCountsMemory(t *testing.T) {
	s, err := codebook.NewColumn(codebook.Spec{Name: "s", Categories: []string{"u", "v", "w"}})
	if err != nil {
		t.Fatal(err)
	}
	rel := &Release{Name: "pub.csv", Mechanism: release.MechanismDiverted, L: 2, Rows: 5,
		Sensitive: []string{"s"}, Columns: []*codebook.Column{&s}}
	v, err := NewValues(rel)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.ScanRelease(csvReader(t, "a,s\nx,u\nx,w\nx,u\nx,u\nx,w\n"), ""); err != nil {
		t.Fatal(err)
	}
	counts := &v.counts[0][0]
	est, err := v.Estimates(0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(est, []float64{3, 0, 2}) {
		t.Errorf("estimates %v, want the counts [3 0 2]", est)
	}
	if unsafe.Pointer(&est[0]) != unsafe.Pointer(counts) {
		t.Error("the estimates are not in the counts' memory")
	}
	again, err := v.Estimates(0)
	if err != nil || &again[0] != &est[0] {
		t.Errorf("a second call: %v, the same slice %v", err, err == nil && &again[0] == &est[0])
	}
}
