package estimate

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/countquery"
	"github.com/pramkit/pramkit/pkg/rng"
)

// countSynth is a synthetic table with two non-sensitive columns a, b and
// two sensitive ones s (6 values) and u (4 values), with its codebook.
type countSynth struct {
	dir, csv, cb string
	rows         [][]string // a, b, s, u
}

func newCountSynth(t testing.TB, n int) *countSynth {
	t.Helper()
	c := &countSynth{dir: t.TempDir()}
	r := rng.NewSeeded(5)
	var b strings.Builder
	b.WriteString("a,b,s,u\n")
	for range n {
		row := []string{
			fmt.Sprintf("a%d", r.IntN(4)),
			fmt.Sprintf("b%d", r.IntN(3)),
			fmt.Sprintf("s%d", min(r.IntN(7), 5)), // s5 twice as frequent
			fmt.Sprintf("u%d", r.IntN(4)),
		}
		c.rows = append(c.rows, row)
		b.WriteString(strings.Join(row, ",") + "\n")
	}
	c.csv = filepath.Join(c.dir, "t.csv")
	c.cb = filepath.Join(c.dir, "cb.json")
	if err := os.WriteFile(c.csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cb := `{"columns": [
  {"name": "s", "categories": ["s0", "s1", "s2", "s3", "s4", "s5"]},
  {"name": "u", "categories": ["u0", "u1", "u2", "u3"]}
]}`
	if err := os.WriteFile(c.cb, []byte(cb), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

// countCSV reads a CSV file.
func countCSV(t testing.TB, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// countAsk answers queries with estimate -o FILE (full precision) and
// returns the estimates and iterations, by query.
func countAsk(t testing.TB, release string, queries []string, extra ...string) (est []float64, iters []int) {
	t.Helper()
	dir := t.TempDir()
	qf := filepath.Join(dir, "q.csv")
	var b strings.Builder
	b.WriteString("query\n")
	for _, q := range queries {
		b.WriteString(strconv.Quote(q) + "\n")
	}
	if err := os.WriteFile(qf, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "answers.csv")
	countRun(t, false, append([]string{release, "--queries", qf, "-o", out}, extra...)...)
	recs := countCSV(t, out)
	for i, r := range recs[1:] {
		if r[0] != queries[i] {
			t.Fatalf("answer %d is for %q, want %q (input order)", i, r[0], queries[i])
		}
		e, _ := strconv.ParseFloat(r[1], 64)
		it, _ := strconv.Atoi(r[2])
		est, iters = append(est, e), append(iters, it)
	}
	return est, iters
}

// countBrute evaluates a query's conditions on one row of a table given
// its header.
func countBrute(header, row []string, conds map[string]string) bool {
	for c, v := range conds {
		if row[slices.Index(header, c)] != v {
			return false
		}
	}
	return true
}

// The command's answers on a diverted release equal the library's
// estimators applied to state counts computed here by brute force from
// the published rows: f′_s for a sensitive value alone, the exact count
// for non-sensitive columns alone, Predicate (Eq. 12) for P and one
// sensitive value, PredicateMulti (Eq. 13) for two. Every query is also
// asked alone: grouping queries in one pass must not change an answer.
func TestCountDivertedAnswersAreTheLibrarys(t *testing.T) {
	syn := newCountSynth(t, 1200)
	pub := filepath.Join(syn.dir, "pub.csv")
	// Anatomy's grouping, where estimate's auto stopping rule is the
	// library's default (the 1 % rule).
	countRun(t, true, "--sensitive", "s,u", "--l", "3", "--grouping", "anatomy", "--codebook", syn.cb, "--seed", "11", "--insecure-seed", syn.csv, "-o", pub)
	recs := countCSV(t, pub)
	header, rows := recs[0], recs[1:]
	queries := []string{
		"s=s2", "u=u0", "a=a1", "a=a1,b=b2",
		"a=a1,s=s2", "s=s2,a=a1", "b=b0,s=s5", "a=a3,b=b1,s=s0",
		"a=a1,s=s2,u=u3", "u=u1,b=b2,s=s4", "s=s1,u=u1",
		"a=a9,s=s2", // a category no row has: P is empty
	}
	// a9 is a category only by this codebook; without it, a value in no
	// row is an error (TestCountUnknownValueIsAnError).
	nsa := filepath.Join(syn.dir, "nsa.json")
	if err := os.WriteFile(nsa, []byte(`{"columns": [{"name": "a", "categories": ["a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, decoy := range []string{"exact", "paper", "paper-fixed"} {
		est, iters := countAsk(t, pub, queries, "--decoy", decoy, "--codebook", nsa)
		for i, q := range queries {
			conds, _ := countquery.Parse(q)
			pred, sens := map[string]string{}, map[string]string{}
			var order []string // sensitive columns in the release's order
			for _, c := range conds {
				if c.Col == "s" || c.Col == "u" {
					sens[c.Col] = c.Value
				} else {
					pred[c.Col] = c.Value
				}
			}
			for _, c := range []string{"s", "u"} {
				if _, ok := sens[c]; ok {
					order = append(order, c)
				}
			}
			w := len(order)
			y := make([]float64, 1<<(w+1))
			var nP float64
			for _, r := range rows {
				inP := countBrute(header, r, pred)
				if inP {
					nP++
				}
				var has []bool
				for _, c := range order {
					has = append(has, r[slices.Index(header, c)] == sens[c])
				}
				y[countquery.State(inP, has...)]++
			}
			// The paper's Eq. 12 re-evaluates a01 = (x1 + x3)/N from the
			// current x at every step (Figure 3); paper-fixed keeps f′_s/N.
			opt := countquery.Options{ExactDecoy: decoy == "exact", UpdateFrequencies: decoy == "paper"}
			var want float64
			wantIter := 0
			switch {
			case w == 0:
				want = nP
			case len(pred) == 0 && w == 1:
				want = y[3] // all rows are in P: f′_s
			case w == 1:
				e, err := countquery.Predicate([4]float64(y), 3, opt)
				if err != nil {
					t.Fatal(err)
				}
				want, wantIter = e.Count, e.Iterations
			default:
				e, err := countquery.PredicateMulti(y, 3, opt)
				if err != nil {
					t.Fatal(err)
				}
				want, wantIter = e.Count, e.Iterations
			}
			if math.Abs(est[i]-want) > 1e-9*math.Max(1, want) || iters[i] != wantIter {
				t.Errorf("--decoy %s, %s: estimate %v in %d steps, library %v in %d", decoy, q, est[i], iters[i], want, wantIter)
			}
			alone, _ := countAsk(t, pub, []string{q}, "--decoy", decoy, "--codebook", nsa)
			if alone[0] != est[i] {
				t.Errorf("--decoy %s, %s: %v asked alone, %v among the others", decoy, q, alone[0], est[i])
			}
		}
	}
}

// On a global release the answer is the inversion of mechanism A over the
// P rows (GlobalCountMulti, equal to GlobalCount for one value).
func TestCountGlobalAnswersAreTheLibrarys(t *testing.T) {
	syn := newCountSynth(t, 1200)
	pub := filepath.Join(syn.dir, "global.csv")
	countRun(t, true, "--mechanism", "global", "--sensitive", "s,u", "--p", "0.4", "--codebook", syn.cb, "--seed", "2", "--insecure-seed", syn.csv, "-o", pub)
	recs := countCSV(t, pub)
	header, rows := recs[0], recs[1:]
	queries := []string{"s=s2", "a=a1,s=s2", "b=b0,s=s5,u=u2", "a=a2"}
	est, _ := countAsk(t, pub, queries)
	v := map[string]int{"s": 6, "u": 4}
	for i, q := range queries {
		conds, _ := countquery.Parse(q)
		pred, sens := map[string]string{}, []countquery.Cond{}
		for _, c := range conds {
			if _, ok := v[c.Col]; ok {
				sens = append(sens, c)
			} else {
				pred[c.Col] = c.Value
			}
		}
		z := make([]float64, 1<<len(sens))
		var nP float64
		for _, r := range rows {
			if !countBrute(header, r, pred) {
				continue
			}
			nP++
			k := 0
			for _, c := range sens {
				k <<= 1
				if r[slices.Index(header, c.Col)] == c.Value {
					k |= 1
				}
			}
			z[k]++
		}
		want := nP
		if len(sens) > 0 {
			var vs []int
			var ps []float64
			for _, c := range sens {
				vs, ps = append(vs, v[c.Col]), append(ps, 0.4)
			}
			var err error
			if want, err = countquery.GlobalCountMulti(z, vs, ps); err != nil {
				t.Fatal(err)
			}
		}
		if math.Abs(est[i]-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s: estimate %v, library %v", q, est[i], want)
		}
	}
}

// On an anatomy release the answer is Σ_g m_g c_g(s)/n_g (AnatomyCount)
// from the rows' group ids and the sensitive table; the sensitive table is
// found next to the release by default.
func TestCountAnatomyAnswersAreTheLibrarys(t *testing.T) {
	syn := newCountSynth(t, 1200)
	rowsFile, groups := filepath.Join(syn.dir, "anat.csv"), filepath.Join(syn.dir, "anat.groups.csv")
	countRun(t, true, "--mechanism", "anatomy", "--sensitive", "s", "--l", "3", "--codebook", syn.cb, "--seed", "4", "--insecure-seed", syn.csv, "-o", rowsFile, "--groups", groups)
	recs := countCSV(t, rowsFile)
	header, rows := recs[0], recs[1:]
	st := countCSV(t, groups)[1:]
	ng := 0
	for _, r := range st {
		g, _ := strconv.Atoi(r[0])
		ng = max(ng, g+1)
	}
	queries := []string{"s=s2", "a=a1,s=s2", "a=a0,b=b2,s=s5", "b=b1"}
	est, _ := countAsk(t, rowsFile, queries)
	for i, q := range queries {
		conds, _ := countquery.Parse(q)
		pred, s := map[string]string{}, ""
		for _, c := range conds {
			if c.Col == "s" {
				s = c.Value
			} else {
				pred[c.Col] = c.Value
			}
		}
		matches, valueCounts, sizes := make([]int64, ng), make([]int64, ng), make([]int64, ng)
		var nP float64
		for _, r := range rows {
			if countBrute(header, r, pred) {
				g, _ := strconv.Atoi(r[slices.Index(header, "group")])
				matches[g]++
				nP++
			}
		}
		for _, r := range st {
			g, _ := strconv.Atoi(r[0])
			c, _ := strconv.ParseInt(r[2], 10, 64)
			sizes[g] += c
			if r[1] == s {
				valueCounts[g] += c
			}
		}
		want := nP
		if s != "" {
			var err error
			if want, err = countquery.AnatomyCount(matches, valueCounts, sizes); err != nil {
				t.Fatal(err)
			}
		}
		if math.Abs(est[i]-want) > 1e-9*math.Max(1, want) {
			t.Errorf("%s: estimate %v, library %v", q, est[i], want)
		}
	}
}

// --truth adds the true counts of the original table, read with the
// release's codebook, and the relative errors.
func TestCountTruthIsTheOriginalCount(t *testing.T) {
	syn := newCountSynth(t, 900)
	pub := filepath.Join(syn.dir, "pub.csv")
	countRun(t, true, "--sensitive", "s,u", "--l", "3", "--codebook", syn.cb, "--seed", "1", "--insecure-seed", syn.csv, "-o", pub)
	out := countRun(t, false, pub, "--query", "a=a2,s=s5,u=u1", "--truth", syn.csv)
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var want int
	for _, r := range syn.rows {
		if r[0] == "a2" && r[2] == "s5" && r[3] == "u1" {
			want++
		}
	}
	est, _ := strconv.ParseFloat(recs[1][1], 64)
	re, _ := strconv.ParseFloat(recs[1][4], 64)
	// The estimate is printed to 2 decimals and the relative error to 4
	// significant digits: allow both roundings.
	if recs[1][3] != strconv.Itoa(want) || math.Abs(re-math.Abs(est-float64(want))/float64(want)) > 0.005/float64(want)+1e-4 {
		t.Errorf("--truth row %v, want true = %d and |est − true|/true", recs[1], want)
	}
}

// Bad input: one line on stderr, a non-zero exit, no output file.
func TestCountBadInputFailsCleanly(t *testing.T) {
	syn := newCountSynth(t, 300)
	pub := filepath.Join(syn.dir, "pub.csv")
	countRun(t, true, "--sensitive", "s", "--l", "3", "--codebook", syn.cb, syn.csv, "-o", pub)
	bad := filepath.Join(syn.dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("query\na=a1,s=s1\nb=b0,s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	edited := filepath.Join(syn.dir, "edited.csv")
	b, _ := os.ReadFile(pub)
	os.WriteFile(edited, b[:bytes.LastIndexByte(b[:len(b)-1], '\n')+1], 0o644)
	m, _ := os.ReadFile(pub + ".meta.json")
	os.WriteFile(edited+".meta.json", m, 0o644)
	cmdtest.BindSidecar(t, edited) // edited by hand, on purpose: reach the row-count check
	out := filepath.Join(syn.dir, "answers.csv")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--query", "c=1,s=s1"}, 1, `query "c=1,s=s1": ` + pub + ` has no column "c" (columns: a, b, s, u)`},
		{[]string{"--query", "a=a1,s=s9"}, 1, `"s9" is not a category of column "s" in the codebook (categories: "s0", "s1", "s2", "s3", "s4", "s5")`},
		{[]string{"--queries", bad}, 1, bad + `: line 3: "s" has no '=': write col=value`},
		{[]string{"--query", "s=s1", "--queries", bad}, 2, "give either --query or --queries"},
		{nil, 2, "ask count queries with --query"},
		{[]string{"--query", "s=s1,"}, 2, "empty condition"},
		{[]string{"--query", "s=s1", "--decoy", "other"}, 2, `--decoy "other": choose exact, paper or paper-fixed`},
		{[]string{"--query", "s=s1", "--groups", "g.csv"}, 2, "--groups applies to anatomy releases only"},
		{[]string{"--query", "s=s1", "--method", "mle"}, 2, "--method applies to gamma-diagonal releases only"},
		{[]string{"--query", "s=s1", "--marginal", "s"}, 2, "--marginal applies to gamma-diagonal releases only"},
		{[]string{"--query", "s=s1", "--truth", pub}, 1, "is a release (mechanism diverted), not the original table"},
	} {
		var so, se bytes.Buffer
		s := &cli.Streams{In: strings.NewReader(""), Out: &so, Err: &se}
		args := append([]string{pub, "-o", out}, tc.args...)
		code := cli.Run(NewCmd(s, nil), args, s)
		if tc.code == 0 { // a case that must succeed
			if code != 0 {
				t.Errorf("%v: exit %d, stderr %q; want success", tc.args, code, se.String())
			}
			os.Remove(out)
			os.Remove(out + ".meta.json")
			continue
		}
		if code != tc.code || !strings.Contains(se.String(), tc.msg) || strings.Count(se.String(), "\n") != 1+boolInt(tc.code == 2) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q on one line", tc.args, code, se.String(), tc.code, tc.msg)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: left %s behind", tc.args, out)
			os.Remove(out)
		}
	}
	var se bytes.Buffer
	s := &cli.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &se}
	if code := cli.Run(NewCmd(s, nil), []string{edited, "--query", "s=s1"}, s); code != 1 || !strings.Contains(se.String(), "but its metadata says N = 300; the release was edited") {
		t.Errorf("edited release: exit %d, %q", code, se.String())
	}
}

// boolInt is 1 for true: usage errors add a line pointing to --help.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// anonymize --missing drop leaves out rows with a missing value in any
// sensitive column; --truth counts the same rows, also when the query
// names only one of those columns.
func TestCountTruthFollowsMissingDrop(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("a,s,u\n")
	want := 0
	r := rng.NewSeeded(8)
	for i := range 600 {
		s, u := fmt.Sprintf("s%d", r.IntN(4)), fmt.Sprintf("u%d", r.IntN(3))
		if i%7 == 0 {
			u = "?"
		}
		if i%11 == 0 {
			s = "?"
		}
		a := fmt.Sprintf("a%d", r.IntN(2))
		if a == "a1" && s == "s2" && u != "?" {
			want++
		}
		fmt.Fprintf(&b, "%s,%s,%s\n", a, s, u)
	}
	in, cb := filepath.Join(dir, "t.csv"), filepath.Join(dir, "cb.json")
	os.WriteFile(in, []byte(b.String()), 0o644)
	os.WriteFile(cb, []byte(`{"columns": [
  {"name": "s", "categories": ["s0", "s1", "s2", "s3"], "missing": "?"},
  {"name": "u", "categories": ["u0", "u1", "u2"], "missing": "?"}
]}`), 0o644)
	pub := filepath.Join(dir, "pub.csv")
	countRun(t, true, "--sensitive", "s,u", "--l", "2", "--missing", "drop", "--codebook", cb, "--seed", "3", "--insecure-seed", in, "-o", pub)
	out := countRun(t, false, pub, "--query", "a=a1,s=s2", "--truth", in)
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if recs[1][3] != strconv.Itoa(want) {
		t.Errorf("true count %s, want %d (rows with u missing left out, as anonymize did)", recs[1][3], want)
	}
}

// TestCountUnknownValueIsAnError: a queried value that is neither a
// codebook category nor in any row of the release is an error naming the
// column and the value and listing the values there are, not a count of 0
// (issue 9, 7e: sex=female, age=25-34 against raw ages).
func TestCountUnknownValueIsAnError(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("age,sex,s\n")
	r := rng.NewSeeded(3)
	for i := range 300 {
		fmt.Fprintf(&b, "%d,%s,s%d\n", 20+r.IntN(40), []string{"Female", "Male"}[i%2], r.IntN(4))
	}
	csvPath := filepath.Join(dir, "t.csv")
	cbPath := filepath.Join(dir, "cb.json")
	os.WriteFile(csvPath, []byte(b.String()), 0o644)
	os.WriteFile(cbPath, []byte(`{"columns": [{"name": "s", "categories": ["s0", "s1", "s2", "s3"]}]}`), 0o644)
	pub := filepath.Join(dir, "pub.csv")
	countRun(t, true, "--sensitive", "s", "--l", "2", "--codebook", cbPath, "--seed", "1", csvPath, "-o", pub)
	bins := filepath.Join(dir, "bins.json")
	os.WriteFile(bins, []byte(`{"columns": [{"name": "age", "labels": ["<25", "25-34", "35+"], "cuts": [25, 35]}]}`), 0o644)

	for _, tc := range []struct {
		args []string
		msg  []string // all on the one line
	}{
		{[]string{"--query", "sex=female,s=s1"}, []string{`query "sex=female,s=s1": column "sex" of ` + pub + ` has no value "female" (its values: "Female", "Male")`, "check the spelling"}},
		{[]string{"--query", "age=25-34"}, []string{`column "age"`, `no value "25-34"`, `(its values: "20", "21",`, ", … and ", " more)", "the column holds raw values", "--codebook"}},
		// The second query of a file is named by its line.
		{[]string{"--queries", "-"}, []string{`-: line 3: query "sex=Male,s=s5"`}},
	} {
		var so, se bytes.Buffer
		s := &cli.Streams{In: strings.NewReader("query\nsex=Male,s=s1\nsex=Male,s=s5\n"), Out: &so, Err: &se}
		out := filepath.Join(dir, "answers.csv")
		code := cli.Run(NewCmd(s, nil), append([]string{pub, "-o", out}, tc.args...), s)
		if tc.args[1] == "-" {
			// s5 is not a codebook category of the sensitive column.
			tc.msg = []string{`"s5" is not a category of column "s"`}
		}
		if code != 1 || strings.Count(se.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and one line", tc.args, code, se.String())
		}
		for _, m := range tc.msg {
			if !strings.Contains(se.String(), m) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, se.String(), m)
			}
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: left %s behind", tc.args, out)
		}
	}
	// Known values: the query runs; a codebook bin without a row counts 0.
	got := countRun(t, false, pub, "--query", "sex=Female,s=s1")
	if !strings.Contains(got, "sex=Female,s=s1") {
		t.Errorf("a known value: %q", got)
	}
	got = countRun(t, false, pub, "--codebook", bins, "--query", "age=25-34")
	if !strings.Contains(got, "age=25-34") {
		t.Errorf("a codebook bin: %q", got)
	}
}

// An Anatomy groups table is read with its codebook item as a digest
// (table.ReadOptions.DigestMeta); one whose item differs from the
// release's is opened again with the text, so that a damaged codebook is
// named in the message, and one whose item is the release's answers as
// before.
func TestCountAnatomyGroupsCodebookDigestAndDamage(t *testing.T) {
	syn := newCountSynth(t, 600)
	rowsFile, groups := filepath.Join(syn.dir, "anat.csv"), filepath.Join(syn.dir, "anat.groups.csv")
	countRun(t, true, "--mechanism", "anatomy", "--sensitive", "s", "--l", "3", "--codebook", syn.cb, "--seed", "4", "--insecure-seed", syn.csv, "-o", rowsFile, "--groups", groups)
	if est, _ := countAsk(t, rowsFile, []string{"s=s2"}); len(est) != 1 {
		t.Fatalf("estimates %v", est)
	}
	side, err := os.ReadFile(groups + ".meta.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Pramkit int               `json:"pramkit"`
		Meta    map[string]string `json:"meta"`
		Data    json.RawMessage   `json:"data"`
	}
	if err := json.Unmarshal(side, &s); err != nil {
		t.Fatal(err)
	}
	s.Meta["codebook"] = `{"columns": [`
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(groups+".meta.json", b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	st := &cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}
	if code := cli.Run(NewCmd(st, nil), []string{"--query", "s=s2", rowsFile}, st); code == 0 || !strings.Contains(errb.String(), "codebook in the metadata is not valid") || !strings.Contains(errb.String(), "ends early") || !strings.Contains(errb.String(), "anat.groups.csv") {
		t.Errorf("a damaged codebook in the groups table: exit %d, %q", code, errb.String())
	}
}
