package anonymize

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/cli"
)

// runBatched runs anonymize reading batchSize rows per input batch (0:
// the default), with stdin as standard input, and returns standard output.
func runBatched(t *testing.T, batchSize int, stdin []byte, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	s := &cli.Streams{In: bytes.NewReader(stdin), Out: &out, Err: &errb}
	cmd := NewCmd(s, func(o *Options) error { o.batchSize = batchSize; return run(o) })
	if code := cli.Run(cmd, args, s); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errb.String())
	}
	return out.String()
}

// TestDivertedSameAtAnyBatchSize: a seeded A′ run draws its randomness in
// row order, from streams that do not depend on how the input is cut into
// batches: the output is byte for byte the same at batch sizes 1, 7, 1000
// and the default, for both groupings, shuffled or not, and the same from
// standard input (spooled) as from the file.
func TestDivertedSameAtAnyBatchSize(t *testing.T) {
	_, in, cb, _ := testTable(t, []int{300, 260, 250, 240, 200, 150, 101}) // N = 1501: one row dropped
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"anatomy", "random"} {
		for _, order := range [][]string{nil, {"--keep-order"}} {
			args := append([]string{"--sensitive", "s", "--l", "4", "--grouping", g, "--codebook", cb, "--seed", "9", "--insecure-seed"}, order...)
			want := runBatched(t, 0, nil, append(args, in)...)
			if !strings.Contains(want, "row,s,x") {
				t.Fatalf("output %.100q", want)
			}
			for _, bs := range []int{1, 7, 1000} {
				if got := runBatched(t, bs, nil, append(args, in)...); got != want {
					t.Errorf("%s %v: batches of %d rows give another output than the default", g, order, bs)
				}
			}
			if got := runBatched(t, 7, data, args...); got != want {
				t.Errorf("%s %v: standard input gives another output than the file", g, order)
			}
		}
	}
}

// TestRandomGroupingRowLaw: with --grouping random, each row publishes its
// true value with probability 1/ℓ′ (given the groups, each row's draw is
// uniform over its group's ℓ′ distinct values, so the number of rows that
// publish their own value in one run is Binomial(N, 1/ℓ′) and independent
// across runs), and each value's published count is unbiased (E f′_s =
// f_s: the ℓ′ rows of each group holding s publish s with probability
// 1/ℓ′ each). 200 runs of N = 1500 rows at ℓ′ = 4; false-alarm rate 1e-4
// for the binomial test and 1e-4 per value for the means (z-test on the
// 200 runs with the sample standard deviation).
func TestRandomGroupingRowLaw(t *testing.T) {
	const l, runs = 4, 200
	counts := []int{300, 260, 250, 240, 200, 150, 100}
	dir, in, cb, truth := testTable(t, counts)
	var own, total int64
	pubCounts := make([][]float64, len(counts))
	for run := range runs {
		out := filepath.Join(dir, "out.csv")
		mustAnon(t, "--sensitive", "s", "--l", strconv.Itoa(l), "--grouping", "random", "--keep-order", "--codebook", cb,
			"--seed", strconv.Itoa(run), "--insecure-seed", in, "-o", out)
		recs := readCSV(t, out)[1:]
		if len(recs) != len(truth) {
			t.Fatalf("%d rows published, want %d", len(recs), len(truth))
		}
		c := make([]float64, len(counts))
		for _, rec := range recs {
			row, _ := strconv.Atoi(rec[0])
			v, _ := strconv.Atoi(strings.TrimPrefix(rec[1], "v"))
			if v == truth[row] {
				own++
			}
			total++
			c[v]++
		}
		for v := range counts {
			pubCounts[v] = append(pubCounts[v], c[v])
		}
	}
	stattest.AssertBinomial(t, "rows publishing their true value", own, total, 1.0/l, 1e-4)
	for v, f := range counts {
		var mean, ss float64
		for _, x := range pubCounts[v] {
			mean += x
		}
		mean /= runs
		for _, x := range pubCounts[v] {
			ss += (x - mean) * (x - mean)
		}
		sd := math.Sqrt(ss / (runs - 1))
		stattest.AssertMean(t, fmt.Sprintf("published count of v%d", v), mean, float64(f), sd, runs, 1e-4)
	}
}

// TestGroupingRecordedAndChecked: the metadata records the grouping
// (random by default for A′, anatomy for --mechanism anatomy); an unknown
// grouping and --grouping with global are usage errors.
func TestGroupingRecordedAndChecked(t *testing.T) {
	dir, in, cb, _ := testTable(t, []int{30, 30, 30, 30})
	for _, g := range []string{"anatomy", "random"} {
		out := filepath.Join(dir, g+".csv")
		mustAnon(t, "--sensitive", "s", "--l", "3", "--grouping", g, "--codebook", cb, in, "-o", out)
		if got := readMeta(t, out)["grouping"]; got != g {
			t.Errorf("--grouping %s: metadata grouping %q", g, got)
		}
	}
	out := filepath.Join(dir, "default.csv")
	mustAnon(t, "--sensitive", "s", "--l", "3", "--codebook", cb, in, "-o", out)
	if got := readMeta(t, out)["grouping"]; got != "random" {
		t.Errorf("default: metadata grouping %q, want random", got)
	}
	out = filepath.Join(dir, "anatomy-default.csv")
	mustAnon(t, "--mechanism", "anatomy", "--sensitive", "s", "--l", "3", "--codebook", cb, in, "-o", out, "--groups", filepath.Join(dir, "g.csv"))
	if got := readMeta(t, out)["grouping"]; got != "anatomy" {
		t.Errorf("--mechanism anatomy, default: metadata grouping %q, want anatomy", got)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--grouping", "greedy", "--l", "3"}, `unknown --grouping "greedy": choose anatomy or random`},
		{[]string{"--grouping", "random", "--mechanism", "global", "--p", "0.5"}, "--grouping belongs to --mechanism diverted or anatomy"},
	} {
		code, _, errs := runAnon(append(append([]string{"--sensitive", "s", "--codebook", cb}, c.args...), in, "-o", filepath.Join(dir, "x.csv"))...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}

// TestAnatomyGroupsEveryWay: for both groupings, shuffled (streaming) and
// --keep-order (in memory, Anatomy's grouping), every group of the
// sensitive table has ℓ distinct values with count 1, which are exactly
// the true values of the rows that carry its id.
func TestAnatomyGroupsEveryWay(t *testing.T) {
	const l = 3
	counts := []int{40, 35, 30, 20, 10, 9, 1} // N = 145: one row dropped
	dir, in, cb, truth := testTable(t, counts)
	for _, c := range [][]string{{"--grouping", "anatomy"}, {"--grouping", "random"}, {"--keep-order"}} {
		out, groups := filepath.Join(dir, "rows.csv"), filepath.Join(dir, "groups.csv")
		mustAnon(t, append([]string{"--mechanism", "anatomy", "--sensitive", "s", "--l", strconv.Itoa(l), "--codebook", cb, "--seed", "5", "--insecure-seed", in, "-o", out, "--groups", groups}, c...)...)
		rowsOf := map[string][]string{}
		for _, r := range readCSV(t, out)[1:] {
			id, _ := strconv.Atoi(r[0])
			rowsOf[r[2]] = append(rowsOf[r[2]], fmt.Sprintf("v%d", truth[id]))
		}
		st := map[string][]string{}
		for _, r := range readCSV(t, groups)[1:] {
			if r[2] != "1" {
				t.Errorf("%v: group %s: value %s counted %s times, want 1", c, r[0], r[1], r[2])
			}
			st[r[0]] = append(st[r[0]], r[1])
		}
		if len(rowsOf) != 144/l || len(st) != 144/l {
			t.Fatalf("%v: %d groups in the rows, %d in the sensitive table, want %d", c, len(rowsOf), len(st), 144/l)
		}
		for g, vals := range rowsOf {
			slices.Sort(vals)
			if len(slices.Compact(slices.Clone(vals))) != l || !slices.Equal(vals, slices.Sorted(slices.Values(st[g]))) {
				t.Errorf("%v: group %s: rows hold %v, sensitive table says %v", c, g, vals, st[g])
			}
		}
		want := "anatomy"
		if c[0] == "--grouping" {
			want = c[1]
		}
		if got := readMeta(t, out)["grouping"]; got != want {
			t.Errorf("%v: metadata grouping %q, want %q", c, got, want)
		}
	}
	code, _, errs := runAnon("--mechanism", "anatomy", "--keep-order", "--grouping", "random", "--sensitive", "s", "--l", "3", "--codebook", cb, in,
		"-o", filepath.Join(dir, "k.csv"), "--groups", filepath.Join(dir, "kg.csv"))
	if code != 2 || !strings.Contains(errs, "--keep-order") {
		t.Errorf("anatomy --keep-order --grouping random: exit %d, %q; want a usage error", code, errs)
	}
}

// TestAnatomyPairsRowsAtRandom: the streaming Anatomy puts a value's rows
// into its groups by a uniformly random bijection, as random ids do. Rows
// 0, 1 hold v0 and rows 2, 3 hold v1, ℓ = 2: row 0 shares its group with
// row 2 with probability 1/2 (numbering in input order would always pair
// the first rows), and has group id 0 with probability 1/2. 400 seeded
// runs; binomial tests with false-alarm rate 1e-6 each.
func TestAnatomyPairsRowsAtRandom(t *testing.T) {
	dir, in, cb, _ := testTable(t, []int{2, 2})
	out, groups := filepath.Join(dir, "rows.csv"), filepath.Join(dir, "groups.csv")
	const runs = 400
	var paired, first int64
	for run := range runs {
		mustAnon(t, "--mechanism", "anatomy", "--sensitive", "s", "--l", "2", "--codebook", cb, "--seed", strconv.Itoa(run), "--insecure-seed", in, "-o", out, "--groups", groups)
		group := map[string]string{}
		for _, r := range readCSV(t, out)[1:] {
			group[r[0]] = r[2]
		}
		if group["0"] == group["2"] {
			paired++
		}
		if group["0"] == "0" {
			first++
		}
	}
	stattest.AssertBinomial(t, "row 0 grouped with row 2", paired, runs, 0.5, 1e-6)
	stattest.AssertBinomial(t, "row 0 in group 0", first, runs, 0.5, 1e-6)
}

// TestDivertedLateOutput: A′ creates its output only after pass 2
// (createLate), but a destination Create refuses is still refused, with
// Create's message, and a run leaves in the folder its output and sidecar
// and nothing else (the early check's partial file is gone).
func TestDivertedLateOutput(t *testing.T) {
	dir, in, cb, _ := testTable(t, []int{30, 30, 30, 30, 20, 20})
	for _, tc := range []struct{ out, want string }{
		{dir, "is a folder"},
		{in, in},
		{filepath.Join(dir, "no", "such", "out.csv"), "cannot create the output"},
	} {
		code, _, errs := runAnon("--sensitive", "s", "--l", "3", "--codebook", cb, "--seed", "1", in, "-o", tc.out)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("-o %s: exit %d, stderr %q, want a failure naming %q", tc.out, code, errs, tc.want)
		}
	}
	for _, format := range []string{"csv", "parquet"} {
		out := filepath.Join(dir, "out."+format)
		mustAnon(t, "--sensitive", "s", "--l", "3", "--codebook", cb, "--seed", "1", in, "-o", out)
	}
	names := fileNames(t, dir)
	if want := []string{"cb.json", "in.csv", "out.csv", "out.csv.meta.json", "out.parquet"}; !slices.Equal(names, want) {
		t.Errorf("the folder holds %v, want %v", names, want)
	}
}

// TestAnatomyLateOutputs: --mechanism anatomy creates its two tables only
// after pass 2 (the sensitive table once the rows are numbered, the row
// table after it), but a destination Create refuses, for either table or
// both the same, is still refused before any is written, with Create's
// message; a refused run leaves neither table, and a run leaves in the
// folder its two tables and their sidecars and nothing else, and nothing
// in $TMPDIR (the sets kept there between the passes are gone).
func TestAnatomyLateOutputs(t *testing.T) {
	dir, in, cb, _ := testTable(t, []int{30, 30, 30, 30, 20, 20})
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	out, groups := filepath.Join(dir, "out.csv"), filepath.Join(dir, "g.csv")
	for _, tc := range []struct{ out, groups, want string }{
		{dir, groups, "is a folder"},
		{out, dir, "is a folder"},
		{in, groups, in},
		{out, in, in},
		{out, out, "name the same file"},
		{filepath.Join(dir, "no", "such", "out.csv"), groups, "cannot create the output"},
		{out, filepath.Join(dir, "no", "such", "g.csv"), "g.csv"},
	} {
		code, _, errs := runAnon("--mechanism", "anatomy", "--sensitive", "s", "--l", "3", "--codebook", cb, "--seed", "1", in, "-o", tc.out, "--groups", tc.groups)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("-o %s --groups %s: exit %d, stderr %q, want a failure naming %q", tc.out, tc.groups, code, errs, tc.want)
		}
		for _, p := range []string{out, groups} {
			if _, err := os.Stat(p); err == nil {
				t.Fatalf("-o %s --groups %s: %s was written", tc.out, tc.groups, p)
			}
		}
	}
	for _, format := range []string{"csv", "parquet"} {
		mustAnon(t, "--mechanism", "anatomy", "--sensitive", "s", "--l", "3", "--codebook", cb, "--seed", "1", in,
			"-o", filepath.Join(dir, "out."+format), "--groups", filepath.Join(dir, "g."+format))
	}
	names := fileNames(t, dir)
	if want := []string{"cb.json", "g.csv", "g.csv.meta.json", "g.parquet", "in.csv", "out.csv", "out.csv.meta.json", "out.parquet"}; !slices.Equal(names, want) {
		t.Errorf("the folder holds %v, want %v", names, want)
	}
	if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 0 {
		t.Errorf("$TMPDIR holds %v (%v), want nothing", ents, err)
	}
}

// fileNames lists the names in dir, sorted.
func fileNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestSetSpillReadsBackEachSet: the sets kept in a temporary file between
// the passes read back as Plan.EachSet gave them (values' labels, first
// group, groups), and remove leaves nothing.
func TestSetSpillReadsBackEachSet(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	label := func(v int) string { return strings.Repeat("é", v%3) + strconv.Itoa(v) }
	for _, g := range anonymize.Groupings {
		p, err := anonymize.NewPlan([]int{40}, 4, g)
		if err != nil {
			t.Fatal(err)
		}
		p.DivertOnly()
		p.KeepGroupBase()
		r := rand.New(rand.NewPCG(1, 2))
		for i := range 4001 {
			if err := p.Count([]uint32{uint32(i*i) % 40}, r); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Finish(r); err != nil {
			t.Fatal(err)
		}
		type set struct {
			labels       []string
			base, groups int64
		}
		var want, got []set
		p.EachSet(0, func(_ int, vals []uint32, base, groups int64) error {
			var labels []string
			for _, v := range vals {
				labels = append(labels, label(int(v)))
			}
			want = append(want, set{labels, base, groups})
			return nil
		})
		s, err := spillSets(p, 4, label)
		if err != nil {
			t.Fatal(err)
		}
		err = s.each(func(ty int, labels []string, base, groups int64) error {
			if ty != len(got) {
				t.Fatalf("type %d after %d", ty, len(got))
			}
			got = append(got, set{slices.Clone(labels), base, groups})
			return nil
		})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: read back %v (%v), want %v", g, got, err, want)
		}
		s.remove()
		if ents, _ := os.ReadDir(os.TempDir()); len(ents) != 0 {
			t.Fatalf("%s: $TMPDIR holds %v after remove", g, ents)
		}
	}
}
