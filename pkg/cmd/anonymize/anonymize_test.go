package anonymize

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/release"
)

// TestFlagsFillOptions checks flag parsing separately from the run, with a
// stub run function.
func TestFlagsFillOptions(t *testing.T) {
	cases := []struct {
		args []string
		want Options
	}{
		{[]string{"--sensitive", "occupation", "--l", "5", "--codebook", "cb.json", "in.csv", "-o", "out.csv"},
			Options{Sensitive: []string{"occupation"}, L: 5, Codebook: cli.CodebookFlags{Path: "cb.json"}, Input: "in.csv", Output: cli.Output{Path: "out.csv"}}},
		{[]string{"--sensitive", "a,b", "--l=3", "--infer-codebook", "--missing", "drop", "--unknown", "missing"},
			Options{Sensitive: []string{"a", "b"}, L: 3, Codebook: cli.CodebookFlags{Infer: true}, Missing: codebook.MissingDrop, Unknown: codebook.UnknownMissing}},
		{[]string{"--mechanism", "global", "--p", "0.25", "--sensitive", "s"},
			Options{Mechanism: global, P: 0.25, Sensitive: []string{"s"}}},
		{[]string{"--mechanism", "global", "--p", "0.25", "--sensitive", "s", "--keep-order"},
			Options{Mechanism: global, P: 0.25, Sensitive: []string{"s"}, Order: cli.Order{Keep: true}}},
		{[]string{"--mechanism", "anatomy", "--sensitive", "s", "--l", "4", "--groups", "g.csv", "--group-column", "gid"},
			Options{Mechanism: anatomy, Sensitive: []string{"s"}, L: 4, Groups: "g.csv", GroupCol: "gid"}},
		{[]string{"--report", "--json", "--rel-error", "0.3", "--te", "0.05", "--sensitive", "s", "--l", "10"},
			Options{Report: true, JSON: true, RelError: 0.3, TE: 0.05, Sensitive: []string{"s"}, L: 10}},
		{[]string{"--check", "--sensitive", "s", "--seed", "7"},
			Options{Check: true, Sensitive: []string{"s"}, Seed: cli.Seed{Value: 7}}},
	}
	for _, tc := range cases {
		var got *Options
		s := &cli.Streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
		cmd := NewCmd(s, func(o *Options) error { got = o; return nil })
		if code := cli.Run(cmd, tc.args, s); code != 0 {
			t.Fatalf("%v: exit %d", tc.args, code)
		}
		// Defaults not given in the case.
		def := Options{Mechanism: diverted, Grouping: release.GroupingRandom, GroupCol: "group", RelError: 0.2, TE: 0.02}
		for _, f := range []struct {
			zero bool
			set  func()
		}{
			{tc.want.Mechanism == "", func() { tc.want.Mechanism = def.Mechanism }},
			{tc.want.Grouping == "", func() { tc.want.Grouping = def.Grouping }},
			{tc.want.GroupCol == "", func() { tc.want.GroupCol = def.GroupCol }},
			{tc.want.RelError == 0, func() { tc.want.RelError = def.RelError }},
			{tc.want.TE == 0, func() { tc.want.TE = def.TE }},
		} {
			if f.zero {
				f.set()
			}
		}
		got.Streams, got.cmd = nil, nil
		if !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("%v:\n got %+v\nwant %+v", tc.args, *got, tc.want)
		}
	}
}

func TestUsageErrorsExitWithCode2(t *testing.T) {
	for _, args := range [][]string{
		{"--no-such-flag"},
		{"a.csv", "b.csv"},
		{"--l", "5", "a.csv"},                                     // no --sensitive
		{"--sensitive", "s", "a.csv"},                             // no --l
		{"--sensitive", "s", "--l", "1", "a.csv"},                 // ℓ′ < 2
		{"--sensitive", "s,s", "--l", "3", "a.csv"},               // twice
		{"--sensitive", "s", "--l", "3", "--mechanism", "x"},      // unknown mechanism
		{"--sensitive", "s", "--l", "3", "--p", "0.5"},            // --p without global
		{"--sensitive", "s", "--mechanism", "global", "--p", "2"}, // p > 1
		{"--sensitive", "s", "--mechanism", "global", "--p", "1"}, // no privacy
		{"--sensitive", "s", "--mechanism", "global", "--p", "NaN"},
		{"--sensitive", "s", "--mechanism", "global", "--p", "0.5", "--l", "3"},
		{"--sensitive", "s", "--mechanism", "anatomy", "--l", "3"},                    // no --groups
		{"--sensitive", "s,t", "--mechanism", "anatomy", "--l", "3", "--groups", "g"}, // two columns
		{"--sensitive", "s", "--l", "3", "--groups", "g"},                             // --groups without anatomy
		{"--sensitive", "s", "--l", "3", "--check", "-o", "x.csv"},
		{"--sensitive", "s", "--l", "3", "--check", "--report"},
		{"--sensitive", "s", "--l", "3", "--report", "--rel-error", "0"},
		{"--sensitive", "s", "--l", "3", "--report", "--te", "1.5"},
		{"--sensitive", "s", "--l", "3", "--te", "0.1"}, // --te without --report
		{"--sensitive", "s", "--l", "3", "--json"},
		{"--sensitive", "s", "--l", "3", "--mechanism", "global", "--report"},
		{"--sensitive", "s", "--l", "3", "--codebook", "a", "--infer-codebook", "a.csv"},
	} {
		var errOut bytes.Buffer
		s := &cli.Streams{Out: &bytes.Buffer{}, Err: &errOut}
		if code := cli.Run(NewCmd(s, nil), args, s); code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want %d (stderr %q)", args, code, cli.ExitUsage, errOut.String())
		}
		if n := strings.Count(errOut.String(), "\n"); n < 1 || !strings.HasPrefix(errOut.String(), "anonymize: ") {
			t.Errorf("%v: stderr %q, want one anonymize: line", args, errOut.String())
		}
	}
}

// runAnon runs the command in-process; it returns the exit code, stdout
// and stderr.
func runAnon(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	s := &cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}
	code := cli.Run(NewCmd(s, nil), args, s)
	return code, out.String(), errb.String()
}

func mustAnon(t testing.TB, args ...string) (string, string) {
	t.Helper()
	code, out, errs := runAnon(args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errs)
	}
	return out, errs
}

// testTable writes a table with a row-number column "row", a sensitive
// column "s" whose value v occurs counts[v] times (rows in value order,
// so the input order says nothing random), and a column "x" derived from
// the row; and the codebook of s (values v0, v1, …).
func testTable(t testing.TB, counts []int) (dir, csvPath, cb string, truth []int) {
	t.Helper()
	dir = t.TempDir()
	var b strings.Builder
	b.WriteString("row,s,x\n")
	row := 0
	for v, c := range counts {
		for range c {
			fmt.Fprintf(&b, "%d,v%d,x%d\n", row, v, row%7)
			truth = append(truth, v)
			row++
		}
	}
	csvPath = filepath.Join(dir, "in.csv")
	if err := os.WriteFile(csvPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var cats []string
	for v := range counts {
		cats = append(cats, fmt.Sprintf("%q", fmt.Sprintf("v%d", v)))
	}
	cb = filepath.Join(dir, "cb.json")
	if err := os.WriteFile(cb, []byte(`{"columns": [{"name": "s", "categories": [`+strings.Join(cats, ", ")+`]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, csvPath, cb, truth
}

func readCSV(t testing.TB, path string) [][]string {
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

func readMeta(t testing.TB, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path + ".meta.json")
	if err != nil {
		t.Fatal(err)
	}
	var side struct {
		Meta map[string]string `json:"meta"`
	}
	if err := json.Unmarshal(b, &side); err != nil {
		t.Fatal(err)
	}
	return side.Meta
}

// The published table is the input's columns and nothing else: no group
// id, no row id, no key in the metadata about groups; its rows are
// shuffled, not emitted group by group; and each row shows its own value
// with probability 1/ℓ′ (p = q = 1/ℓ′).
func TestDivertedPublishesNoGroupsOrIDs(t *testing.T) {
	const l = 4
	counts := []int{300, 260, 250, 240, 200, 150, 100} // N = 1500, f_max = 300 ≤ N/4
	dir, in, cb, truth := testTable(t, counts)
	out := filepath.Join(dir, "out.csv")
	_, errs := mustAnon(t, "--sensitive", "s", "--l", strconv.Itoa(l), "--codebook", cb, "--seed", "3", "--insecure-seed", in, "-o", out)
	if errs != "anonymize: warning: --insecure-seed: the output is reproducible by anyone who knows the seed; never publish it\n" {
		t.Errorf("stderr %q for a table of N = 1500, a multiple of ℓ′ (only the --insecure-seed warning expected)", errs)
	}
	recs := readCSV(t, out)
	if !slices.Equal(recs[0], []string{"row", "s", "x"}) {
		t.Fatalf("published header %v, want the input's row,s,x", recs[0])
	}
	rows := recs[1:]
	if len(rows) != len(truth) {
		t.Fatalf("%d rows published, want %d", len(rows), len(truth))
	}
	meta := readMeta(t, out)
	// grouping is the design (anatomy or random), public like ℓ′; it says
	// nothing about which rows share a group.
	allowed := []string{"stage", "mechanism", "grouping", "unknown", "missing", "N", "dropped", "sensitive", "codebook", "l", "version", "contract", "order", "insecure_seed"}
	for k := range meta {
		if !slices.Contains(allowed, k) {
			t.Errorf("metadata key %q: the publication says nothing about groups or ids", k)
		}
	}
	if meta["mechanism"] != "diverted" || meta["l"] != "4" || meta["N"] != "1500" || meta["dropped"] != "0" || meta["sensitive"] != `["s"]` {
		t.Errorf("metadata %v", meta)
	}
	// Emitted group by group, every block of ℓ′ consecutive rows would
	// hold ℓ′ distinct true values; shuffled, a block does so with
	// probability about 0.3 here, so (1/0.3)^-375 rules it out.
	blocksDistinct := 0
	equal := 0
	inOrder := 0
	for i := 0; i+l <= len(rows); i += l {
		seen := map[int]bool{}
		for _, r := range rows[i : i+l] {
			id, _ := strconv.Atoi(r[0])
			seen[truth[id]] = true
		}
		if len(seen) == l {
			blocksDistinct++
		}
	}
	for i, r := range rows {
		id, _ := strconv.Atoi(r[0])
		if id == i {
			inOrder++
		}
		if r[1] == fmt.Sprintf("v%d", truth[id]) {
			equal++
		}
		if r[2] != fmt.Sprintf("x%d", id%7) {
			t.Fatalf("row %s: non-sensitive value %q changed", r[0], r[2])
		}
	}
	if blocksDistinct == len(rows)/l {
		t.Errorf("every block of %d consecutive rows holds %d distinct values: rows emitted in group order", l, l)
	}
	if inOrder > 20 {
		t.Errorf("%d rows at their input position: not shuffled", inOrder)
	}
	// Each row publishes its own value with probability 1/ℓ′, whatever
	// the value (Fact 1 with p = q); the rows are independent given the
	// groups, so the count is Binomial(N, 1/ℓ′).
	stattest.AssertBinomial(t, "rows publishing their true value", int64(equal), int64(len(rows)), 1.0/l, 1e-6) // false alarm 1e-6
}

// Theorem 3 through the command: the published count of each value is
// Binomial(ℓ′f_s, 1/ℓ′), unbiased; over R independent releases the total is
// Binomial(Rℓ′f_s, 1/ℓ′). A label mapped to the wrong index would move the
// counts by whole f_s.
func TestDivertedCountsAreUnbiased(t *testing.T) {
	const l, runs = 3, 200
	counts := []int{20, 15, 15, 10, 6, 6, 3} // N = 75
	dir, in, cb, _ := testTable(t, counts)
	out := filepath.Join(dir, "out.csv")
	total := make([]int64, len(counts))
	for run := range runs {
		mustAnon(t, "--sensitive", "s", "--l", strconv.Itoa(l), "--codebook", cb, "--seed", strconv.Itoa(run), "--insecure-seed", in, "-o", out)
		for _, r := range readCSV(t, out)[1:] {
			v, _ := strconv.Atoi(strings.TrimPrefix(r[1], "v"))
			total[v]++
		}
	}
	for v, f := range counts {
		stattest.AssertBinomial(t, fmt.Sprintf("published count of v%d", v), total[v], int64(runs*l*f), 1.0/l, 1e-6) // false alarm 1e-6 each
	}
}

// N mod ℓ′ rows are left out, chosen at random, and reported.
func TestDivertedDropsFewerThanL(t *testing.T) {
	counts := []int{20, 20, 20, 20, 13} // N = 93, f_max ≤ 93/4
	dir, in, cb, _ := testTable(t, counts)
	out := filepath.Join(dir, "out.csv")
	hits := map[string]int{}
	for run := range 60 {
		_, errs := mustAnon(t, "--sensitive", "s", "--l", "4", "--codebook", cb, "--seed", strconv.Itoa(run), "--insecure-seed", in, "-o", out)
		if !strings.Contains(errs, "left out 1 row chosen at random so that N = 92 is a multiple of ℓ′ = 4") {
			t.Fatalf("stderr %q", errs)
		}
		meta := readMeta(t, out)
		if meta["N"] != "92" || meta["dropped"] != "1" {
			t.Fatalf("metadata N = %s, dropped = %s", meta["N"], meta["dropped"])
		}
		present := map[string]bool{}
		for _, r := range readCSV(t, out)[1:] {
			present[r[0]] = true
		}
		for i := range 93 {
			if !present[strconv.Itoa(i)] {
				hits[strconv.Itoa(i)]++
			}
		}
	}
	// 60 draws of one row among 93: a fixed choice would hit one row 60
	// times; uniform draws hit any row more than 8 times with probability
	// below 93·P(Binomial(60, 1/93) > 8) < 1e-8.
	for row, n := range hits {
		if n > 8 {
			t.Errorf("row %s left out in %d of 60 releases: not a random choice", row, n)
		}
	}
}

// Anatomy's two tables: every group has ℓ rows in the row table and ℓ
// distinct values with count 1 in the sensitive table, which are exactly
// the true values of its rows.
func TestAnatomyTablesDescribeTheGroups(t *testing.T) {
	const l = 3
	counts := []int{40, 35, 30, 20, 10, 9} // N = 144
	dir, in, cb, truth := testTable(t, counts)
	out, groups := filepath.Join(dir, "rows.csv"), filepath.Join(dir, "groups.csv")
	mustAnon(t, "--mechanism", "anatomy", "--sensitive", "s", "--l", strconv.Itoa(l), "--codebook", cb, "--seed", "5", "--insecure-seed", in, "-o", out, "--groups", groups)
	recs := readCSV(t, out)
	if !slices.Equal(recs[0], []string{"row", "x", "group"}) {
		t.Fatalf("row table header %v, want row,x,group (the sensitive column left out)", recs[0])
	}
	trueValues := map[int][]string{}
	for _, r := range recs[1:] {
		g, _ := strconv.Atoi(r[2])
		id, _ := strconv.Atoi(r[0])
		trueValues[g] = append(trueValues[g], fmt.Sprintf("v%d", truth[id]))
	}
	st := map[int][]string{}
	for _, r := range readCSV(t, groups)[1:] {
		g, _ := strconv.Atoi(r[0])
		if r[2] != "1" {
			t.Errorf("group %d: value %s counted %s times, want 1", g, r[1], r[2])
		}
		st[g] = append(st[g], r[1])
	}
	if len(trueValues) != 144/l || len(st) != 144/l {
		t.Fatalf("%d groups in the rows, %d in the sensitive table, want %d", len(trueValues), len(st), 144/l)
	}
	for g, vals := range trueValues {
		slices.Sort(vals)
		if len(slices.Compact(slices.Clone(vals))) != l || !slices.Equal(vals, slices.Sorted(slices.Values(st[g]))) {
			t.Errorf("group %d: rows hold %v, sensitive table says %v", g, vals, st[g])
		}
	}
	rm, gm := readMeta(t, out), readMeta(t, groups)
	if rm["release_id"] == "" || rm["release_id"] != gm["release_id"] || rm["groups"] != "48" || gm["table"] != "anatomy-groups" {
		t.Errorf("metadata: rows %v, groups %v", rm, gm)
	}
}

// Mechanism A keeps the value with probability p, else draws uniformly
// from the V codebook values: a row shows its own value with probability
// p + (1 − p)/V. --keep-order lets each published row be compared with its
// input row.
func TestGlobalRetention(t *testing.T) {
	counts := []int{300, 300, 300, 300, 300} // V = 5
	dir, in, cb, truth := testTable(t, counts)
	for _, tc := range []struct {
		args   []string
		retain float64
	}{
		{[]string{"--p", "0.5"}, 0.5 + 0.5/5},
		{[]string{"--l", "2"}, 0.5}, // retention 1/ℓ′
		{[]string{"--p", "0"}, 0.2},
	} {
		out := filepath.Join(dir, "out.csv")
		mustAnon(t, append([]string{"--mechanism", "global", "--keep-order", "--sensitive", "s", "--codebook", cb, "--seed", "9", "--insecure-seed", in, "-o", out}, tc.args...)...)
		recs := readCSV(t, out)[1:]
		if got := readMeta(t, out)["order"]; got != "input" {
			t.Errorf("--keep-order: metadata order %q, want input", got)
		}
		var same int64
		for i, r := range recs {
			if r[0] != strconv.Itoa(i) {
				t.Fatalf("global --keep-order reordered the rows (row %d is %s)", i, r[0])
			}
			if r[1] == fmt.Sprintf("v%d", truth[i]) {
				same++
			}
		}
		stattest.AssertBinomial(t, fmt.Sprintf("global %v: rows keeping their value", tc.args), same, int64(len(recs)), tc.retain, 1e-6) // false alarm 1e-6
	}
}

// The paper's Example 1 (T_E = 0.02, ℓ′ = 10, ε = 0.2 → T_f = 11.2, printed
// 11) and Example 2 (f_s = 5, ℓ′ = 10, ε = 0.3 → probability ≈ 0.48 of a
// larger error) through --report --json.
func TestReportReproducesTheExamples(t *testing.T) {
	counts := slices.Repeat([]int{5}, 10) // ten values of frequency 5, N = 50 = 10·5
	_, in, cb, _ := testTable(t, counts)
	out, _ := mustAnon(t, "--report", "--json", "--sensitive", "s", "--l", "10", "--rel-error", "0.2", "--te", "0.02", "--codebook", cb, in)
	var rep reportJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if math.Abs(rep.Tf-math.Sqrt(125)) > 1e-9 || math.Round(rep.Tf) != 11 {
		t.Errorf("T_f = %v, want √125 ≈ 11.18 (Example 1: 11)", rep.Tf)
	}
	out, _ = mustAnon(t, "--report", "--json", "--sensitive", "s", "--l", "10", "--rel-error", "0.3", "--codebook", cb, in)
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	// 1 − Σ_{x=4}^{6} C(50, x) 0.1^x 0.9^(50−x), computed independently.
	want := 1.0
	for x := 4; x <= 6; x++ {
		lc, _ := math.Lgamma(51)
		a, _ := math.Lgamma(float64(x + 1))
		b, _ := math.Lgamma(float64(51 - x))
		want -= math.Exp(lc - a - b + float64(x)*math.Log(0.1) + float64(50-x)*math.Log(0.9))
	}
	if len(rep.Columns) != 1 || len(rep.Columns[0].Values) != 10 {
		t.Fatalf("report %+v", rep)
	}
	for _, v := range rep.Columns[0].Values {
		if v.Count != 5 || math.Abs(v.Privacy-want) > 1e-9 || math.Abs(v.Privacy-0.48) > 0.01 {
			t.Errorf("%s: count %d, privacy %v, want %v ≈ 0.48 (Example 2)", v.Value, v.Count, v.Privacy, want)
		}
		if v.Useful { // f_s = 5 < T_f = 1/√(10·0.09·0.02) ≈ 7.45
			t.Errorf("%s: f_s = 5 marked useful below T_f", v.Value)
		}
	}
}

// --check says whether the table is eligible and the largest feasible ℓ′,
// and fails (exit 1) when it is not.
func TestCheck(t *testing.T) {
	counts := []int{40, 30, 20, 10} // N = 100, f_max = 40: ℓ′ ≤ 2
	_, in, cb, _ := testTable(t, counts)
	out, _ := mustAnon(t, "--check", "--json", "--sensitive", "s", "--l", "2", "--codebook", cb, in)
	if !strings.Contains(out, `"largest_l":2,"eligible":true`) {
		t.Errorf("--check --l 2: %s", out)
	}
	code, out, errs := runAnon("--check", "--sensitive", "s", "--l", "3", "--codebook", cb, in)
	if code != cli.ExitFailure || !strings.Contains(out, "no") ||
		errs != "anonymize: "+in+": s is not eligible for ℓ′ = 3: \"v0\" occurs 40 times in 100 rows, more than N/ℓ′ = 33; the largest feasible ℓ′ is 2 (check with --check)\n" {
		t.Errorf("--check --l 3: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// codes keeps values in the narrowest width and widens without losing
// any, at 256 and 65 536 distinct values.
func TestCodesWiden(t *testing.T) {
	c := newCodes(4)
	var want []uint32
	for i := range uint32(70000) {
		k := i
		if i%3 == 0 {
			k = i / 2
		}
		c.append(k)
		want = append(want, k)
		switch {
		case i == 255 && c.w != 1, i == 256 && c.w != 2, i == 65535 && c.w != 2, i == 65536 && c.w != 4:
			t.Fatalf("after code %d the width is %d", i, c.w)
		}
	}
	for i, k := range want {
		if got := c.at(uint32(i)); got != k {
			t.Fatalf("row %d: code %d, want %d", i, got, k)
		}
	}
}

// Integer cells (Parquet int columns) are interned by value, with the same
// code and text as the decimal string a CSV column would hold; nulls read
// as "".
func TestInternerIntegersAndStrings(t *testing.T) {
	in := newInterner()
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	ib.AppendValues([]int64{39, 50, 39}, nil)
	ib.AppendNull()
	ints := ib.NewArray()
	defer ints.Release()
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	sb.AppendValues([]string{"50", "x", ""}, nil)
	strs := sb.NewArray()
	defer strs.Release()
	var got []uint32
	c := in.column(ints)
	for i := range ints.Len() {
		k, _ := c.code(i)
		got = append(got, k)
	}
	c = in.column(strs)
	for i := range strs.Len() {
		k, _ := c.code(i)
		got = append(got, k)
	}
	if want := []uint32{0, 1, 0, 2, 1, 3, 2}; !slices.Equal(got, want) {
		t.Errorf("codes %v, want %v", got, want)
	}
	if want := []string{"39", "50", "", "x"}; !slices.Equal(in.values, want) {
		t.Errorf("values %q, want %q", in.values, want)
	}
}
