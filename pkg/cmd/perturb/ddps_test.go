package perturb

import (
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/internal/stattest"
)

// Library-level tests of DDPS (round-one independence of the value, the
// e^ε worst ratio, the report distributions) are in pkg/ddps. Here: the
// command's numbering of categories as outputs, its metadata and errors.

// jobsCSV is a table of n rows whose job is Sales for the first half,
// then Tech, Craft and ? in turn.
func jobsCSV(n int) string {
	var b strings.Builder
	b.WriteString("id,job\n")
	other := []string{"Tech", "Craft", "?"}
	for i := range n {
		job := "Sales"
		if i >= n/2 {
			job = other[i%3]
		}
		fmt.Fprintf(&b, "p%d,%s\n", i, job)
	}
	return b.String()
}

func TestDDPSFlagsParse(t *testing.T) {
	got := parseFlags(t, "--mechanism", "ddps", "--column", "job", "--pi-s", "0.1", "--pi-bot", "0.2,0.3,0.2,0.1,0.1", "--non-participant", "?", "--codebook", "cb.json", "in.csv")
	d := *got.ddpsOpts()
	if got.Mechanism != "ddps" || d.Column != "job" || d.PiS != 0.1 || !reflect.DeepEqual(d.PiBottom, []float64{0.2, 0.3, 0.2, 0.1, 0.1}) || d.NonParticipant != "?" {
		t.Errorf("parsed %+v", got)
	}
}

func TestDDPSReleaseAndMetadata(t *testing.T) {
	dir, cb, in := testInputs(t, "jobs.csv", jobsCSV(40))
	out := filepath.Join(dir, "out.csv")
	mustPerturb(t, "--mechanism", "ddps", "--column", "job", "--pi-s", "0.2", "--codebook", cb, "--seed", "1", "--insecure-seed", in, "-o", out)
	names, rows, meta := cmdtest.ReadTable(t, out)
	if !reflect.DeepEqual(names, []string{"job.round1", "job.round2"}) {
		t.Errorf("columns %v", names)
	}
	if len(rows) != 40 {
		t.Errorf("%d rows, want 40", len(rows))
	}
	outputs := map[string]bool{NoneToken: true, "Sales": true, "Tech": true, "Craft": true, "?": true}
	for _, row := range rows {
		for _, c := range row {
			if !outputs[c] {
				t.Fatalf("report %q is not an output", c)
			}
		}
	}
	// V = 4 (Sales, Tech, Craft, ?): π_⊥ = 0.8/5 = 0.16 each, stored once,
	// ε = ln(0.36/0.16). The values are the codebook's, not listed again.
	if piBot, err := meta.Float("pi_bot", ""); err != nil || math.Abs(piBot-0.16) > 1e-15 {
		t.Errorf("pi_bot %q, want 0.16 (%v)", meta["pi_bot"], err)
	}
	if v, ok := meta["values"]; ok {
		t.Errorf("the values are listed: %s", v)
	}
	eps, _ := meta.Float("epsilon", "")
	piS, _ := meta.Float("pi_s", "")
	if want := math.Log(0.36 / 0.16); math.Abs(eps-want) > 1e-12 || piS != 0.2 {
		t.Errorf("epsilon %v (want %v), pi_s %v", eps, want, piS)
	}
	if meta["mechanism"] != "ddps" || meta["column"] != "job" || meta["none_token"] != NoneToken || meta["codebook"] == "" {
		t.Errorf("metadata %v", meta)
	}
}

// Through the command, round one must follow Eq. 36 whatever the row's
// value, and round two Eq. 37 (or Eq. 38 for a non-participant): a wrong
// numbering of categories as outputs fails here.
func TestDDPSCommandReportDistributions(t *testing.T) {
	const (
		n     = 24000
		alpha = 1e-6 // per chi-square check, 8 checks
	)
	dir, cb, in := testInputs(t, "jobs.csv", jobsCSV(n))
	out := filepath.Join(dir, "out.csv")
	// Outputs ⊥0..⊥3 = (none), Sales, Tech, Craft; ? does not participate.
	piBot := []float64{0.1, 0.3, 0.2, 0.25}
	mustPerturb(t, "--mechanism", "ddps", "--column", "job", "--pi-s", "0.15", "--pi-bot", "0.1,0.3,0.2,0.25",
		"--non-participant", "?", "--codebook", cb, "--seed", "3", "--insecure-seed", "--keep-order", in, "-o", out)
	_, rows, meta := cmdtest.ReadTable(t, out)
	if meta["non_participant"] != "?" {
		t.Errorf("non_participant %q", meta["non_participant"])
	}
	index := map[string]int{NoneToken: 0, "Sales": 1, "Tech": 2, "Craft": 3}
	trueOutput := map[string]int{"?": 0, "Sales": 1, "Tech": 2, "Craft": 3}
	_, in2, _ := cmdtest.ReadTable(t, in)
	var one, two [4][4]int64 // [true output][report]
	for i, row := range rows {
		v := trueOutput[in2[i][1]]
		o1, ok1 := index[row[0]]
		o2, ok2 := index[row[1]]
		if !ok1 || !ok2 {
			t.Fatalf("row %d: reports %v; ? must never be reported", i+1, row)
		}
		one[v][o1]++
		two[v][o2]++
	}
	roundOne := []float64{0.25, 0.3, 0.2, 0.25}
	for v := range 4 {
		stattest.AssertChiSquare(t, fmt.Sprintf("round one, true output %d", v), one[v][:], roundOne, alpha)
		p := append([]float64(nil), piBot...)
		p[v] += 0.15
		stattest.AssertChiSquare(t, fmt.Sprintf("round two, true output %d", v), two[v][:], p, alpha)
	}
}

func TestDDPSEpsilonChoosesPiS(t *testing.T) {
	dir, cb, in := testInputs(t, "jobs.csv", jobsCSV(10))
	out := filepath.Join(dir, "out.csv")
	mustPerturb(t, "--mechanism", "ddps", "--column", "job", "--epsilon", "1.5", "--codebook", cb, in, "-o", out)
	_, _, meta := cmdtest.ReadTable(t, out)
	eps, _ := meta.Float("epsilon", "")
	piS, _ := meta.Float("pi_s", "")
	// V = 4: π_s = x/(5 + x), x = e^1.5 − 1, and then ln(1 + 5π_s/(1 − π_s)) = 1.5.
	x := math.Expm1(1.5)
	if want := x / (5 + x); math.Abs(piS-want) > 1e-15 || math.Abs(eps-1.5) > 1e-12 {
		t.Errorf("pi_s %v (want %v), epsilon %v (want 1.5)", piS, want, eps)
	}
}

func TestDDPSRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	cb := cmdtest.WriteFile(t, dir, "cb.json", testCodebook)
	clash := cmdtest.WriteFile(t, dir, "clash.json", `{"columns":[{"name":"job","categories":["Sales","(none)"]}]}`)
	in := cmdtest.WriteFile(t, dir, "jobs.csv", jobsCSV(6))
	out := filepath.Join(dir, "out.csv")
	tests := []cmdtest.Failure{
		{Name: "no column", Args: []string{"--pi-s", "0.1", "--codebook", cb, in}, Code: 2, Msg: "ddps needs --column"},
		{Name: "no codebook", Args: []string{"--column", "job", "--pi-s", "0.1", in}, Code: 2, Msg: "ddps needs --codebook FILE"},
		{Name: "no privacy level", Args: []string{"--column", "job", "--codebook", cb, in}, Code: 2, Msg: "either --pi-s S or --epsilon E"},
		{Name: "pi-s zero", Args: []string{"--column", "job", "--pi-s", "0", "--codebook", cb, in}, Code: 2, Msg: "--pi-s must be a probability in (0, 1), got 0"},
		{Name: "pi-s one", Args: []string{"--column", "job", "--pi-s", "1", "--codebook", cb, in}, Code: 2, Msg: "got 1"},
		{Name: "pi-s NaN", Args: []string{"--column", "job", "--pi-s", "NaN", "--codebook", cb, in}, Code: 2, Msg: "got NaN"},
		{Name: "pi-bot too short", Args: []string{"--column", "job", "--pi-s", "0.2", "--pi-bot", "0.4,0.4", "--codebook", cb, in}, Code: 2, Msg: "--pi-bot needs V + 1 = 5 masses, for (none) then job's categories in codebook order (Sales, Tech, Craft, ?), got 2"},
		{Name: "masses do not sum to 1", Args: []string{"--column", "job", "--pi-s", "0.2", "--pi-bot", "0.2,0.2,0.2,0.2,0.1", "--codebook", cb, in}, Code: 2, Msg: "must sum to 1, got 1.1"},
		{Name: "negative mass", Args: []string{"--column", "job", "--pi-s", "0.2", "--pi-bot", "0.5,-0.1,0.2,0.1,0.1", "--codebook", cb, in}, Code: 2, Msg: "--pi-bot mass 2 (output Sales) must be a finite number ≥ 0"},
		{Name: "zero mass of a value", Args: []string{"--column", "job", "--pi-s", "0.2", "--pi-bot", "0.4,0,0.2,0.1,0.1", "--codebook", cb, in}, Code: 2, Msg: "(output Sales) is 0: a report of Sales would then reveal the value"},
		{Name: "epsilon with pi-bot", Args: []string{"--column", "job", "--epsilon", "1", "--pi-bot", "0.2,0.2,0.2,0.2,0.2", "--codebook", cb, in}, Code: 2, Msg: "with your own --pi-bot give --pi-s"},
		{Name: "column not in the codebook", Args: []string{"--column", "id", "--pi-s", "0.1", "--codebook", cb, in}, Code: 1, Msg: "cb.json"},
		{Name: "column not in the table", Args: []string{"--column", "color", "--pi-s", "0.1", "--codebook", cb, in}, Code: 1, Msg: `has no column "color"`},
		{Name: "non-participant not a category", Args: []string{"--column", "job", "--pi-s", "0.1", "--non-participant", "none", "--codebook", cb, in}, Code: 2, Msg: `--non-participant "none" is not a category of job`},
		{Name: "category is the none token", Args: []string{"--column", "job", "--pi-s", "0.1", "--codebook", clash, in}, Code: 1, Msg: `has a category "(none)"`},
		{Name: "value outside the codebook", Args: []string{"--column", "job", "--pi-s", "0.1", "--codebook", cmdtest.WriteFile(t, dir, "cb3.json", `{"columns":[{"name":"job","categories":["Sales","Tech"]}]}`), in}, Code: 1, Msg: `column "job"`},
		{Name: "bitflip flag", Args: []string{"--column", "job", "--pi-s", "0.1", "--lie", "0.2", "--codebook", cb, in}, Code: 2, Msg: "--lie belongs to --mechanism bitflip, not ddps"},
		{Name: "columns flag", Args: []string{"--column", "job", "--pi-s", "0.1", "--columns", "job", "--codebook", cb, in}, Code: 2, Msg: "--columns belongs to --mechanism bitflip, not ddps"},
	}
	cmdtest.ExpectFailures(t, newPerturb, out, tests, "--mechanism", "ddps", "-o", out)
}

func BenchmarkDDPSCommand(b *testing.B) {
	benchPerturb(b, jobsCSV(100000), 100000, "--mechanism", "ddps", "--column", "job", "--pi-s", "0.1")
}
