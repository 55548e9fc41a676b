package perturb

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/cli"
)

// Library-level distribution tests of the mechanisms are in pkg/bitflip
// (TestFlipsHappenWithProbabilityQPerBit, TestFlipsAreIndependentAcrossBitsAndRows,
// TestEpsilonMatchesHandValues) and pkg/ddps. The tests here check the
// command: how columns become bits, what the release holds, and that the
// randomness reaches every output column as the mechanism says.

// newPerturb builds the command as Main does.
func newPerturb(s *cli.Streams) *cobra.Command { return NewCmd(s, nil) }

// mustPerturb runs the command and fails the test on a non-zero exit.
func mustPerturb(t *testing.T, args ...string) {
	t.Helper()
	if res := cmdtest.Run(newPerturb, nil, args...); res.Code != 0 {
		t.Fatalf("perturb %s: exit %d: %s", strings.Join(args, " "), res.Code, res.Stderr)
	}
}

const testCodebook = `{"columns": [
  {"name": "sex", "categories": ["Female", "Male"]},
  {"name": "color", "categories": ["red", "green", "blue"]},
  {"name": "job", "categories": ["Sales", "Tech", "Craft"], "missing": "?"}
]}`

// testInputs writes the test codebook and a table into a new folder and
// returns the folder and their paths.
func testInputs(t *testing.T, name, table string) (dir, cb, in string) {
	t.Helper()
	dir = t.TempDir()
	return dir, cmdtest.WriteFile(t, dir, "cb.json", testCodebook), cmdtest.WriteFile(t, dir, name, table)
}

// peopleCSV is a table of n rows cycling through known values: sex, color,
// a 0/1 flag, job.
func peopleCSV(n int) string {
	var b strings.Builder
	b.WriteString("id,sex,color,flag,job\n")
	sexes := []string{"Female", "Male", "Male"}
	colors := []string{"red", "green", "blue", "blue"}
	jobs := []string{"Sales", "Tech", "Craft", "?", "Tech"}
	for i := range n {
		fmt.Fprintf(&b, "p%d,%s,%s,%d,%s\n", i, sexes[i%3], colors[i%4], i%2, jobs[i%5])
	}
	return b.String()
}

// parseFlags parses args with a stub run function and returns the options.
func parseFlags(t *testing.T, args ...string) *Options {
	t.Helper()
	var got *Options
	s := &cli.Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}
	cmd := NewCmd(s, func(o *Options) error { got = o; return nil })
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestBitflipFlagsParse(t *testing.T) {
	got := parseFlags(t, "--mechanism", "bitflip", "--lie", "0.2", "--columns", "sex,color", "--codebook", "cb.json", "in.csv", "-o", "out.parquet")
	if got.Mechanism != "bitflip" || got.bitflipOpts().Lie != 0.2 || !reflect.DeepEqual(got.Columns, []string{"sex", "color"}) ||
		got.Codebook != "cb.json" || !reflect.DeepEqual(got.Inputs, []string{"in.csv"}) || got.Output.Path != "out.parquet" {
		t.Errorf("parsed %+v", got)
	}
}

func TestBitflipReleaseLayoutAndMetadata(t *testing.T) {
	dir, cb, in := testInputs(t, "people.csv", peopleCSV(12))
	out := filepath.Join(dir, "out.csv")
	mustPerturb(t, "--mechanism", "bitflip", "--lie", "0.2", "--columns", "sex,color,flag,job", "--codebook", cb, "--seed", "1", "--insecure-seed", in, "-o", out)
	names, rows, meta := cmdtest.ReadTable(t, out)

	// sex has 2 categories: one bit, 1 = Male. color and job are one-hot
	// (job with its missing category ?). flag is not in the codebook: 0/1.
	wantNames := []string{"sex=Male", "color=red", "color=green", "color=blue", "flag=1", "job=Sales", "job=Tech", "job=Craft", "job=?"}
	if !reflect.DeepEqual(names, wantNames) {
		t.Errorf("columns %v, want %v", names, wantNames)
	}
	if len(rows) != 12 {
		t.Errorf("%d rows, want 12", len(rows))
	}
	for _, row := range rows {
		for _, c := range row {
			if c != "0" && c != "1" {
				t.Fatalf("cell %q is not 0/1", c)
			}
		}
	}
	ln4 := math.Log(4) // ε per bit at q = 0.2: ln(0.8/0.2)
	checks := map[string]float64{
		"lie": 0.2, "bits": 9, "epsilon_per_bit": ln4, "epsilon_per_record": 9 * ln4,
		// valid rows differ in at most 1 (sex) + 2 (color) + 1 (flag) + 2 (job) bits
		"epsilon_encoded": 6 * ln4,
	}
	for k, want := range checks {
		got, err := meta.Float(k, "")
		if err != nil || math.Abs(got-want) > 1e-12 {
			t.Errorf("metadata %s = %v (%v), want %v", k, got, err, want)
		}
	}
	if meta["mechanism"] != "bitflip" || meta["stage"] != "perturb" {
		t.Errorf("mechanism %q, stage %q", meta["mechanism"], meta["stage"])
	}
	// The layout as estimate reads it: each column's kind, categories and
	// bit columns (bitflip.Layout's JSON form).
	wantLayout := `[{"name":"sex","kind":"binary","labels":["Female","Male"],"bits":["sex=Male"]},` +
		`{"name":"color","kind":"one-hot","labels":["red","green","blue"],"bits":["color=red","color=green","color=blue"]},` +
		`{"name":"flag","kind":"binary","labels":["0","1"],"bits":["flag=1"]},` +
		`{"name":"job","kind":"one-hot","labels":["Sales","Tech","Craft","?"],"bits":["job=Sales","job=Tech","job=Craft","job=?"]}]`
	if meta["layout"] != wantLayout {
		t.Errorf("layout %s\nwant %s", meta["layout"], wantLayout)
	}
	var cbMeta struct {
		Columns []struct{ Name string } `json:"columns"`
	}
	if err := json.Unmarshal([]byte(meta["codebook"]), &cbMeta); err != nil || len(cbMeta.Columns) != 3 {
		t.Errorf("codebook metadata %s (%v): want the 3 codebook columns used", meta["codebook"], err)
	}
}

// encodeRow is the bit vector of row i of peopleCSV for --columns
// sex,color,flag,job (the order of TestBitflipReleaseLayoutAndMetadata).
func encodeRow(i int) []int {
	bits := make([]int, 9)
	if i%3 != 0 {
		bits[0] = 1 // Male
	}
	bits[1+[]int{0, 1, 2, 2}[i%4]] = 1
	bits[4] = i % 2
	bits[5+[]int{0, 1, 2, 3, 1}[i%5]] = 1
	return bits
}

// The command must flip every output column with probability q, and flips
// of different columns must be independent: a bug that wrote one random bit
// to two columns, or a bit to the wrong column, fails here.
func TestBitflipCommandFlipsEachBitWithProbabilityQIndependently(t *testing.T) {
	const (
		n     = 20000
		q     = 0.2
		alpha = 1e-6 // per check; 9 binomial + 8 chi-square checks
	)
	dir, cb, in := testInputs(t, "people.csv", peopleCSV(n))
	out := filepath.Join(dir, "out.parquet")
	mustPerturb(t, "--mechanism", "bitflip", "--lie", "0.2", "--columns", "sex,color,flag,job", "--codebook", cb, "--seed", "7", "--insecure-seed", "--keep-order", in, "-o", out)
	names, rows, _ := cmdtest.ReadTable(t, out)
	if len(rows) != n {
		t.Fatalf("%d rows, want %d", len(rows), n)
	}
	flips := make([]int64, len(names))
	pairs := make([][4]int64, len(names)-1) // (flip b, flip b+1) ∈ {00, 01, 10, 11}
	for i, row := range rows {
		want := encodeRow(i)
		f := make([]int, len(names))
		for b, c := range row {
			if (c == "1") != (want[b] == 1) {
				f[b] = 1
				flips[b]++
			}
		}
		for b := range pairs {
			pairs[b][2*f[b]+f[b+1]]++
		}
	}
	for b, name := range names {
		stattest.AssertBinomial(t, "flips of "+name, flips[b], n, q, alpha)
	}
	indep := []float64{(1 - q) * (1 - q), (1 - q) * q, q * (1 - q), q * q}
	for b := range pairs {
		stattest.AssertChiSquare(t, fmt.Sprintf("flips of %s and %s", names[b], names[b+1]), pairs[b][:], indep, alpha)
	}
}

func TestBitflipSeedReproducesTheRelease(t *testing.T) {
	dir, cb, in := testInputs(t, "people.csv", peopleCSV(200))
	run := func(seed, name string) [][]string {
		out := filepath.Join(dir, name)
		mustPerturb(t, "--mechanism", "bitflip", "--lie", "0.3", "--columns", "color,job", "--codebook", cb, "--seed", seed, "--insecure-seed", in, "-o", out)
		_, rows, _ := cmdtest.ReadTable(t, out)
		return rows
	}
	a, b, c := run("5", "a.csv"), run("5", "b.csv"), run("6", "c.csv")
	if !reflect.DeepEqual(a, b) {
		t.Error("the same --seed gave different releases")
	}
	if reflect.DeepEqual(a, c) {
		t.Error("different seeds gave the same release of 200 rows × 7 bits")
	}
}

func TestBitflipEpsilonChoosesTheLieProbability(t *testing.T) {
	dir, cb, in := testInputs(t, "people.csv", peopleCSV(5))
	out := filepath.Join(dir, "out.csv")
	mustPerturb(t, "--mechanism", "bitflip", "--epsilon", "3", "--columns", "sex,color", "--codebook", cb, in, "-o", out)
	_, _, meta := cmdtest.ReadTable(t, out)
	q, _ := meta.Float("lie", "")
	eps, _ := meta.Float("epsilon_per_record", "")
	// L = 4 bits: q = 1/(1 + e^(3/4)), and then 4·ln((1 − q)/q) = 3.
	if want := 1 / (1 + math.Exp(0.75)); math.Abs(q-want) > 1e-15 {
		t.Errorf("lie = %v, want %v", q, want)
	}
	if math.Abs(eps-3) > 1e-12 {
		t.Errorf("epsilon_per_record = %v, want 3", eps)
	}
}

func TestBitflipRejectsBadInput(t *testing.T) {
	dir, cb, in := testInputs(t, "people.csv", peopleCSV(6))
	enc := cmdtest.WriteFile(t, dir, "enc.csv", "sex\n1\n")
	cmdtest.WriteFile(t, dir, "enc.csv.meta.json", `{"pramkit":1,"meta":{"stage":"encrypt"}}`)
	cmdtest.BindSidecar(t, enc)
	out := filepath.Join(dir, "out.csv")
	tests := []cmdtest.Failure{
		{Name: "lie zero", Args: []string{"--lie", "0", "--columns", "flag", in}, Code: 2, Msg: "--lie must be a probability in (0, 0.5), got 0: q = 0 would release the bits unchanged"},
		{Name: "lie one half", Args: []string{"--lie", "0.5", "--columns", "flag", in}, Code: 2, Msg: "got 0.5"},
		{Name: "lie NaN", Args: []string{"--lie", "NaN", "--columns", "flag", in}, Code: 2, Msg: "got NaN"},
		{Name: "lie negative", Args: []string{"--lie", "-0.1", "--columns", "flag", in}, Code: 2, Msg: "got -0.1"},
		{Name: "no privacy level", Args: []string{"--columns", "flag", in}, Code: 2, Msg: "either --lie Q or --epsilon E"},
		{Name: "lie and epsilon", Args: []string{"--lie", "0.2", "--epsilon", "1", "--columns", "flag", in}, Code: 2, Msg: "either --lie Q or --epsilon E"},
		{Name: "epsilon infinite", Args: []string{"--epsilon", "+Inf", "--columns", "flag", in}, Code: 2, Msg: "--epsilon must be a finite number > 0"},
		{Name: "no columns", Args: []string{"--lie", "0.2", in}, Code: 2, Msg: "bitflip needs --columns"},
		{Name: "non-binary without codebook", Args: []string{"--lie", "0.2", "--columns", "color", in}, Code: 1, Msg: `row 1, column "color": value "red" is not 0 or 1, and no --codebook was given`},
		{Name: "non-binary not in the codebook", Args: []string{"--lie", "0.2", "--columns", "id", "--codebook", cb, in}, Code: 1, Msg: "it is not in the codebook"},
		{Name: "unknown column", Args: []string{"--lie", "0.2", "--columns", "nope", in}, Code: 1, Msg: `has no column "nope"`},
		{Name: "column twice", Args: []string{"--lie", "0.2", "--columns", "flag,flag", in}, Code: 2, Msg: `lists "flag" twice`},
		{Name: "value outside the codebook", Args: []string{"--lie", "0.2", "--columns", "sex", "--codebook", cmdtest.WriteFile(t, dir, "cb2.json", `{"columns":[{"name":"sex","categories":["F","M"]}]}`), in}, Code: 1, Msg: `row 1, column "sex"`},
		{Name: "two inputs", Args: []string{"--lie", "0.2", "--columns", "flag", in, in}, Code: 2, Msg: "randomizes one table, got 2 inputs"},
		{Name: "ddps flag", Args: []string{"--lie", "0.2", "--columns", "flag", "--pi-s", "0.1", in}, Code: 2, Msg: "--pi-s belongs to --mechanism ddps, not bitflip"},
		{Name: "gamma flag", Args: []string{"--lie", "0.2", "--columns", "flag", "--gamma", "3", in}, Code: 2, Msg: "--gamma belongs to --mechanism gamma-diagonal, not bitflip"},
		{Name: "encrypted input", Args: []string{"--lie", "0.2", "--columns", "sex", enc}, Code: 1, Msg: "holds encrypted values or pads"},
	}
	cmdtest.ExpectFailures(t, newPerturb, out, tests, "--mechanism", "bitflip", "-o", out)
}

func BenchmarkBitflipCommand(b *testing.B) {
	benchPerturb(b, peopleCSV(100000), 100000, "--mechanism", "bitflip", "--lie", "0.2", "--columns", "sex,color,flag,job")
}

// benchPerturb measures perturb with args on table (rows rows) and the test
// codebook, written to Parquet.
func benchPerturb(b *testing.B, table string, rows int, args ...string) {
	dir := b.TempDir()
	cb := cmdtest.WriteFile(b, dir, "cb.json", testCodebook)
	in := cmdtest.WriteFile(b, dir, "in.csv", table)
	args = append(args, "--codebook", cb, in, "-o", filepath.Join(dir, "out.parquet"))
	s := &cli.Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}
	for b.Loop() {
		if code := cli.Run(NewCmd(s, nil), args, s); code != 0 {
			b.Fatal("exit", code)
		}
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// TestBitflipPastOneWordFlipsEveryBitAndShufflesWholeRows: a bit vector
// longer than one 64-bit word (a one-hot column of 70 categories and
// color: L = 73) flips each bit with probability q in input order, and
// the shuffled release of the same seed (whose rows go to the shuffle
// packed, W = 2 words a row) holds the same rows, whole, in another
// order; its Parquet file (73 columns: a wide row group held as bits)
// holds the rows of its CSV file.
func TestBitflipPastOneWordFlipsEveryBitAndShufflesWholeRows(t *testing.T) {
	const (
		n, K  = 20000, 70
		q     = 0.2
		alpha = 1e-6 // per bit
	)
	dir := t.TempDir()
	labels := make([]string, K)
	for k := range labels {
		labels[k] = fmt.Sprintf("%q", fmt.Sprintf("c%d", k))
	}
	cb := cmdtest.WriteFile(t, dir, "cb.json", `{"columns": [{"name": "big", "categories": [`+strings.Join(labels, ",")+
		`]}, {"name": "color", "categories": ["red", "green", "blue"]}]}`)
	var b strings.Builder
	b.WriteString("big,color\n")
	for i := range n {
		fmt.Fprintf(&b, "c%d,%s\n", i*7%K, []string{"red", "green", "blue"}[i%3])
	}
	in := cmdtest.WriteFile(t, dir, "in.csv", b.String())
	run := func(name string, extra ...string) [][]string {
		out := filepath.Join(dir, name)
		mustPerturb(t, append([]string{"--mechanism", "bitflip", "--lie", "0.2", "--columns", "big,color", "--codebook", cb,
			"--seed", "9", "--insecure-seed", in, "-o", out}, extra...)...)
		_, rows, _ := cmdtest.ReadTable(t, out)
		if len(rows) != n || len(rows[0]) != K+3 {
			t.Fatalf("%s: %d rows of %d bits, want %d of %d", name, len(rows), len(rows[0]), n, K+3)
		}
		return rows
	}
	kept := run("kept.csv", "--keep-order")
	flips := make([]int64, K+3)
	for i, row := range kept {
		for j, c := range row {
			truth := j == i*7%K || j == K+i%3
			if (c == "1") != truth {
				flips[j]++
			}
		}
	}
	for j, f := range flips {
		stattest.AssertBinomial(t, fmt.Sprintf("flips of bit %d", j), f, n, q, alpha)
	}
	shuffled, pq := run("shuffled.csv"), run("shuffled.parquet")
	if !reflect.DeepEqual(shuffled, pq) {
		t.Error("the Parquet release does not hold the rows of the CSV release")
	}
	if reflect.DeepEqual(shuffled, kept) {
		t.Error("the shuffled release is in input order")
	}
	join := func(rows [][]string) []string {
		s := make([]string, len(rows))
		for i, r := range rows {
			s[i] = strings.Join(r, "")
		}
		slices.Sort(s)
		return s
	}
	if !slices.Equal(join(shuffled), join(kept)) {
		t.Error("the shuffled release's rows are not the input-order release's rows")
	}
}
