package perturb

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/cli"
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
	var got *Options
	s := &cli.Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}
	cmd := NewCmd(s, func(o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--mechanism", "ddps", "--column", "job", "--pi-s", "0.1", "--pi-bot", "0.2,0.3,0.2,0.1,0.1", "--non-participant", "?", "--codebook", "cb.json", "in.csv"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	d := got.DDPS
	if got.Mechanism != "ddps" || d.Column != "job" || d.PiS != 0.1 || !reflect.DeepEqual(d.PiBottom, []float64{0.2, 0.3, 0.2, 0.1, 0.1}) || d.NonParticipant != "?" {
		t.Errorf("parsed %+v", got)
	}
}

func TestDDPSReleaseAndMetadata(t *testing.T) {
	dir := t.TempDir()
	cb := writeFile(t, dir, "cb.json", testCodebook)
	in := writeFile(t, dir, "jobs.csv", jobsCSV(40))
	out := filepath.Join(dir, "out.csv")
	mustPerturb(t, "--mechanism", "ddps", "--column", "job", "--pi-s", "0.2", "--codebook", cb, "--seed", "1", in, "-o", out)
	names, rows, meta := readTable(t, out)
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
	// V = 4 (Sales, Tech, Craft, ?): π_⊥ = 0.8/5 = 0.16 each, ε = ln(0.36/0.16).
	var piBot []float64
	var values []string
	if err := meta.JSON("pi_bot", "", &piBot); err != nil {
		t.Fatal(err)
	}
	if err := meta.JSON("values", "", &values); err != nil {
		t.Fatal(err)
	}
	for o, p := range piBot {
		if math.Abs(p-0.16) > 1e-15 {
			t.Errorf("π_⊥%d = %v, want 0.16", o, p)
		}
	}
	if len(piBot) != 5 || !reflect.DeepEqual(values, []string{"Sales", "Tech", "Craft", "?"}) {
		t.Errorf("pi_bot %v, values %v", piBot, values)
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
	dir := t.TempDir()
	cb := writeFile(t, dir, "cb.json", testCodebook)
	in := writeFile(t, dir, "jobs.csv", jobsCSV(n))
	out := filepath.Join(dir, "out.csv")
	// Outputs ⊥0..⊥3 = (none), Sales, Tech, Craft; ? does not participate.
	piBot := []float64{0.1, 0.3, 0.2, 0.25}
	mustPerturb(t, "--mechanism", "ddps", "--column", "job", "--pi-s", "0.15", "--pi-bot", "0.1,0.3,0.2,0.25",
		"--non-participant", "?", "--codebook", cb, "--seed", "3", in, "-o", out)
	_, rows, meta := readTable(t, out)
	if meta["non_participant"] != "?" {
		t.Errorf("non_participant %q", meta["non_participant"])
	}
	index := map[string]int{NoneToken: 0, "Sales": 1, "Tech": 2, "Craft": 3}
	trueOutput := map[string]int{"?": 0, "Sales": 1, "Tech": 2, "Craft": 3}
	_, in2, _ := readTable(t, in)
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
	dir := t.TempDir()
	cb := writeFile(t, dir, "cb.json", testCodebook)
	in := writeFile(t, dir, "jobs.csv", jobsCSV(10))
	out := filepath.Join(dir, "out.csv")
	mustPerturb(t, "--mechanism", "ddps", "--column", "job", "--epsilon", "1.5", "--codebook", cb, in, "-o", out)
	_, _, meta := readTable(t, out)
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
	cb := writeFile(t, dir, "cb.json", testCodebook)
	clash := writeFile(t, dir, "clash.json", `{"columns":[{"name":"job","categories":["Sales","(none)"]}]}`)
	in := writeFile(t, dir, "jobs.csv", jobsCSV(6))
	out := filepath.Join(dir, "out.csv")
	base := []string{"--mechanism", "ddps", "-o", out}
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no column", []string{"--pi-s", "0.1", "--codebook", cb, in}, 2, "ddps needs --column"},
		{"no codebook", []string{"--column", "job", "--pi-s", "0.1", in}, 2, "ddps needs --codebook FILE"},
		{"no privacy level", []string{"--column", "job", "--codebook", cb, in}, 2, "either --pi-s S or --epsilon E"},
		{"pi-s zero", []string{"--column", "job", "--pi-s", "0", "--codebook", cb, in}, 2, "--pi-s must be a probability in (0, 1), got 0"},
		{"pi-s one", []string{"--column", "job", "--pi-s", "1", "--codebook", cb, in}, 2, "got 1"},
		{"pi-s NaN", []string{"--column", "job", "--pi-s", "NaN", "--codebook", cb, in}, 2, "got NaN"},
		{"pi-bot too short", []string{"--column", "job", "--pi-s", "0.2", "--pi-bot", "0.4,0.4", "--codebook", cb, in}, 2,
			"--pi-bot needs V + 1 = 5 masses, for (none) then job's categories in codebook order (Sales, Tech, Craft, ?), got 2"},
		{"masses do not sum to 1", []string{"--column", "job", "--pi-s", "0.2", "--pi-bot", "0.2,0.2,0.2,0.2,0.1", "--codebook", cb, in}, 2,
			"must sum to 1, got 1.1"},
		{"negative mass", []string{"--column", "job", "--pi-s", "0.2", "--pi-bot", "0.5,-0.1,0.2,0.1,0.1", "--codebook", cb, in}, 2,
			"--pi-bot mass 2 (output Sales) must be a finite number ≥ 0"},
		{"zero mass of a value", []string{"--column", "job", "--pi-s", "0.2", "--pi-bot", "0.4,0,0.2,0.1,0.1", "--codebook", cb, in}, 2,
			"(output Sales) is 0: a report of Sales would then reveal the value"},
		{"epsilon with pi-bot", []string{"--column", "job", "--epsilon", "1", "--pi-bot", "0.2,0.2,0.2,0.2,0.2", "--codebook", cb, in}, 2,
			"with your own --pi-bot give --pi-s"},
		{"column not in the codebook", []string{"--column", "id", "--pi-s", "0.1", "--codebook", cb, in}, 1, "cb.json"},
		{"column not in the table", []string{"--column", "color", "--pi-s", "0.1", "--codebook", cb, in}, 1, `has no column "color"`},
		{"non-participant not a category", []string{"--column", "job", "--pi-s", "0.1", "--non-participant", "none", "--codebook", cb, in}, 2,
			`--non-participant "none" is not a category of job`},
		{"category is the none token", []string{"--column", "job", "--pi-s", "0.1", "--codebook", clash, in}, 1, `has a category "(none)"`},
		{"value outside the codebook", []string{"--column", "job", "--pi-s", "0.1", "--codebook", writeFile(t, dir, "cb3.json", `{"columns":[{"name":"job","categories":["Sales","Tech"]}]}`), in}, 1,
			`column "job"`},
		{"bitflip flag", []string{"--column", "job", "--pi-s", "0.1", "--lie", "0.2", "--codebook", cb, in}, 2, "--lie does not apply to --mechanism ddps"},
		{"columns flag", []string{"--column", "job", "--pi-s", "0.1", "--columns", "job", "--codebook", cb, in}, 2, "--columns does not apply to --mechanism ddps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stderr := runPerturb(t, append(append([]string{}, base...), tt.args...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			first, _, _ := strings.Cut(stderr, "\n")
			if !strings.HasPrefix(first, "perturb: ") || !strings.Contains(first, tt.msg) {
				t.Errorf("first stderr line %q, want it to contain %q", first, tt.msg)
			}
			if m, _ := filepath.Glob(out + "*"); len(m) > 0 {
				t.Errorf("output left behind: %v", m)
			}
		})
	}
}

func BenchmarkDDPSCommand(b *testing.B) {
	dir := b.TempDir()
	cb := filepath.Join(dir, "cb.json")
	in := filepath.Join(dir, "jobs.csv")
	if err := writeBench(cb, testCodebook, in, jobsCSV(100000)); err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(dir, "out.parquet")
	s := &cli.Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}
	for b.Loop() {
		if code := cli.Run(NewCmd(s, nil), []string{"--mechanism", "ddps", "--column", "job", "--pi-s", "0.1", "--codebook", cb, in, "-o", out}, s); code != 0 {
			b.Fatal("exit", code)
		}
	}
	b.ReportMetric(float64(100000*b.N)/b.Elapsed().Seconds(), "rows/s")
}
