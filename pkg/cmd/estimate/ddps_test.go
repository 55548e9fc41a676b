package estimate

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/internal/stattest"
)

// lmJobsCSV is a table whose job column holds counts[x] rows of each
// label, interleaved.
func lmJobsCSV(labels []string, counts []int) string {
	var b strings.Builder
	b.WriteString("id,job\n")
	left := append([]int(nil), counts...)
	for i := 0; ; i++ {
		done := true
		for x, lab := range labels {
			if left[x] > 0 {
				fmt.Fprintf(&b, "p%d-%d,%s\n", i, x, lab)
				left[x]--
				done = false
			}
		}
		if done {
			return b.String()
		}
	}
}

// lmDDPSOut is the part of --json the tests read.
type lmDDPSOut struct {
	PiS            float64 `json:"pi_s"`
	Epsilon        float64 `json:"epsilon"`
	Participants   float64 `json:"participants"`
	ParticipantsSD float64 `json:"participants_sd"`
	Counts         []struct {
		Value    string  `json:"value"`
		Estimate float64 `json:"estimate"`
		SD       float64 `json:"sd"`
	} `json:"counts"`
	Reports        int64  `json:"reports"`
	Estimator      string `json:"estimator"`
	NonParticipant *struct {
		Value    string  `json:"value"`
		Estimate float64 `json:"estimate"`
	} `json:"non_participants"`
	Truth *struct {
		Counts []struct {
			Value string `json:"value"`
			Count int64  `json:"count"`
		} `json:"counts"`
		Participants int64   `json:"participants"`
		L2Error      float64 `json:"l2_error"`
	} `json:"truth"`
}

// The counts estimated by estimate from perturb's reports average to the
// true counts over seeded runs, for both estimators, with and without
// non-participants.
func TestDDPSCommandsEstimateUnbiased(t *testing.T) {
	const (
		runs  = 40
		piS   = 0.3
		alpha = 1e-6 // per count; 4 estimators × ≤ 5 counts
	)
	dir := t.TempDir()
	cb := cmdtest.WriteFile(t, dir, "cb.json", lmCodebook)
	labels := []string{"Sales", "Tech", "Craft", "?"}
	counts := []int{1500, 900, 100, 500}
	in := cmdtest.WriteFile(t, dir, "jobs.csv", lmJobsCSV(labels, counts))
	N := 3000.0
	for _, tt := range []struct {
		name     string
		perturb  []string
		estimate []string
		values   []string
		truth    []float64 // true counts of the values
		nonPart  float64   // true non-participants (−1: none allowed)
		roundTwo bool
		piBot    []float64 // π_⊥0..π_⊥V
	}{
		{"difference (Eq. 41)", nil, nil, labels, []float64{1500, 900, 100, 500}, -1, false, []float64{0.14, 0.14, 0.14, 0.14, 0.14}},
		{"round two", nil, []string{"--round-two"}, labels, []float64{1500, 900, 100, 500}, -1, true, []float64{0.14, 0.14, 0.14, 0.14, 0.14}},
		{"difference, ? not participating", []string{"--non-participant", "?", "--pi-bot", "0.1,0.3,0.2,0.1"}, nil,
			labels[:3], []float64{1500, 900, 100}, 500, false, []float64{0.1, 0.3, 0.2, 0.1}},
		{"round two, ? not participating", []string{"--non-participant", "?", "--pi-bot", "0.1,0.3,0.2,0.1"}, []string{"--round-two"},
			labels[:3], []float64{1500, 900, 100}, 500, true, []float64{0.1, 0.3, 0.2, 0.1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sum := make([]float64, len(tt.values))
			var part float64
			for seed := range runs {
				rel := filepath.Join(dir, fmt.Sprintf("r%d.csv", seed))
				args := append([]string{"--mechanism", "ddps", "--column", "job", "--pi-s", fmt.Sprint(piS), "--codebook", cb, "--seed", fmt.Sprint(seed), "--insecure-seed", in, "-o", rel}, tt.perturb...)
				lmMustRun(t, "perturb", args...)
				var res lmDDPSOut
				lmDecode(t, lmMustRun(t, "estimate", append([]string{rel, "--json"}, tt.estimate...)...), &res)
				if len(res.Counts) != len(tt.values) || res.Reports != 3000 {
					t.Fatalf("%d counts, %d reports", len(res.Counts), res.Reports)
				}
				for x, c := range res.Counts {
					if c.Value != tt.values[x] {
						t.Fatalf("count %d is of %q, want %q", x, c.Value, tt.values[x])
					}
					sum[x] += c.Estimate
				}
				part += res.Participants
			}
			// Var n̂_o = [N·c_o(1 − c_o)·[paired] + n_o·a(1 − a) + (N − n_o)·b(1 − b)]/π_s²,
			// a = π_⊥o + π_s, b = π_⊥o, c_o = π_⊥o (o ≠ 0), π_⊥o + π_s (o = 0).
			sd := func(o int, n float64) float64 {
				a, b := tt.piBot[o]+piS, tt.piBot[o]
				v := n*a*(1-a) + (N-n)*b*(1-b)
				if !tt.roundTwo {
					c := b
					if o == 0 {
						c = a
					}
					v += N * c * (1 - c)
				}
				return math.Sqrt(v) / piS
			}
			for x, want := range tt.truth {
				stattest.AssertMean(t, tt.values[x], sum[x]/runs, want, sd(x+1, want), runs, alpha)
			}
			if tt.nonPart < 0 {
				if part != runs*N {
					t.Errorf("participants %v over %d runs, want exactly N = %v each", part, runs, N)
				}
			} else {
				stattest.AssertMean(t, "participants", part/runs, N-tt.nonPart, sd(0, tt.nonPart), runs, alpha)
			}
		})
	}
}

var lmDDPSJSONShape = regexp.MustCompile(`^\{"mechanism":"ddps","pi_s":0\.2,"epsilon":` + lmNum + `,"participants":` + lmNum +
	`,"counts":\[\{"value":"Sales","estimate":` + lmNum + `,"sd":` + lmNum + `\},\{"value":"Tech",`)

// lmDDPSRelease writes the codebook and a table of 5 Sales and 5 Tech into
// a new folder, and releases their job with π_s = 0.2 as the file name.
func lmDDPSRelease(t *testing.T, name string) (dir, cb, in, rel string) {
	t.Helper()
	dir = t.TempDir()
	cb = cmdtest.WriteFile(t, dir, "cb.json", lmCodebook)
	in = cmdtest.WriteFile(t, dir, "jobs.csv", lmJobsCSV([]string{"Sales", "Tech"}, []int{5, 5}))
	rel = filepath.Join(dir, name)
	lmMustRun(t, "perturb", "--mechanism", "ddps", "--column", "job", "--pi-s", "0.2", "--codebook", cb, "--seed", "1", "--insecure-seed", in, "-o", rel)
	return dir, cb, in, rel
}

func TestDDPSJSONShape(t *testing.T) {
	_, _, _, rel := lmDDPSRelease(t, "rel.parquet")
	out := lmMustRun(t, "estimate", rel, "--json")
	if !lmDDPSJSONShape.MatchString(out) || strings.Count(out, "\n") != 1 {
		t.Errorf("--json output is not in the issue's shape:\n%s", out)
	}
}

// lmDDPSMeta is the metadata of a hand-made release of job with outputs
// (none), Sales, Tech and π_s = 0.2, π_⊥ = (0.4, 0.2, 0.2).
const lmDDPSMeta = `{"stage":"perturb","mechanism":"ddps","column":"job","none_token":"(none)","pi_s":"0.2","epsilon":"0.6931471805599453",` +
	`"pi_bot":"[0.4,0.2,0.2]","values":"[\"Sales\",\"Tech\"]","codebook":"{\"columns\":[{\"name\":\"job\",\"categories\":[\"Sales\",\"Tech\"]}]}"}`

func TestDDPSEstimatesMatchHandValues(t *testing.T) {
	dir := t.TempDir()
	// 10 owners. Round one: (none) ×5, Sales ×3, Tech ×2. Round two:
	// (none) ×3, Sales ×5, Tech ×2.
	rel := cmdtest.WriteFile(t, dir, "hand.csv", "job.round1,job.round2\n"+
		"(none),Sales\n(none),Sales\n(none),(none)\n(none),Tech\n(none),(none)\nSales,Sales\nSales,Sales\nSales,(none)\nTech,Sales\nTech,Tech\n")
	cmdtest.WriteFile(t, dir, "hand.csv.meta.json", `{"pramkit":1,"meta":`+lmDDPSMeta+`}`)
	cmdtest.BindSidecar(t, rel)
	truth := cmdtest.WriteFile(t, dir, "truth.csv", "job\n"+strings.Repeat("Sales\n", 6)+strings.Repeat("Tech\n", 4))
	var res lmDDPSOut
	summary := lmMustRun(t, "estimate", rel, "--json", "--truth", truth)
	lmDecode(t, summary, &res)
	// n̂ = (C2 − C1)/π_s: Sales (5 − 3)/0.2 = 10, Tech (2 − 2)/0.2 = 0.
	// sd² = [N·b(1 − b) + n̂·a(1 − a) + (N − n̂)·b(1 − b)]/π_s², a = 0.4, b = 0.2, N = 10:
	// Sales (n̂ = 10): [1.6 + 2.4 + 0]/0.04 = 100; Tech (n̂ = 0): [1.6 + 0 + 1.6]/0.04 = 80.
	want := []struct{ est, sd float64 }{{10, 10}, {0, math.Sqrt(80)}}
	for x, c := range res.Counts {
		if math.Abs(c.Estimate-want[x].est) > 1e-9 || math.Abs(c.SD-want[x].sd) > 1e-9 {
			t.Errorf("%s: %v ± %v, want %v ± %v", c.Value, c.Estimate, c.SD, want[x].est, want[x].sd)
		}
	}
	if res.PiS != 0.2 || math.Abs(res.Epsilon-math.Ln2) > 1e-12 || res.Participants != 10 || res.Estimator != "difference" {
		t.Errorf("%+v", res)
	}
	// ℓ2 error against the true counts (6, 4): √(4² + 4²).
	if res.Truth == nil || res.Truth.Participants != 10 || math.Abs(res.Truth.L2Error-math.Sqrt(32)) > 1e-9 ||
		res.Truth.Counts[0].Count != 6 || res.Truth.Counts[1].Count != 4 {
		t.Errorf("truth %+v", res.Truth)
	}
	// Standard output holds the same numbers as a CSV table, and the
	// summary's items (truth_participants, truth_l2_error too) in its
	// metadata.
	names, rows, meta := lmStdoutTable(t, lmMustRun(t, "estimate", rel, "--truth", truth))
	if want := "value,estimate,sd,true,error"; strings.Join(names, ",") != want {
		t.Errorf("columns %v, want %s", names, want)
	}
	lmSameItems(t, summary, meta, "")
	if len(rows) != 2 {
		t.Fatalf("rows %v, want Sales and Tech", rows)
	}
	for x, c := range res.Counts {
		n := float64(res.Truth.Counts[x].Count)
		lmSameRow(t, rows[x], []any{c.Value, c.Estimate, c.SD, n, c.Estimate - n})
	}
	// Round two alone: ñ = (C2 − N·π_⊥)/π_s: Sales (5 − 2)/0.2 = 15, Tech (2 − 2)/0.2 = 0.
	lmDecode(t, lmMustRun(t, "estimate", rel, "--json", "--round-two"), &res)
	if math.Abs(res.Counts[0].Estimate-15) > 1e-9 || math.Abs(res.Counts[1].Estimate) > 1e-9 || res.Estimator != "round-two" {
		t.Errorf("round two: %+v", res.Counts)
	}
}

// estimate reports the π_s and ε that perturb recorded, to the last bit:
// it rebuilds the same mechanism from the release's masses (also where
// their float sum is not exactly 1, as for π_s = 0.1 and V = 15).
func TestDDPSEstimateRebuildsTheReleasesMechanism(t *testing.T) {
	dir := t.TempDir()
	labels := make([]string, 15) // V = 15, as Adult's occupation
	for i := range labels {
		labels[i] = fmt.Sprintf("o%d", i)
	}
	cb := cmdtest.WriteFile(t, dir, "cb.json", `{"columns":[{"name":"job","categories":["`+strings.Join(labels, `","`)+`"]}]}`)
	in := cmdtest.WriteFile(t, dir, "jobs.csv", lmJobsCSV(labels, []int{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9}))
	for _, args := range [][]string{
		{"--pi-s", "0.1"}, // 0.1 + 16·(0.9/16) = 1 + 2⁻⁵² in floats
		{"--pi-s", "0.2"},
		{"--epsilon", "1"},
		{"--pi-s", "0.1", "--non-participant", "o14"},
		{"--pi-s", "0.2", "--pi-bot", "0.05,0.05,0.05,0.05,0.05,0.05,0.05,0.05,0.05,0.05,0.05,0.05,0.05,0.05,0.05,0.0500000001"},
	} {
		rel := filepath.Join(dir, "rel.csv")
		lmMustRun(t, "perturb", append([]string{"--mechanism", "ddps", "--column", "job", "--codebook", cb, "--seed", "1", "--insecure-seed", in, "-o", rel}, args...)...)
		_, _, meta := cmdtest.ReadTable(t, rel)
		var res lmDDPSOut
		lmDecode(t, lmMustRun(t, "estimate", rel, "--json"), &res)
		piS, _ := meta.Float("pi_s", "")
		eps, _ := meta.Float("epsilon", "")
		if res.PiS != piS || res.Epsilon != eps {
			t.Errorf("%v: estimate reports π_s = %.17g, ε = %.17g; the release has %.17g, %.17g", args, res.PiS, res.Epsilon, piS, eps)
		}
	}
}

// TestDDPSEstimateReadsOlderReleasesAlike: a release of contract version 3
// listed the values and every mass π_⊥; its rows with those items give the
// estimates of the release as written now.
func TestDDPSEstimateReadsOlderReleasesAlike(t *testing.T) {
	dir, _, _, rel := lmDDPSRelease(t, "rel.csv")
	meta, err := os.ReadFile(rel + ".meta.json")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := os.ReadFile(rel)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(meta), `"pi_bot":"0.16"`) || strings.Contains(string(meta), `"values"`) {
		t.Fatalf("perturb's metadata lists the masses or values: %s", meta)
	}
	old := cmdtest.WriteFile(t, dir, "old.csv", string(rows))
	cmdtest.WriteFile(t, dir, "old.csv.meta.json", strings.Replace(string(meta), `"pi_bot":"0.16"`,
		`"pi_bot":"[0.16,0.16,0.16,0.16,0.16]","values":"[\"Sales\",\"Tech\",\"Craft\",\"?\"]"`, 1))
	cmdtest.BindSidecar(t, old)
	for _, args := range [][]string{{"--json"}, {"--json", "--round-two"}, {}} {
		if got, want := lmMustRun(t, "estimate", append([]string{old}, args...)...), lmMustRun(t, "estimate", append([]string{rel}, args...)...); got != want {
			t.Errorf("%v: the older release gives\n%s\nwant\n%s", args, got, want)
		}
	}
}

func TestDDPSEstimateRejectsBadInput(t *testing.T) {
	dir, cb, in, rel := lmDDPSRelease(t, "rel.csv")
	meta, err := os.ReadFile(rel + ".meta.json")
	if err != nil {
		t.Fatal(err)
	}
	edited := cmdtest.WriteFile(t, dir, "edited.csv", "job.round1,job.round2\nSales,Tech\nSales,Boss\n")
	cmdtest.WriteFile(t, dir, "edited.csv.meta.json", string(meta))
	oneRound := cmdtest.WriteFile(t, dir, "oneround.csv", "job.round1\nSales\n")
	cmdtest.WriteFile(t, dir, "oneround.csv.meta.json", string(meta))
	badEps := cmdtest.WriteFile(t, dir, "badeps.csv", "job.round1,job.round2\nSales,Tech\n")
	cmdtest.WriteFile(t, dir, "badeps.csv.meta.json", strings.Replace(string(meta), `"epsilon":"`, `"epsilon":"9`, 1))
	// An older release's values (contract version 3 listed them) in
	// another order than the codebook's categories: a report would be read
	// as another value.
	swapped := cmdtest.WriteFile(t, dir, "swapped.csv", "job.round1,job.round2\nSales,Tech\n")
	cmdtest.WriteFile(t, dir, "swapped.csv.meta.json", strings.Replace(string(meta), `"pi_bot":`, `"values":"[\"Tech\",\"Sales\",\"Craft\",\"?\"]","pi_bot":`, 1))
	// A release whose non-participant category is "?": "?" is never a
	// report (its owners report ⊥0 in round two).
	np := filepath.Join(dir, "np.csv")
	lmMustRun(t, "perturb", "--mechanism", "ddps", "--column", "job", "--pi-s", "0.2", "--non-participant", "?", "--codebook", cb, "--seed", "1", "--insecure-seed", in, "-o", np)
	npMeta, err := os.ReadFile(np + ".meta.json")
	if err != nil {
		t.Fatal(err)
	}
	npReport := cmdtest.WriteFile(t, dir, "npreport.csv", "job.round1,job.round2\nSales,Tech\nTech,Sales\n(none),?\n")
	cmdtest.WriteFile(t, dir, "npreport.csv.meta.json", string(npMeta))
	for _, p := range []string{edited, oneRound, badEps, swapped, npReport} {
		cmdtest.BindSidecar(t, p) // tables edited by hand, on purpose
	}
	noJob := cmdtest.WriteFile(t, dir, "nojob.csv", "id\np1\n")
	out := filepath.Join(dir, "out.csv")
	tests := []cmdtest.Failure{
		{Name: "anonymity on a ddps release", Args: []string{rel, "--anonymity", "--truth", in}, Code: 2, Msg: "--anonymity applies to bitflip releases only, but"},
		{Name: "codebook", Args: []string{rel, "--codebook", cb}, Code: 2, Msg: "drop --codebook"},
		{Name: "another column", Args: []string{rel, "--columns", "sex"}, Code: 2, Msg: `is a ddps release of the one column "job"`},
		{Name: "two truths", Args: []string{rel, "--truth", in, "--truth", in}, Code: 2, Msg: "give --truth once"},
		{Name: "edited release", Args: []string{edited}, Code: 1, Msg: `edited.csv: row 2, column "job.round2": "Boss" is not an output of this release`},
		{Name: "the non-participant category as a report", Args: []string{npReport}, Code: 1, Msg: `npreport.csv: row 3, column "job.round2": "?" is not an output of this release`},
		{Name: "values not the codebook's", Args: []string{swapped}, Code: 1, Msg: `swapped.csv: metadata "values" disagrees with the codebook's column "job": value 1 is "Tech", not "Sales"; the file was edited or damaged`},
		{Name: "a round missing", Args: []string{oneRound}, Code: 1, Msg: `has no column "job.round2"`},
		{Name: "ε does not match the masses", Args: []string{badEps}, Code: 1, Msg: `metadata "epsilon" = 90.81093021621633 does not match π_s = 0.2, π_⊥ = 0.16 each (ε = max_v ln((π_⊥v + π_s)/π_⊥v) = 0.8109302162163288)`},
		{Name: "truth without the column", Args: []string{rel, "--truth", noJob}, Code: 1, Msg: `nojob.csv has no column "job"`},
		{Name: "truth is a release", Args: []string{rel, "--truth", rel}, Code: 1, Msg: "is a release (mechanism ddps), not the original table"},
	}
	cmdtest.ExpectFailures(t, newEstimate, out, tests, "-o", out)
}

func BenchmarkDDPSEstimate(b *testing.B) {
	dir := b.TempDir()
	cb := cmdtest.WriteFile(b, dir, "cb.json", lmCodebook)
	in := cmdtest.WriteFile(b, dir, "jobs.csv", lmJobsCSV([]string{"Sales", "Tech", "Craft", "?"}, []int{40000, 30000, 20000, 10000}))
	rel := filepath.Join(dir, "rel.parquet")
	lmMustRun(b, "perturb", "--mechanism", "ddps", "--column", "job", "--pi-s", "0.1", "--codebook", cb, in, "-o", rel)
	for b.Loop() {
		lmMustRun(b, "estimate", rel, "--json")
	}
	b.ReportMetric(float64(100000*b.N)/b.Elapsed().Seconds(), "rows/s")
}
