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
	"github.com/pramkit/pramkit/pkg/table"
)

// planSynth is a small published table: non-sensitive a, b and the
// sensitive s, u (codebook labels), rows drawn with a fixed seed.
type planSynth struct {
	header []string
	rows   [][]string
	rel    *Release
}

func newPlanSynth(t *testing.T, n int, mech string) *planSynth {
	t.Helper()
	s, err := codebook.NewColumn(codebook.Spec{Name: "s", Categories: []string{"s0", "s1", "s2", "s3"}, Missing: "?"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := codebook.NewColumn(codebook.Spec{Name: "u", Categories: []string{"u0", "u1", "u2"}})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	syn := &planSynth{header: []string{"a", "b", "s", "u"}}
	for range n {
		syn.rows = append(syn.rows, []string{
			[]string{"x", "y", "z"}[r.IntN(3)], []string{"p", "q"}[r.IntN(2)],
			s.Label(r.IntN(4)), u.Label(r.IntN(3)),
		})
	}
	syn.rel = &Release{Name: "pub.csv", Mechanism: mech, L: 3, Rows: int64(n),
		Sensitive: []string{"s", "u"}, Columns: []*codebook.Column{&s, &u}}
	if mech == release.MechanismGlobal {
		syn.rel.Keep = []float64{0.6, 0.7}
	}
	return syn
}

func (syn *planSynth) reader(t *testing.T, rows [][]string) table.Reader {
	t.Helper()
	var b strings.Builder
	b.WriteString(strings.Join(syn.header, ",") + "\n")
	for _, r := range rows {
		b.WriteString(strings.Join(r, ",") + "\n")
	}
	// Small batches, so that the counts add up over several.
	in, err := table.Open("-", table.ReadOptions{Stdin: strings.NewReader(b.String()), BatchSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return in
}

// answer runs the planner on queries: one scan, then the answers.
func (syn *planSynth) answer(t *testing.T, queries []string, opt Options) []Answer {
	t.Helper()
	in := syn.reader(t, syn.rows)
	var qs []Query
	for _, s := range queries {
		conds, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, Query{Text: s, Conds: conds})
	}
	p, err := NewPlan(syn.rel, in.Schema(), nil, qs, "q.csv")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ScanRelease(in, nil); err != nil {
		t.Fatal(err)
	}
	if p.Rows() != int64(len(syn.rows)) {
		t.Fatalf("Rows = %d, want %d", p.Rows(), len(syn.rows))
	}
	answers, err := p.Answers(opt)
	if err != nil {
		t.Fatal(err)
	}
	return answers
}

// brute is the estimate of one query computed row by row from the
// definitions: the states' counts y of Figure 3 / Eq. 13 (A′) or the
// counts z over the P rows (mechanism A), handed to the estimators.
func (syn *planSynth) brute(t *testing.T, query string, opt Options) float64 {
	t.Helper()
	conds, err := Parse(query)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, c := range conds {
		want[c.Col] = c.Value
	}
	var sens []int // columns of the sensitive values, in the release's order
	for i, h := range syn.header {
		if _, ok := want[h]; ok && slices.Contains(syn.rel.Sensitive, h) {
			sens = append(sens, i)
		}
	}
	w := len(sens)
	y := make([]float64, 1<<(w+1))
	var nP float64
	for _, r := range syn.rows {
		inP := true
		for i, h := range syn.header {
			if v, ok := want[h]; ok && !slices.Contains(syn.rel.Sensitive, h) && r[i] != v {
				inP = false
			}
		}
		var has []bool
		for _, i := range sens {
			has = append(has, r[i] == want[syn.header[i]])
		}
		y[State(inP, has...)]++
		if inP {
			nP++
		}
	}
	switch {
	case w == 0:
		return nP
	case syn.rel.Mechanism == release.MechanismGlobal:
		var v []int
		var keep []float64
		for _, i := range sens {
			k := slices.Index(syn.rel.Sensitive, syn.header[i])
			v = append(v, syn.rel.Columns[k].K())
			keep = append(keep, syn.rel.Keep[k])
		}
		est, err := GlobalCountMulti(y[1<<w:], v, keep)
		if err != nil {
			t.Fatal(err)
		}
		return est
	case len(want) == 1: // a lone sensitive value: f′_s (Theorem 3)
		return y[1] + y[3]
	case w == 1:
		e, err := Predicate([4]float64(y), syn.rel.L, opt)
		if err != nil {
			t.Fatal(err)
		}
		return e.Count
	}
	e, err := PredicateMulti(y, syn.rel.L, opt)
	if err != nil {
		t.Fatal(err)
	}
	return e.Count
}

var planQueries = []string{
	"a=x", "a=x,b=q", "s=s1", "u=u2", "a=y,s=s1", "a=y,s=s2", "b=p,s=s1",
	"a=z,b=p,s=s3", "a=x,s=s0,u=u1", "u=u1,a=x,s=s0", "b=q,s=s2,u=u0", "s=s1,u=u2",
}

// Every answer of one grouped scan is the estimator's on the counts
// gathered row by row, for A′ and for mechanism A; and answering the
// queries one at a time gives the same numbers (the grouping and the
// shared all-rows counts change nothing).
func TestPlanAnswersAreTheEstimatorsOnBruteCounts(t *testing.T) {
	opt := Options{Tolerance: DefaultTolerance, MaxIter: DefaultMaxIter, ExactDecoy: true}
	for _, mech := range []string{release.MechanismDiverted, release.MechanismGlobal} {
		syn := newPlanSynth(t, 1500, mech)
		got := syn.answer(t, planQueries, opt)
		for i, q := range planQueries {
			want := syn.brute(t, q, opt)
			if math.Abs(got[i].Estimate-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("%s %q: plan %v, row by row %v", mech, q, got[i].Estimate, want)
			}
			one := syn.answer(t, []string{q}, opt)[0]
			if one != got[i] {
				t.Errorf("%s %q: alone %+v, among others %+v", mech, q, one, got[i])
			}
		}
	}
}

func TestPlanRefusesWhatItCannotAnswer(t *testing.T) {
	syn := newPlanSynth(t, 200, release.MechanismDiverted)
	ask := func(rel *Release, q string) error {
		in := syn.reader(t, syn.rows)
		conds, err := Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPlan(rel, in.Schema(), nil, []Query{{Text: q, Conds: conds}}, "")
		if err != nil {
			return err
		}
		return p.ScanRelease(in, nil)
	}
	bad := *syn.rel
	bad.Columns = bad.Columns[:1]
	wrongN := *syn.rel
	wrongN.Rows++
	for _, tc := range []struct {
		rel  *Release
		q    string
		want string
	}{
		{syn.rel, "c=1", `has no column "c" (columns: a, b, s, u)`},
		{syn.rel, "s=s9", `"s9" is not a category of column "s" in the codebook (categories: "s0", "s1", "s2", "s3", "?")`},
		{syn.rel, "a=w", `column "a" of pub.csv has no value "w" (its values: "x", "y", "z")`},
		{&wrongN, "a=x", "has 200 rows but its metadata says N = 201"},
		{&bad, "a=x", "2 sensitive columns but 1 codebooks"},
	} {
		err := ask(tc.rel, tc.q)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error containing %s", tc.q, err, tc.want)
		}
	}
}

// The true counts leave out the rows anonymize --missing drop left out:
// a missing value in any sensitive column, named by the query or not.
func TestPlanTruthFollowsMissingDrop(t *testing.T) {
	syn := newPlanSynth(t, 300, release.MechanismDiverted)
	syn.rel.Policy = codebook.Policy{Missing: codebook.MissingDrop}
	orig := slices.Clone(syn.rows)
	for i := 0; i < len(orig); i += 7 {
		orig[i] = slices.Clone(orig[i])
		orig[i][2] = "?"
	}
	// Queries naming s read its cells anyway; without them, the column
	// is read only to find the dropped rows.
	for _, queries := range [][]string{{"a=x", "a=x,u=u1", "s=s1", "b=q,s=s2"}, {"a=x", "a=x,u=u1", "b=q,u=u2"}} {
		syn.truth(t, orig, queries)
	}
}

func (syn *planSynth) truth(t *testing.T, orig [][]string, queries []string) {
	t.Helper()
	var qs []Query
	for _, s := range queries {
		conds, _ := Parse(s)
		qs = append(qs, Query{Text: s, Conds: conds})
	}
	in := syn.reader(t, syn.rows)
	p, err := NewPlan(syn.rel, in.Schema(), nil, qs, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ScanRelease(in, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.ScanTruth(syn.reader(t, orig), nil); err != nil {
		t.Fatal(err)
	}
	answers, err := p.Answers(Options{Tolerance: DefaultTolerance, MaxIter: DefaultMaxIter, ExactDecoy: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range queries {
		conds, _ := Parse(q)
		want := 0
	rows:
		for _, r := range orig {
			if r[2] == "?" {
				continue
			}
			for _, c := range conds {
				if r[slices.Index(syn.header, c.Col)] != c.Value {
					continue rows
				}
			}
			want++
		}
		if answers[i].Truth != float64(want) {
			t.Errorf("%q: true count %v, want %d", q, answers[i].Truth, want)
		}
	}
}

func TestPlanAnswersNeedTheScan(t *testing.T) {
	syn := newPlanSynth(t, 10, release.MechanismDiverted)
	in := syn.reader(t, syn.rows)
	p, err := NewPlan(syn.rel, in.Schema(), nil, []Query{{Text: "a=x", Conds: []Cond{{Col: "a", Value: "x"}}}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Answers(Options{}); err == nil {
		t.Error("Answers before ScanRelease: no error")
	}
}

func TestQuoteValuesIsBounded(t *testing.T) {
	var vs []string
	for i := range 25 {
		vs = append(vs, fmt.Sprint(i))
	}
	got := quoteValues(vs, false)
	if want := `"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17", "18", "19", … and 5 more`; got != want {
		t.Errorf("quoteValues = %s, want %s", got, want)
	}
	if got := quoteValues(vs, true); !strings.HasSuffix(got, "… and more than 5 more") {
		t.Errorf("capped: %s", got)
	}
	long := strings.Repeat("é", 100)
	if got, want := quoteValues([]string{long}, false), `"`+strings.Repeat("é", 80)+`…"`; got != want {
		t.Errorf("a long value: %s, want %s", got, want)
	}
}

// csvReader reads a CSV text as a table.
func csvReader(t *testing.T, text string) table.Reader {
	t.Helper()
	in, err := table.Open("-", table.ReadOptions{Stdin: strings.NewReader(text), BatchSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return in
}

// anatomyRelease is a hand-made Anatomy release of 3 groups: the row
// table (a, group) and the sensitive table (group, s, count).
func anatomyRelease(t *testing.T) *Release {
	t.Helper()
	s, err := codebook.NewColumn(codebook.Spec{Name: "s", Categories: []string{"s0", "s1", "s2"}})
	if err != nil {
		t.Fatal(err)
	}
	return &Release{Name: "rows.csv", Mechanism: release.MechanismAnatomy, L: 2, Rows: 6,
		Sensitive: []string{"s"}, Columns: []*codebook.Column{&s}, GroupColumn: "group", Groups: 3}
}

const (
	anatomyRows   = "a,group\nx,0\ny,0\nx,1\nx,1\ny,2\nx,2\n"
	anatomyGroups = "group,s,count\n0,s0,1\n0,s1,1\n1,s1,1\n1,s2,1\n2,s0,1\n2,s2,1\n"
)

// Xiao and Tao's estimator Σ_g m_g·c_g(s)/n_g, worked by hand: every
// group holds two values once each, so a row of group g counts ½ for each;
// the same with the sensitive table held or streamed.
func TestPlanAnatomyIsXiaoTaosEstimator(t *testing.T) {
	rel := anatomyRelease(t)
	want := map[string]float64{
		"a=x,s=s1": 0.5 + 2*0.5, // group 0: one x row; group 1: two
		"a=x,s=s0": 0.5 + 0.5,   // groups 0 and 2
		"a=y,s=s2": 0.5,         // group 2
		"s=s1":     2*0.5 + 2*0.5,
		"a=x":      4,
	}
	var qs []Query
	for q := range want {
		conds, _ := Parse(q)
		qs = append(qs, Query{Text: q, Conds: conds})
	}
	for _, way := range []int{anatomyHeld, anatomyStreamed} {
		in := csvReader(t, anatomyRows)
		passes := 0
		p, err := anatomyPlan(t, rel, in, qs, way, anatomyGroups, &passes)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.ScanRelease(in, nil); err != nil {
			t.Fatal(err)
		}
		answers, err := p.Answers(Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range qs {
			if answers[i].Estimate != want[q.Text] {
				t.Errorf("way %d, %q: %v, want %v", way, q.Text, answers[i].Estimate, want[q.Text])
			}
		}
		if passes != 2 {
			t.Errorf("way %d: %d passes over the sensitive table, want 2", way, passes)
		}
		// A group id outside 0 … Groups−1 in the row table is refused.
		in = csvReader(t, strings.Replace(anatomyRows, "x,2", "x,3", 1))
		if p, err = anatomyPlan(t, rel, in, qs, way, anatomyGroups, &passes); err != nil {
			t.Fatal(err)
		}
		if err := p.ScanRelease(in, nil); err == nil || !strings.Contains(err.Error(), `"3" is not a group id of this release (0 to 2)`) {
			t.Errorf("way %d, group id 3 in the rows: %v", way, err)
		}
	}
}

// TestReadAnatomyGroupsRefusesAnEditedTable: an edited sensitive table is
// refused, by a plan holding it or streaming it, and by
// Values.ScanAnatomyGroups, with the same message.
func TestReadAnatomyGroupsRefusesAnEditedTable(t *testing.T) {
	rel := anatomyRelease(t)
	conds, _ := Parse("a=x,s=s1")
	qs := []Query{{Text: "a=x,s=s1", Conds: conds}}
	for _, tc := range []struct{ old, new, want string }{
		{"2,s0,1", "5,s0,1", `"5" is not a group id (0 to 2)`},
		{"2,s0,1", "2,s9,1", `"s9" is not a category of s`},
		{"2,s0,1", "2,s0,0", `"0" is not a count ≥ 1`},
		{"2,s0,1", "2,s0,4294967296", `"4294967296" is over 4294967295`},
		{"2,s0,1\n2,s2,1\n", "", "group 2 has no entry"},
	} {
		edited := strings.Replace(anatomyGroups, tc.old, tc.new, 1)
		for _, way := range []int{anatomyHeld, anatomyStreamed} {
			in := csvReader(t, anatomyRows)
			passes := 0
			p, err := anatomyPlan(t, rel, in, qs, way, edited, &passes)
			if err == nil {
				err = p.ScanRelease(in, nil) // streamed: EndScan reads the labels
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("plan way %d, %q → %q: %v, want an error containing %s", way, tc.old, tc.new, err, tc.want)
			}
		}
		vs, err := NewValues(rel)
		if err != nil {
			t.Fatal(err)
		}
		if err := vs.ScanRelease(csvReader(t, anatomyRows), ""); err != nil {
			t.Fatal(err)
		}
		passes := 0
		if err := vs.ScanAnatomyGroups(groupsOpener(t, edited, &passes)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("streamed, %q → %q: %v, want an error containing %s", tc.old, tc.new, err, tc.want)
		}
	}
	diverted := *rel
	diverted.Mechanism = release.MechanismDiverted
	p := &Plan{rel: &diverted}
	passes := 0
	if err := p.ReadAnatomyGroups(groupsOpener(t, anatomyGroups, &passes)); err == nil {
		t.Error("a diverted release: no error")
	}
	// An anatomy plan scanned without its sensitive table is refused.
	in := csvReader(t, anatomyRows)
	p, err := NewPlan(rel, in.Schema(), nil, qs, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ScanRelease(in, nil); err == nil || !strings.Contains(err.Error(), "ReadAnatomyGroups") {
		t.Errorf("no sensitive table: %v", err)
	}
}
