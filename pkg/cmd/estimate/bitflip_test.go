package estimate

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/perturb"
	"github.com/pramkit/pramkit/pkg/table"
)

// The estimators' distributions are tested in pkg/bitflip
// (TestPerBitEstimatorIsUnbiasedWithTheStatedVariance,
// TestConfidenceIntervalsCoverNominally, TestAnonymityMatchesBruteForce) and
// pkg/ddps (TestEstimatedCountsAreUnbiasedWithTheStatedSD). The tests here
// run the commands end to end: perturb → estimate, over seeded runs.

// newEstimate and lmNewPerturb build the commands as their Mains do.
func newEstimate(s *cli.Streams) *cobra.Command  { return NewCmd(s, nil) }
func lmNewPerturb(s *cli.Streams) *cobra.Command { return perturb.NewCmd(s, nil) }

// lmMustRun runs perturb or estimate, fails the test on a non-zero exit and
// returns what it printed.
func lmMustRun(t testing.TB, tool string, args ...string) string {
	t.Helper()
	build := newEstimate
	if tool == "perturb" {
		build = lmNewPerturb
	}
	res := cmdtest.Run(build, nil, args...)
	if res.Code != 0 {
		t.Fatalf("%s %s: exit %d: %s", tool, strings.Join(args, " "), res.Code, res.Stderr)
	}
	return res.Stdout
}

const lmCodebook = `{"columns": [
  {"name": "sex", "categories": ["Female", "Male"]},
  {"name": "color", "categories": ["red", "green", "blue"]},
  {"name": "job", "categories": ["Sales", "Tech", "Craft"], "missing": "?"}
]}`

// people is a table of n rows drawn from r: sex, color, a 0/1 flag, job.
// It returns the CSV and the rows.
func lmPeople(r *rand.Rand, n int) (string, [][]string) {
	var b strings.Builder
	b.WriteString("sex,color,flag,job\n")
	sexes := []string{"Female", "Male", "Male"}
	colors := []string{"red", "green", "blue", "blue", "blue"}
	jobs := []string{"Sales", "Sales", "Tech", "Craft", "?"}
	rows := make([][]string, n)
	for i := range rows {
		rows[i] = []string{sexes[r.IntN(3)], colors[r.IntN(5)], fmt.Sprint(r.IntN(4) / 3), jobs[r.IntN(5)]}
		b.WriteString(strings.Join(rows[i], ",") + "\n")
	}
	return b.String(), rows
}

// bitflipOut is the part of --json the tests read.
type lmBitflipOut struct {
	Mechanism string  `json:"mechanism"`
	Lie       float64 `json:"lie"`
	Bits      []struct {
		Name     string  `json:"name"`
		Estimate float64 `json:"estimate"`
		CILow    float64 `json:"ci_low"`
		CIHigh   float64 `json:"ci_high"`
	} `json:"bits"`
	Columns []struct {
		Name         string `json:"name"`
		Distribution []struct {
			Value    string   `json:"value"`
			Estimate float64  `json:"estimate"`
			True     *float64 `json:"true"`
		} `json:"distribution"`
		L2Error    *float64 `json:"l2_error"`
		L2ErrorRaw *float64 `json:"l2_error_unprojected"`
	} `json:"columns"`
	Reports int64 `json:"reports"`
}

func lmDecode(t testing.TB, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%v in %s", err, s)
	}
}

// The per-bit estimates of estimate, fed by perturb, average to the true
// frequencies of the table over seeded runs.
func TestBitflipCommandsEstimateUnbiased(t *testing.T) {
	const (
		n     = 2000
		runs  = 40
		q     = 0.25
		alpha = 1e-6 // per bit; 8 bits
	)
	dir := t.TempDir()
	cb := cmdtest.WriteFile(t, dir, "cb.json", lmCodebook)
	csv, rows := lmPeople(rand.New(rand.NewPCG(1, 2)), n)
	in := cmdtest.WriteFile(t, dir, "people.csv", csv)
	// True frequencies of the bits sex=Male, color=red/green/blue, flag=1,
	// job=Sales/Tech/Craft/? (the order of --columns sex,color,flag,job).
	names := []string{"sex=Male", "color=red", "color=green", "color=blue", "flag=1", "job=Sales", "job=Tech", "job=Craft", "job=?"}
	truth := make([]float64, len(names))
	for _, row := range rows {
		for b, name := range names {
			col, val, _ := strings.Cut(name, "=")
			j := map[string]int{"sex": 0, "color": 1, "flag": 2, "job": 3}[col]
			if row[j] == val {
				truth[b] += 1.0 / n
			}
		}
	}
	sum := make([]float64, len(names))
	for seed := range runs {
		out := filepath.Join(dir, fmt.Sprintf("r%d.parquet", seed))
		lmMustRun(t, "perturb", "--mechanism", "bitflip", "--lie", fmt.Sprint(q), "--columns", "sex,color,flag,job",
			"--codebook", cb, "--seed", fmt.Sprint(seed), "--insecure-seed", in, "-o", out)
		var res lmBitflipOut
		lmDecode(t, lmMustRun(t, "estimate", out, "--json"), &res)
		if len(res.Bits) != len(names) || res.Reports != n {
			t.Fatalf("%d bits, %d reports", len(res.Bits), res.Reports)
		}
		for b, e := range res.Bits {
			if e.Name != names[b] {
				t.Fatalf("bit %d is %q, want %q", b, e.Name, names[b])
			}
			sum[b] += e.Estimate
		}
	}
	// Only the flips are random for a fixed table: Var f̂ = q(1 − q)/(n(1 − 2q)²).
	sd := math.Sqrt(q*(1-q)/n) / (1 - 2*q)
	for b, name := range names {
		stattest.AssertMean(t, name, sum[b]/runs, truth[b], sd, runs, alpha)
	}
}

var (
	lmNum = `-?[0-9][0-9.e+-]*`
	// The shape: these keys first, in this order.
	lmBitflipJSONShape = regexp.MustCompile(`^\{"mechanism":"bitflip","lie":0\.2,"epsilon_per_bit":` + lmNum + `,"epsilon_per_record":` + lmNum +
		`,"bits":\[\{"name":"sex=Male","estimate":` + lmNum + `,"ci_low":` + lmNum + `,"ci_high":` + lmNum + `\},\{"name":"color=red",`)
)

// lmBitflipRelease writes the codebook and n people drawn with seed into a
// new folder, and randomizes their columns with q = 0.2 into rel.csv.
func lmBitflipRelease(t *testing.T, seed uint64, n int, columns string) (dir, cb, in, rel string) {
	t.Helper()
	dir = t.TempDir()
	cb = cmdtest.WriteFile(t, dir, "cb.json", lmCodebook)
	csv, _ := lmPeople(rand.New(rand.NewPCG(seed, seed+1)), n)
	in = cmdtest.WriteFile(t, dir, "people.csv", csv)
	rel = filepath.Join(dir, "rel.csv")
	lmMustRun(t, "perturb", "--mechanism", "bitflip", "--lie", "0.2", "--columns", columns, "--codebook", cb, "--seed", "1", "--insecure-seed", in, "-o", rel)
	return dir, cb, in, rel
}

func TestBitflipJSONShape(t *testing.T) {
	_, _, _, rel := lmBitflipRelease(t, 3, 50, "sex,color")
	out := lmMustRun(t, "estimate", rel, "--json")
	if !lmBitflipJSONShape.MatchString(out) || strings.Count(out, "\n") != 1 {
		t.Errorf("--json output is not in the issue's shape:\n%s", out)
	}
	var m map[string]any
	lmDecode(t, out, &m)
	if got := len(m["bits"].([]any)); got != 4 {
		t.Errorf("%d bits, want 4 (sex=Male and 3 colors)", got)
	}
}

// release writes a bitflip release by hand: a CSV and its sidecar.
func lmHandRelease(t *testing.T, dir, csv, meta string) string {
	t.Helper()
	p := cmdtest.WriteFile(t, dir, "hand.csv", csv)
	cmdtest.WriteFile(t, dir, "hand.csv.meta.json", `{"pramkit":1,"meta":`+meta+`}`)
	cmdtest.BindSidecar(t, p)
	return p
}

const lmHandMeta = `{"stage":"perturb","mechanism":"bitflip","lie":"0.25","bits":"4",` +
	`"epsilon_per_bit":"1.0986122886681096","epsilon_per_record":"4.394449154672438","epsilon_encoded":"3.2958368660043287",` +
	`"layout":"[{\"name\":\"smoker\",\"kind\":\"binary\",\"labels\":[\"0\",\"1\"],\"bits\":[\"smoker=1\"]},` +
	`{\"name\":\"color\",\"kind\":\"one-hot\",\"labels\":[\"red\",\"green\",\"blue\"],\"bits\":[\"color=red\",\"color=green\",\"color=blue\"]}]",` +
	`"codebook":"{\"columns\":[{\"name\":\"color\",\"categories\":[\"red\",\"green\",\"blue\"]}]}"}`

// handRelease has 10 reports: smoker=1 set in 6, color=red in 8, green in
// 1, blue in 2.
const lmHandReleaseCSV = "smoker=1,color=red,color=green,color=blue\n" +
	"1,1,0,0\n1,1,0,0\n1,1,0,1\n1,1,0,0\n1,1,1,0\n1,1,0,0\n0,1,0,1\n0,1,0,0\n0,0,0,0\n0,0,0,0\n"

func TestBitflipEstimatesMatchHandValues(t *testing.T) {
	dir := t.TempDir()
	rel := lmHandRelease(t, dir, lmHandReleaseCSV, lmHandMeta)
	truth := cmdtest.WriteFile(t, dir, "truth.csv", "smoker,color\n"+strings.Repeat("1,red\n", 7)+strings.Repeat("0,blue\n", 3))
	var res lmBitflipOut
	summary := lmMustRun(t, "estimate", rel, "--json", "--truth", truth)
	lmDecode(t, summary, &res)

	// f̂ = (ȳ − q)/(1 − 2q) with q = 1/4: ȳ = 0.6 → 0.7; 0.8 → 1.1; 0.1 → −0.3; 0.2 → −0.1.
	want := []float64{0.7, 1.1, -0.3, -0.1}
	z := 1.959963984540054 // 97.5% normal quantile
	for b, y := range []float64{0.6, 0.8, 0.1, 0.2} {
		e := res.Bits[b]
		se := math.Sqrt(y*(1-y)/10) / 0.5
		if math.Abs(e.Estimate-want[b]) > 1e-12 || math.Abs(e.CILow-(want[b]-z*se)) > 1e-9 || math.Abs(e.CIHigh-(want[b]+z*se)) > 1e-9 {
			t.Errorf("bit %s: %+v, want %v ± %v", e.Name, e, want[b], z*se)
		}
	}
	// Distributions: smoker (0.3, 0.7) is one already; color (1.1, −0.3, −0.1)
	// projects to (1, 0, 0) (θ = 0.1, only the largest entry stays positive).
	wantDist := [][]float64{{0.3, 0.7}, {1, 0, 0}}
	wantTrue := [][]float64{{0.3, 0.7}, {0.7, 0, 0.3}}
	wantL2 := []float64{0, math.Sqrt(0.09 + 0.09)}
	wantRaw := []float64{0, math.Sqrt(0.4*0.4 + 0.3*0.3 + 0.4*0.4)}
	for j, c := range res.Columns {
		for x, d := range c.Distribution {
			if math.Abs(d.Estimate-wantDist[j][x]) > 1e-12 || d.True == nil || math.Abs(*d.True-wantTrue[j][x]) > 1e-12 {
				t.Errorf("%s=%s: distribution %v, true %v; want %v, %v", c.Name, d.Value, d.Estimate, d.True, wantDist[j][x], wantTrue[j][x])
			}
		}
		if c.L2Error == nil || math.Abs(*c.L2Error-wantL2[j]) > 1e-12 || math.Abs(*c.L2ErrorRaw-wantRaw[j]) > 1e-12 {
			t.Errorf("%s: ℓ2 error %v (unprojected %v), want %v (%v)", c.Name, c.L2Error, c.L2ErrorRaw, wantL2[j], wantRaw[j])
		}
	}
	// Standard output holds the same numbers, to the last digit, as a CSV
	// table, and the summary's items in its metadata.
	names, rows, meta := lmStdoutTable(t, lmMustRun(t, "estimate", rel, "--truth", truth))
	if want := "column,value,bit,estimate,ci_low,ci_high,distribution,true,l2_error"; strings.Join(names, ",") != want {
		t.Errorf("columns %v, want %s", names, want)
	}
	lmSameItems(t, summary, meta, "")
	if meta["bits"] != "4" || meta["stage"] != "estimate" {
		t.Errorf("metadata bits %q, stage %q", meta["bits"], meta["stage"])
	}
	// Rows: smoker's 0 (no bit of its own: 1 − f̂), its bit, then the colors.
	type wantRow struct {
		col, value, bit   string
		est, lo, hi, dist float64
		true_, l2         float64
	}
	sm, co, b := res.Columns[0], res.Columns[1], res.Bits
	wantRows := []wantRow{
		{"smoker", "0", "", 1 - b[0].Estimate, 1 - b[0].CIHigh, 1 - b[0].CILow, sm.Distribution[0].Estimate, *sm.Distribution[0].True, *sm.L2Error},
		{"smoker", "1", "smoker=1", b[0].Estimate, b[0].CILow, b[0].CIHigh, sm.Distribution[1].Estimate, *sm.Distribution[1].True, *sm.L2Error},
	}
	for x, d := range co.Distribution {
		e := b[1+x]
		wantRows = append(wantRows, wantRow{"color", d.Value, e.Name, e.Estimate, e.CILow, e.CIHigh, d.Estimate, *d.True, *co.L2Error})
	}
	if len(rows) != len(wantRows) {
		t.Fatalf("%d rows, want %d: %v", len(rows), len(wantRows), rows)
	}
	for i, w := range wantRows {
		lmSameRow(t, rows[i], []any{w.col, w.value, w.bit, w.est, w.lo, w.hi, w.dist, w.true_, w.l2})
	}
	// --json with -o prints the summary and writes the same table.
	tbl := filepath.Join(dir, "est.csv")
	if out := lmMustRun(t, "estimate", rel, "--json", "--truth", truth, "-o", tbl); out != summary {
		t.Errorf("--json -o printed %s, want %s", out, summary)
	}
	fileNames, fileRows, fileMeta := cmdtest.ReadTable(t, tbl)
	if !reflect.DeepEqual(fileNames, names) || !reflect.DeepEqual(fileRows, rows) || !reflect.DeepEqual(fileMeta, meta) {
		t.Errorf("-o table %v %v %v\ndiffers from stdout's %v %v %v", fileNames, fileRows, fileMeta, names, rows, meta)
	}
}

// lmStdoutTable reads the table a command printed: a CSV stream whose first
// line "#pramkit {…}" carries the metadata, and no comment lines.
func lmStdoutTable(t *testing.T, stdout string) (names []string, rows [][]string, meta table.Meta) {
	t.Helper()
	if !strings.HasPrefix(stdout, "#pramkit {") || strings.Contains(stdout, "\n#") {
		t.Errorf("standard output is not a CSV table with a #pramkit metadata line:\n%s", stdout)
	}
	return cmdtest.ReadTable(t, cmdtest.WriteFile(t, t.TempDir(), "stdout.csv", stdout))
}

// lmSameItems checks that meta holds every number, string and boolean of the
// JSON summary, a nested object's items as "object_item".
func lmSameItems(t *testing.T, summary string, meta table.Meta, prefix string) {
	t.Helper()
	var items map[string]any
	lmDecode(t, summary, &items)
	for k, v := range items {
		key := prefix + k
		switch v := v.(type) {
		case []any:
		case map[string]any:
			b, _ := json.Marshal(v)
			lmSameItems(t, string(b), meta, key+"_")
		case float64:
			if got, err := meta.Float(key, ""); err != nil || got != v {
				t.Errorf("metadata %s = %q, want %v", key, meta[key], v)
			}
		default:
			if got := fmt.Sprint(v); meta[key] != got {
				t.Errorf("metadata %s = %q, want %q", key, meta[key], got)
			}
		}
	}
}

// lmSameRow checks a row of text cells against strings and numbers, the
// numbers exactly (the table holds them at full precision).
func lmSameRow(t *testing.T, row []string, want []any) {
	t.Helper()
	if len(row) != len(want) {
		t.Errorf("row %v, want %v", row, want)
		return
	}
	for j, w := range want {
		if f, ok := w.(float64); ok {
			if got, err := strconv.ParseFloat(row[j], 64); err != nil || got != f {
				t.Errorf("row %v: cell %d is %s, want %v", row, j, row[j], f)
			}
		} else if row[j] != w {
			t.Errorf("row %v: cell %d is %q, want %q", row, j, row[j], w)
		}
	}
}

// bruteAp is A_p by enumerating every report s and record v (Zhilyaev–Zeber §2).
func lmBruteAp(records []uint64, L int, q float64) float64 {
	p := func(a, b uint64) float64 {
		d := 0
		for x := a ^ b; x != 0; x &= x - 1 {
			d++
		}
		return math.Pow(q, float64(d)) * math.Pow(1-q, float64(L-d))
	}
	best := math.Inf(1)
	for s := uint64(0); s < 1<<L; s++ {
		for i, v := range records {
			prod := 1.0
			for k, u := range records {
				if k != i {
					prod *= 1 - p(u, s)
				}
			}
			best = min(best, (1-prod)/p(v, s))
		}
	}
	return best
}

// encodePerson is the bit vector of a people row for --columns sex,color,flag
// (bit 0 sex=Male, bits 1–3 colors, bit 4 flag=1).
func lmEncodePerson(row []string) uint64 {
	var v uint64
	if row[0] == "Male" {
		v |= 1
	}
	v |= 1 << (1 + map[string]int{"red": 0, "green": 1, "blue": 2}[row[1]])
	if row[2] == "1" {
		v |= 1 << 4
	}
	return v
}

func TestAnonymityThroughTheCommandsMatchesBruteForce(t *testing.T) {
	dir := t.TempDir()
	cb := cmdtest.WriteFile(t, dir, "cb.json", lmCodebook)
	for _, tt := range []struct {
		seed uint64
		n    int
		q    float64
	}{{1, 6, 0.3}, {2, 12, 0.1}, {3, 20, 0.45}} {
		csv, rows := lmPeople(rand.New(rand.NewPCG(tt.seed, 9)), tt.n)
		in := cmdtest.WriteFile(t, dir, fmt.Sprintf("t%d.csv", tt.seed), csv)
		rel := filepath.Join(dir, fmt.Sprintf("rel%d.csv", tt.seed))
		lmMustRun(t, "perturb", "--mechanism", "bitflip", "--lie", fmt.Sprint(tt.q), "--columns", "sex,color,flag", "--codebook", cb, in, "-o", rel)
		var res struct {
			L         int   `json:"L"`
			Records   int64 `json:"records"`
			Anonymity struct {
				Method string  `json:"method"`
				Ap     float64 `json:"a_p"`
			} `json:"anonymity"`
		}
		lmDecode(t, lmMustRun(t, "estimate", rel, "--anonymity", "--truth", in, "--json"), &res)
		records := make([]uint64, len(rows))
		for i, row := range rows {
			records[i] = lmEncodePerson(row)
		}
		want := lmBruteAp(records, 5, tt.q)
		if res.Anonymity.Method != "exact" || res.L != 5 || res.Records != int64(tt.n) || math.Abs(res.Anonymity.Ap-want) > 1e-9*want {
			t.Errorf("n = %d, q = %v: %+v, want exact A_p = %v", tt.n, tt.q, res, want)
		}
		// Monte Carlo: the smallest ratio seen bounds A_p from above.
		var mc struct {
			Anonymity struct {
				Method   string  `json:"method"`
				Samples  int     `json:"samples"`
				MinRatio float64 `json:"min_ratio"`
				Mean     float64 `json:"mean_ratio"`
				StdErr   float64 `json:"mean_ratio_stderr"`
			} `json:"anonymity"`
		}
		lmDecode(t, lmMustRun(t, "estimate", rel, "--anonymity", "--truth", in, "--json", "--anonymity-samples", "200", "--seed", "1"), &mc)
		a := mc.Anonymity
		if a.Method != "monte-carlo" || a.Samples != 200 || a.MinRatio < want*(1-1e-9) || a.Mean < a.MinRatio || !(a.StdErr > 0) {
			t.Errorf("n = %d, q = %v: Monte Carlo %+v, exact A_p = %v", tt.n, tt.q, a, want)
		}
	}
}

func TestBitflipEstimateRejectsBadInput(t *testing.T) {
	dir, cb, in, rel := lmBitflipRelease(t, 5, 30, "sex,color,flag")
	edited := filepath.Join(dir, "edited.csv")
	b, _ := os.ReadFile(rel)
	lines := strings.Split(string(b), "\n")
	lines[3] = "2" + lines[3][1:]
	cmdtest.WriteFile(t, dir, "edited.csv", strings.Join(lines, "\n"))
	meta, _ := os.ReadFile(rel + ".meta.json")
	cmdtest.WriteFile(t, dir, "edited.csv.meta.json", string(meta))
	cmdtest.BindSidecar(t, filepath.Join(dir, "edited.csv"))
	// A layout whose bit names do not follow its labels.
	cmdtest.WriteFile(t, dir, "renamed.csv", string(b))
	if !strings.Contains(string(meta), "color=red") {
		t.Fatalf("no bit color=red in %s", meta)
	}
	renamed := cmdtest.WriteFile(t, dir, "renamed.csv.meta.json", strings.Replace(string(meta), "color=red", "color=Red", 1))
	renamed = strings.TrimSuffix(renamed, ".meta.json")
	noColor := cmdtest.WriteFile(t, dir, "nocolor.csv", "sex,flag\nMale,1\n")
	out := filepath.Join(dir, "out.csv")
	tests := []cmdtest.Failure{
		{Name: "anonymity without truth", Args: []string{rel, "--anonymity"}, Code: 2, Msg: "--anonymity needs the original records"},
		{Name: "L too large for exact anonymity", Args: []string{rel, "--anonymity", "--truth", in, "--anonymity-max-bits", "4"}, Code: 1, Msg: "A_p cannot be computed exactly for L = 5 bits: the exact method needs about 22·2^L bytes (704 B) and is limited to L ≤ 4 (--anonymity-max-bits, at most 24); add --anonymity-samples N for a Monte Carlo estimate"},
		{Name: "exact limit above the library's", Args: []string{rel, "--anonymity", "--truth", in, "--anonymity-max-bits", "25"}, Code: 2, Msg: "--anonymity-max-bits must be in [1, 24]"},
		{Name: "no Monte Carlo samples", Args: []string{rel, "--anonymity", "--truth", in, "--anonymity-samples", "0"}, Code: 2, Msg: "--anonymity-samples must be at least 1"},
		{Name: "anonymity with columns", Args: []string{rel, "--anonymity", "--truth", in, "--columns", "sex"}, Code: 2, Msg: "drop --columns"},
		{Name: "samples without anonymity", Args: []string{rel, "--anonymity-samples", "10"}, Code: 2, Msg: "go with --anonymity"},
		{Name: "codebook", Args: []string{rel, "--codebook", cb}, Code: 2, Msg: "drop --codebook"},
		{Name: "unknown column", Args: []string{rel, "--columns", "job"}, Code: 2, Msg: `has no bitflip column "job" (columns: sex, color, flag)`},
		{Name: "ddps flag", Args: []string{rel, "--round-two"}, Code: 2, Msg: "rel.csv is a bitflip release"},
		{Name: "two truths", Args: []string{rel, "--truth", in, "--truth", in}, Code: 2, Msg: "give --truth once"},
		{Name: "edited release", Args: []string{edited}, Code: 1, Msg: `edited.csv: row 3, column "sex=Male": value "2" is not a bit (0 or 1)`},
		{Name: "layout edited", Args: []string{renamed}, Code: 1, Msg: `renamed.csv: metadata "layout" is not valid: bitflip.Layout.UnmarshalJSON: group "color" lists the bits`},
		{Name: "truth without the column", Args: []string{rel, "--truth", noColor}, Code: 1, Msg: `nocolor.csv has no column "color": give the original table`},
		{Name: "truth is a release", Args: []string{rel, "--truth", rel}, Code: 1, Msg: "is a release (mechanism bitflip), not the original table"},
	}
	cmdtest.ExpectFailures(t, newEstimate, out, tests, "-o", out)
}

func BenchmarkBitflipEstimate(b *testing.B) {
	dir := b.TempDir()
	cb := cmdtest.WriteFile(b, dir, "cb.json", lmCodebook)
	csv, _ := lmPeople(rand.New(rand.NewPCG(1, 1)), 100000)
	in := cmdtest.WriteFile(b, dir, "people.csv", csv)
	rel := filepath.Join(dir, "rel.parquet")
	lmMustRun(b, "perturb", "--mechanism", "bitflip", "--lie", "0.2", "--columns", "sex,color,flag,job", "--codebook", cb, in, "-o", rel)
	for b.Loop() {
		lmMustRun(b, "estimate", rel, "--json")
	}
	b.ReportMetric(float64(100000*b.N)/b.Elapsed().Seconds(), "rows/s")
}
