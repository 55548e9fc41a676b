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

// groupsOpener opens the CSV text of an anatomy sensitive table with the
// columns asked, as ScanAnatomyGroups' open does, counting the passes.
func groupsOpener(t *testing.T, text string, passes *int) func([]string) (table.Reader, error) {
	return func(cols []string) (table.Reader, error) {
		*passes++
		in, err := table.Open("-", table.ReadOptions{Stdin: strings.NewReader(text), BatchSize: 3, Columns: cols})
		if err == nil {
			t.Cleanup(func() { in.Close() })
		}
		return in, err
	}
}

// anatomyPlan is a Plan of qs over the anatomy release rel whose rows in
// gives (for its schema), that has read the sensitive table text the given
// way (anatomyAuto: its own choice), counting the passes in passes; the
// error is ReadAnatomyGroups'.
func anatomyPlan(t *testing.T, rel *Release, in table.Reader, qs []Query, way int, text string, passes *int) (*Plan, error) {
	t.Helper()
	p, err := NewPlan(rel, in.Schema(), nil, qs, "")
	if err != nil {
		t.Fatal(err)
	}
	p.anatomyWay = way
	return p, p.ReadAnatomyGroups(groupsOpener(t, text, passes))
}

// TestScanAnatomyGroupsIsThePlansAnswers: the estimates that
// ScanAnatomyGroups streams from the sensitive table equal, bit for bit,
// what a Plan of the queries "s=v" answers, its table held or streamed,
// for several ℓ′, V past 2^16, groups of several sizes (counts 1–3) with
// m_g rows not n_g, and sums bounds that take one pass for all sizes, or
// several.
func TestScanAnatomyGroupsIsThePlansAnswers(t *testing.T) {
	for _, tc := range []struct {
		l, v    int
		sumsMax int  // anatomySumsMax: ≥ sizes·V is one pass of sums; V, a pass per size
		several bool // the sums take several passes
	}{
		{2, 5, 1 << 22, false},
		{3, 40, 40, true},   // a size a pass
		{5, 300, 600, true}, // two sizes a pass
		{4, 70000, 1 << 22, false},
		{5, 70000, 1, true}, // below V: still a size a pass
	} {
		t.Run(fmt.Sprintf("l=%d/V=%d/sums=%d", tc.l, tc.v, tc.sumsMax), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.l), uint64(tc.v)))
			labels := make([]string, tc.v)
			for i := range labels {
				labels[i] = fmt.Sprintf("s%d", i)
			}
			s, err := codebook.NewColumn(codebook.Spec{Name: "s", Categories: labels})
			if err != nil {
				t.Fatal(err)
			}
			n := 2*tc.v + 60
			rel := &Release{Name: "rows.csv", Mechanism: release.MechanismAnatomy, L: tc.l, Rows: int64(n),
				Sensitive: []string{"s"}, Columns: []*codebook.Column{&s}, GroupColumn: "group", Groups: n / tc.l}
			value := func() int { return min(r.IntN(tc.v), r.IntN(tc.v)) }
			var groups, rows strings.Builder
			groups.WriteString("group,s,count\n")
			order := r.Perm(rel.Groups) // the table in no particular order of groups
			for _, g := range order {
				seen := map[int]bool{}
				for len(seen) < min(tc.l, tc.v) {
					if x := value(); !seen[x] {
						seen[x] = true
						fmt.Fprintf(&groups, "%d,%s,%d\n", g, labels[x], 1+r.IntN(3))
					}
				}
			}
			rows.WriteString("a,group\n")
			for range n {
				fmt.Fprintf(&rows, "x,%d\n", r.IntN(rel.Groups))
			}

			// What a plan of the V queries "s=v" answers, the table held
			// and streamed.
			var want []float64
			var sizes int
			for _, way := range []int{anatomyHeld, anatomyStreamed} {
				in := csvReader(t, rows.String())
				passes := 0
				p, err := anatomyPlan(t, rel, in, valueQueries(rel), way, groups.String(), &passes)
				if err != nil {
					t.Fatal(err)
				}
				sizes = len(p.anat.sizes)
				if err := p.ScanRelease(in, nil); err != nil {
					t.Fatal(err)
				}
				answers, err := p.Answers(Options{})
				if err != nil {
					t.Fatal(err)
				}
				est := make([]float64, len(answers))
				for i, a := range answers {
					est[i] = a.Estimate
				}
				if want == nil {
					want = est
				} else if !slices.EqualFunc(want, est, func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }) {
					t.Fatal("the plan's answers differ held and streamed")
				}
			}

			defer func(m int) { anatomySumsMax = m }(anatomySumsMax)
			anatomySumsMax = tc.sumsMax
			streamed, err := NewValues(rel)
			if err != nil {
				t.Fatal(err)
			}
			if err := streamed.ScanRelease(csvReader(t, rows.String()), ""); err != nil {
				t.Fatal(err)
			}
			passes := 0
			if err := streamed.ScanAnatomyGroups(groupsOpener(t, groups.String(), &passes)); err != nil {
				t.Fatal(err)
			}
			got, err := streamed.Estimates(0)
			if err != nil {
				t.Fatal(err)
			}
			step := max(1, tc.sumsMax/tc.v)
			if want := 1 + (sizes+step-1)/step; passes != want || (passes > 2) != tc.several {
				t.Errorf("%d passes over the sensitive table, want %d (n_g, then %d sizes, %d a pass)", passes, want, sizes, step)
			}
			if len(got) != len(want) {
				t.Fatalf("%d estimates, want %d", len(got), len(want))
			}
			bad, fractional := 0, 0
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					if bad++; bad < 5 {
						t.Errorf("%s: streamed %v, plan %v", labels[i], got[i], want[i])
					}
				}
				if want[i] != math.Trunc(want[i]) {
					fractional++
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d values differ", bad, len(want))
			}
			if fractional == 0 {
				t.Error("every estimate is an integer: the test does not tell the summation orders apart")
			}
		})
	}
}

// groupSizes gives the distinct sizes in increasing order and each group's
// index among them, a byte a group up to 256 sizes and 4 bytes past them,
// and refuses a group of no entry.
func TestGroupSizesIndexesEachGroupsSize(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		distinct int
		small    bool
	}{{1, true}, {3, true}, {256, true}, {257, false}, {1000, false}} {
		per := make([]int64, 5000)
		for g := range per {
			per[g] = 2 + int64(r.IntN(tc.distinct))*3
		}
		for k := range tc.distinct { // every size present
			per[k] = 2 + int64(k)*3
		}
		sizes, sizeOf, err := groupSizes(per, "g.csv")
		if err != nil {
			t.Fatal(err)
		}
		if len(sizes) != tc.distinct || !slices.IsSorted(sizes) || (sizeOf.small != nil) != tc.small {
			t.Fatalf("%d sizes: got %d sizes, sorted %v, a byte a group %v", tc.distinct, len(sizes), slices.IsSorted(sizes), sizeOf.small != nil)
		}
		for g, n := range per {
			if sizes[sizeOf.at(int64(g))] != n {
				t.Fatalf("%d sizes: group %d of size %d indexes size %d", tc.distinct, g, n, sizes[sizeOf.at(int64(g))])
			}
		}
	}
	if _, _, err := groupSizes([]int64{3, 0, 3}, "g.csv"); err == nil || !strings.Contains(err.Error(), "group 1 has no entry") {
		t.Errorf("a group of no entry: %v", err)
	}
}

// Values holds m_g in 32 bits, as Plan does: a count table of the release
// that gives a group more than 2^32 − 1 rows is refused as edited, naming
// the group, rather than wrapped around.
func TestScanReleaseRefusesAGroupPast32Bits(t *testing.T) {
	s, err := codebook.NewColumn(codebook.Spec{Name: "s", Categories: []string{"u", "v"}})
	if err != nil {
		t.Fatal(err)
	}
	rel := &Release{Name: "rows.csv", Mechanism: release.MechanismAnatomy, L: 2, Rows: 3 << 32,
		Sensitive: []string{"s"}, Columns: []*codebook.Column{&s}, GroupColumn: "group", Groups: 2}
	v, err := NewValues(rel)
	if err != nil {
		t.Fatal(err)
	}
	rows := fmt.Sprintf("a,group,count\nx,0,%d\nx,1,%d\nx,1,%d\n", uint64(1)<<32-1, uint64(1)<<31, uint64(1)<<31)
	err = v.ScanRelease(csvReader(t, rows), "count")
	if err == nil || !strings.Contains(err.Error(), "group 1 has over 4294967295 rows") {
		t.Errorf("a group of 2^32 rows: %v", err)
	}
}
