package report_test

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cmd/tools"
	rep "github.com/pramkit/pramkit/pkg/report"
)

// table finds the report's table with caption caption.
func findTable(t *testing.T, r *rep.Report, caption string) *rep.Table {
	t.Helper()
	for _, s := range r.Sections {
		for _, b := range s.Blocks {
			if b.Table != nil && b.Table.Caption == caption {
				return b.Table
			}
		}
	}
	t.Fatalf("no table %q in the report", caption)
	return nil
}

func float(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return v
}

// TestReportNumbersAreEstimates checks that the report shows estimate's
// numbers for the same file: the joint distribution of the decrypted
// release (estimate, interval, observed, truth) and the answers to count
// queries on the A′ table, to the digits the report prints.
func TestReportNumbersAreEstimates(t *testing.T) {
	dir := fixture(t)
	j := func(n string) string { return filepath.Join(dir, n) }
	est, _ := tools.Lookup("estimate")

	for _, dec := range []string{"dec.csv", "dec2.csv"} {
		t.Run(dec, func(t *testing.T) { sameJoint(t, j(dec), j("data.csv")) })
	}

	r, err := rep.Build(rep.Options{Files: []string{j("an.csv")}, Truth: []string{j("data.csv")}, Queries: j("queries.csv"), Codebook: j("cb.json")})
	if err != nil {
		t.Fatal(err)
	}
	answers := filepath.Join(t.TempDir(), "answers.csv")
	if res := cmdtest.Run(est.New, nil, "--queries", j("queries.csv"), "--codebook", j("cb.json"), "--truth", j("data.csv"), j("an.csv"), "-o", answers); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	_, rows, _ := cmdtest.ReadTable(t, answers)
	got := findTable(t, r, "Count queries (--queries queries.csv)")
	if len(got.Rows) != len(rows) || len(rows) != 3 {
		t.Fatalf("the report answers %d queries, estimate %d; want 3", len(got.Rows), len(rows))
	}
	for i, row := range rows {
		g := got.Rows[i]
		if strings.TrimSpace(row[0]) != g[0] {
			t.Errorf("query %d: %q, estimate's %q", i, g[0], row[0])
		}
		if d := math.Abs(float(t, g[1]) - float(t, row[1])); d > 0.005+1e-9 {
			t.Errorf("query %s: report %s, estimate %s", g[0], g[1], row[1])
		}
		if float(t, g[2]) != float(t, row[3]) {
			t.Errorf("query %s: true count %s, estimate's %s", g[0], g[2], row[3])
		}
	}
}

// sameJoint checks the report's joint table of the decrypted release dec
// against estimate's.
func sameJoint(t *testing.T, dec, truth string) {
	t.Helper()
	est, _ := tools.Lookup("estimate")
	r, err := rep.Build(rep.Options{Files: []string{dec}, Truth: []string{truth}})
	if err != nil {
		t.Fatal(err)
	}
	joint := filepath.Join(t.TempDir(), "joint.csv")
	if res := cmdtest.Run(est.New, nil, "--truth", truth, dec, "-o", joint); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	// The Theorem III.4 bound, as estimate --json gives it.
	res := cmdtest.Run(est.New, nil, "--json", dec)
	var sum struct{ Bound float64 }
	if err := json.Unmarshal([]byte(res.Stdout), &sum); err != nil || sum.Bound <= 0 {
		t.Fatalf("estimate --json: %v %q", err, res.Stdout)
	}
	bound := "here " + strconv.FormatFloat(sum.Bound, 'g', 4, 64) + "."
	found := false
	for _, b := range r.Sections[0].Blocks {
		found = found || strings.Contains(b.Text, bound)
	}
	if !found {
		t.Errorf("the report does not give estimate's bound: no %q", bound)
	}
	head, rows, _ := cmdtest.ReadTable(t, joint)
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	got := findTable(t, r, "Joint distribution of a × b")
	if len(got.Rows) != len(rows) {
		t.Fatalf("the report lists %d joint values, estimate %d", len(got.Rows), len(rows))
	}
	for i, row := range rows {
		g := got.Rows[i]
		if want := row[col["a"]] + ", " + row[col["b"]]; g[0] != want {
			t.Errorf("row %d: label %q, estimate's %q", i, g[0], want)
		}
		for k, name := range []string{"estimate", "ci_low", "ci_high", "observed", "truth"} {
			if d := math.Abs(float(t, g[k+1]) - float(t, row[col[name]])); d > 0.5e-4+1e-12 {
				t.Errorf("row %d %s: report %s, estimate %s", i, name, g[k+1], row[col[name]])
			}
		}
	}
}

// TestReportTruthByPosition checks that --truth takes the curators'
// tables, one column each, joined by position, with the same truth as the
// whole table; and refuses files of different lengths.
func TestReportTruthByPosition(t *testing.T) {
	dir := fixture(t)
	j := func(n string) string { return filepath.Join(dir, n) }
	_, rows, _ := cmdtest.ReadTable(t, j("data.csv"))
	tmp := t.TempDir()
	write := func(name string, col, n int) string {
		var b strings.Builder
		b.WriteString([]string{"a", "b"}[col] + "\n")
		for _, r := range rows[:n] {
			b.WriteString(strconv.Quote(r[col]) + "\n")
		}
		return cmdtest.WriteFile(t, tmp, name, b.String())
	}
	a, b, short := write("a.csv", 0, len(rows)), write("b.csv", 1, len(rows)), write("short.csv", 1, len(rows)-1)
	whole, err := rep.Build(rep.Options{Files: []string{j("dec.csv")}, Truth: []string{j("data.csv")}})
	if err != nil {
		t.Fatal(err)
	}
	parts, err := rep.Build(rep.Options{Files: []string{j("dec.csv")}, Truth: []string{b, a}})
	if err != nil {
		t.Fatal(err)
	}
	for _, caption := range []string{"Joint distribution of a × b", "Marginal distribution of a", "Marginal distribution of b"} {
		w, p := findTable(t, whole, caption), findTable(t, parts, caption)
		if fmt.Sprint(w.Rows) != fmt.Sprint(p.Rows) {
			t.Errorf("%s: with the curators' tables\n%v\nwith the whole table\n%v", caption, p.Rows, w.Rows)
		}
	}
	_, err = rep.Build(rep.Options{Files: []string{j("dec.csv")}, Truth: []string{a, short}})
	if err == nil || !strings.Contains(err.Error(), "short.csv has 399 rows but") {
		t.Errorf("truth files of different lengths: %v", err)
	}
}

// TestReportValueCountsAreEstimates checks that each sensitive value's
// count and true count in the report of an anonymized table are what
// estimate --query a=VALUE gives, for A′, Anatomy and global
// randomization (report counts the values in one table of V counts,
// countquery.Values, not one query each).
func TestReportValueCountsAreEstimates(t *testing.T) {
	dir := fixture(t)
	j := func(n string) string { return filepath.Join(dir, n) }
	est, _ := tools.Lookup("estimate")
	labels := []string{"x", "<script>alert(1)</script>", "y&z", "w"} // the codebook's a
	queries := cmdtest.WriteFile(t, t.TempDir(), "values.csv", "query\n"+"a="+strings.Join(labels, "\na=")+"\n")
	for _, file := range []string{"an.csv", "anat.csv", "glob.csv"} {
		t.Run(file, func(t *testing.T) {
			r, err := rep.Build(rep.Options{Files: []string{j(file)}, Truth: []string{j("data.csv")}})
			if err != nil {
				t.Fatal(err)
			}
			answers := filepath.Join(t.TempDir(), "answers.csv")
			if res := cmdtest.Run(est.New, nil, "--queries", queries, "--truth", j("data.csv"), j(file), "-o", answers); res.Code != 0 {
				t.Fatal(res.Stderr)
			}
			_, rows, _ := cmdtest.ReadTable(t, answers)
			got := findTable(t, r, "Sensitive values of a")
			if len(got.Rows) != len(labels) || len(rows) != len(labels) {
				t.Fatalf("the report lists %d values, estimate answers %d; want %d", len(got.Rows), len(rows), len(labels))
			}
			for i, row := range rows {
				g := got.Rows[i]
				if g[0] != labels[i] {
					t.Errorf("value %d: %q, want %q", i, g[0], labels[i])
				}
				if d := math.Abs(float(t, g[1]) - float(t, row[1])); d > 0.005+1e-9 {
					t.Errorf("%s: report %s, estimate %s", row[0], g[1], row[1])
				}
				if float(t, g[2]) != float(t, row[3]) {
					t.Errorf("%s: true count %s, estimate's %s", row[0], g[2], row[3])
				}
			}
		})
	}
}

// TestReportOfACountTableIsTheReleases: the report of an anonymized
// table's count table (estimate --tabulate) shows the same value counts,
// true counts and query answers as the report of the table itself (a
// count table's rows weigh their count; report refused it as a table of
// fewer rows than N).
func TestReportOfACountTableIsTheReleases(t *testing.T) {
	dir := fixture(t)
	j := func(n string) string { return filepath.Join(dir, n) }
	est, _ := tools.Lookup("estimate")
	for _, file := range []string{"an.csv", "anat.csv", "glob.csv"} {
		t.Run(file, func(t *testing.T) {
			counts := filepath.Join(t.TempDir(), "counts.csv")
			if res := cmdtest.Run(est.New, nil, "--tabulate", "--columns", "b,c", j(file), "-o", counts); res.Code != 0 {
				t.Fatal(res.Stderr)
			}
			o := rep.Options{Truth: []string{j("data.csv")}, Queries: j("queries.csv"), Codebook: j("cb.json"), Groups: j("anat.groups.csv")}
			o.Files = []string{j(file)}
			whole, err := rep.Build(o)
			if err != nil {
				t.Fatal(err)
			}
			o.Files = []string{counts}
			counted, err := rep.Build(o)
			if err != nil {
				t.Fatal(err)
			}
			for _, caption := range []string{"Sensitive values of a", "Count queries (--queries queries.csv)"} {
				w, c := findTable(t, whole, caption), findTable(t, counted, caption)
				if fmt.Sprint(w.Rows) != fmt.Sprint(c.Rows) {
					t.Errorf("%s: of the count table\n%v\nof the table\n%v", caption, c.Rows, w.Rows)
				}
			}
		})
	}
}
