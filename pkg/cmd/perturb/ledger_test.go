package perturb_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/internal/releasetest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/perturb"
	"github.com/pramkit/pramkit/pkg/ledger"
)

// plainPerturb is perturb as its Main builds it: the default ledger.
func plainPerturb(s *cli.Streams) *cobra.Command { return perturb.NewCmd(s, nil) }

// ledgerLines reads a ledger's records.
func ledgerLines(t *testing.T, path string) []ledger.Entry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []ledger.Entry
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var e ledger.Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("ledger line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// TestLedgerCountsReleasesAcrossRuns: perturbing the same encrypted file
// twice is refused the second time, naming the ledger, the first release's
// time and output and --allow-recompose; with --allow-recompose the
// composed ε over both is printed, recorded in the output and the ledger.
func TestLedgerCountsReleasesAcrossRuns(t *testing.T) {
	const n, m = 1000, 100
	dir := t.TempDir()
	enc := encrypted(t, dir, "a", 3, m, n)
	led := filepath.Join(dir, "state", "releases.jsonl")
	rel1, rel2 := filepath.Join(dir, "rel1.parquet"), filepath.Join(dir, "rel2.parquet")
	if res := runTool(perturbCmd, "--gamma", "11", "--ledger", led, enc, "-o", rel1); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	first := ledgerLines(t, led)
	if len(first) != 1 || first[0].Fingerprint != releasetest.Fingerprint || first[0].Gamma != 11 || first[0].Releases != 1 ||
		first[0].Output != rel1 || first[0].N != n || first[0].M != m || first[0].SampleID != "position" || first[0].ToolVersion == "" {
		t.Fatalf("ledger after one release: %+v", first)
	}
	// ε = ln((1000 + 100·10)/1000) = ln 2.
	if math.Abs(first[0].Epsilon-math.Ln2) > 1e-12 || first[0].EpsilonComposed != first[0].Epsilon {
		t.Errorf("first release ε %v, composed %v; want ln 2", first[0].Epsilon, first[0].EpsilonComposed)
	}

	// ln((1000 + 100·(11·3 − 1))/1000) = ln 4.2.
	want := math.Log(4.2)
	res := runTool(perturbCmd, "--gamma", "3", "--ledger", led, enc, "-o", rel2)
	line := fmt.Sprintf(`^perturb: this sample was already released \(1 release\(s\) in the ledger %s, the last on %s to %s\): another release composes to ε = %.6g \(this release alone: ε = %.6g\); pass --allow-recompose`,
		regexp.QuoteMeta(led), regexp.QuoteMeta(first[0].Time.Format("2006-01-02T15:04:05Z07:00")), regexp.QuoteMeta(rel1), want, math.Log(1.2))
	if res.Code != cli.ExitFailure || !regexp.MustCompile(line).MatchString(res.Stderr) || strings.Count(res.Stderr, "\n") != 1 {
		t.Errorf("second release: code %d, %q\nwant %s", res.Code, res.Stderr, line)
	}
	if _, err := os.Stat(rel2); err == nil {
		t.Error("a refused release left an output file")
	}
	if got := ledgerLines(t, led); len(got) != 1 {
		t.Errorf("a refused release was recorded: %+v", got)
	}

	res = runTool(perturbCmd, "--gamma", "3", "--allow-recompose", "--ledger", led, enc, "-o", rel2)
	if res.Code != 0 || !strings.Contains(res.Stderr, fmt.Sprintf("release 2 of the same sample: composed ε = %.6g", want)) {
		t.Fatalf("--allow-recompose: code %d, %q", res.Code, res.Stderr)
	}
	_, _, meta := releasetest.ReadTable(t, rel2)
	ec, _ := meta.Float("epsilon_composed", "")
	if meta["releases"] != "1" || meta["gammas"] != "[3]" || meta["sample_releases"] != "2" || math.Abs(ec-want) > 1e-12 {
		t.Errorf("metadata %v", meta)
	}
	all := ledgerLines(t, led)
	if len(all) != 2 || all[1].Releases != 2 || all[1].Gamma != 3 || math.Abs(all[1].EpsilonComposed-want) > 1e-12 {
		t.Errorf("ledger after two releases: %+v", all)
	}

	// A third, perturbing the second release again: its own chain (γ = 3)
	// is less than the ledger knows (11·3), so the ledger's Γ counts:
	// ln((1000 + 100·(11·3·2 − 1))/1000) = ln 7.5.
	rel3 := filepath.Join(dir, "rel3.parquet")
	res = runTool(perturbCmd, "--gamma", "2", "--allow-recompose", "--ledger", led, rel2, "-o", rel3)
	if res.Code != 0 || !strings.Contains(res.Stderr, fmt.Sprintf("release 3 of the same sample: composed ε = %.6g", math.Log(7.5))) {
		t.Fatalf("third release: code %d, %q", res.Code, res.Stderr)
	}
	_, _, meta3 := releasetest.ReadTable(t, rel3)
	if meta3["releases"] != "2" || meta3["gammas"] != "[3,2]" || meta3["gamma_composed"] != "6" || meta3["sample_releases"] != "3" {
		t.Errorf("third release's metadata %v", meta3)
	}
}

// TestLedgerFailedRunDoesNotCount: a run that fails while perturbing (a
// truncated input) leaves no record, so the sample can still be released.
func TestLedgerFailedRunDoesNotCount(t *testing.T) {
	dir := t.TempDir()
	enc := encrypted(t, dir, "a", 3, 10, 50)
	if res := runTool(perturbCmd, "--no-ledger", "--gamma", "1e18", enc, "-o", filepath.Join(dir, "ignored.parquet")); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	csv := truncatedEncryptedCSV(t, dir)
	led := filepath.Join(dir, "l.jsonl")
	if res := runTool(perturbCmd, "--gamma", "3", "--ledger", led, csv, "-o", filepath.Join(dir, "r.csv")); res.Code != cli.ExitFailure || !strings.Contains(res.Stderr, "truncated") {
		t.Fatalf("truncated input: code %d, %q", res.Code, res.Stderr)
	}
	if got := ledgerLines(t, led); len(got) != 0 {
		t.Errorf("a failed run was recorded: %+v", got)
	}
	if res := runTool(perturbCmd, "--gamma", "3", "--ledger", led, enc, "-o", filepath.Join(dir, "r.parquet")); res.Code != 0 {
		t.Errorf("release after a failed run: %q", res.Stderr)
	}
}

// TestLedgerStreamCountsFromTheFirstRow: a release to standard output
// is recorded before its first row and stays recorded when the run fails
// later (rows already out cannot be taken back: the ledger over-counts,
// never under-counts); the sample's next release is then refused as a
// second one. It had been recorded only at the end, and a run that failed
// after printing rows left the ledger empty.
func TestLedgerStreamCountsFromTheFirstRow(t *testing.T) {
	dir := t.TempDir()
	enc := encrypted(t, dir, "a", 3, 10, 50)
	csv := truncatedEncryptedCSV(t, dir)
	led := filepath.Join(dir, "l.jsonl")
	res := runTool(perturbCmd, "--gamma", "3", "--ledger", led, "--output-format", "csv", csv)
	if res.Code != cli.ExitFailure || !strings.Contains(res.Stderr, "truncated") || strings.Count(res.Stdout, "\n") < 2 {
		t.Fatalf("truncated input to stdout: code %d, %d bytes out, %q", res.Code, len(res.Stdout), res.Stderr)
	}
	if got := ledgerLines(t, led); len(got) != 1 || got[0].Output != "-" {
		t.Fatalf("rows out, ledger %+v; want the release recorded", got)
	}
	if res := runTool(perturbCmd, "--gamma", "3", "--ledger", led, enc, "-o", filepath.Join(dir, "r.parquet")); res.Code == 0 || !strings.Contains(res.Stderr, "already released") {
		t.Errorf("the next release: code %d, %q; want it refused as a second", res.Code, res.Stderr)
	}
}

// truncatedEncryptedCSV encrypts dir's sample (made by encrypted) to a
// CSV, cuts its last row off and binds its sidecar to the cut file, so
// that a run reading it fails mid-way, at the missing row, after the
// ledger was consulted.
func truncatedEncryptedCSV(t *testing.T, dir string) string {
	t.Helper()
	csv := filepath.Join(dir, "a.enc.csv")
	if res := runTool(encryptCmd, "--codebook", filepath.Join(dir, "a.cb", "codebook.json"), "--key-out", filepath.Join(dir, "b.key"), "-o", csv, filepath.Join(dir, "a.sample.csv")); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	b, _ := os.ReadFile(csv)
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	os.WriteFile(csv, []byte(strings.Join(lines[:len(lines)-1], "")), 0o600)
	cmdtest.BindSidecar(t, csv)
	return csv
}

// TestLedgerDefaultPathAndOptOut: without --ledger the ledger is
// $XDG_STATE_HOME/pramkit/releases.jsonl; --no-ledger warns and writes
// none; flags that contradict or do not apply are usage errors.
func TestLedgerDefaultPathAndOptOut(t *testing.T) {
	dir := t.TempDir()
	enc := encrypted(t, dir, "a", 3, 10, 50)
	state := filepath.Join(dir, "xdg")
	t.Setenv("XDG_STATE_HOME", state)
	if res := runTool(plainPerturb, "--gamma", "3", enc, "-o", filepath.Join(dir, "r1.csv")); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	def := filepath.Join(state, "pramkit", "releases.jsonl")
	if got := ledgerLines(t, def); len(got) != 1 {
		t.Errorf("default ledger %s: %+v", def, got)
	}
	if res := runTool(plainPerturb, "--gamma", "3", enc, "-o", filepath.Join(dir, "r2.csv")); res.Code != cli.ExitFailure || !strings.Contains(res.Stderr, "in the ledger "+def) {
		t.Errorf("second release with the default ledger: code %d, %q", res.Code, res.Stderr)
	}
	res := runTool(plainPerturb, "--gamma", "3", "--no-ledger", enc, "-o", filepath.Join(dir, "r3.csv"))
	if res.Code != 0 || !strings.Contains(res.Stderr, "perturb: warning: --no-ledger: releases of this sample are not counted") {
		t.Errorf("--no-ledger: code %d, %q", res.Code, res.Stderr)
	}
	if got := ledgerLines(t, def); len(got) != 1 {
		t.Errorf("--no-ledger recorded a release: %+v", got)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--gamma", "3", "--no-ledger", "--ledger", "x.jsonl", enc}, "--ledger and --no-ledger contradict"},
		{[]string{"--mechanism", "bitflip", "--lie", "0.2", "--ledger", "x.jsonl", enc}, "--ledger belongs to --mechanism gamma-diagonal, not bitflip"},
		{[]string{"--mechanism", "ddps", "--column", "a", "--pi-s", "0.1", "--no-ledger", enc}, "--no-ledger belongs to --mechanism gamma-diagonal, not ddps"},
	} {
		if res := runTool(plainPerturb, append(tt.args, "-o", filepath.Join(dir, "u.csv"))...); res.Code != cli.ExitUsage || !strings.Contains(res.Stderr, tt.want) {
			t.Errorf("%v: code %d, %q; want 2 and %q", tt.args, res.Code, res.Stderr, tt.want)
		}
	}
	// A damaged ledger stops the release, naming the file and line.
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"fingerprint\":\"x\"\n"), 0o600)
	if res := runTool(plainPerturb, "--gamma", "3", "--ledger", bad, enc, "-o", filepath.Join(dir, "r4.csv")); res.Code != cli.ExitFailure || !strings.Contains(res.Stderr, bad+", line 1: not a release record") {
		t.Errorf("damaged ledger: code %d, %q", res.Code, res.Stderr)
	}
}

// TestLedgerConcurrentReleases: several perturb runs releasing the same
// sample at once into one ledger: exactly one succeeds, the others are
// refused, and the ledger holds one record.
func TestLedgerConcurrentReleases(t *testing.T) {
	dir := t.TempDir()
	enc := encrypted(t, dir, "a", 3, 2000, 5000)
	led := filepath.Join(dir, "shared.jsonl")
	const runs = 4
	codes := make([]int, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = runTool(perturbCmd, "--gamma", "3", "--ledger", led, enc, "-o", filepath.Join(dir, fmt.Sprintf("r%d.parquet", i))).Code
		}()
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		if c == 0 {
			ok++
		}
	}
	if ok != 1 {
		t.Errorf("exit codes %v: want exactly one release", codes)
	}
	if got := ledgerLines(t, led); len(got) != 1 {
		t.Errorf("ledger: %+v", got)
	}
}

// TestPrivacySpent: perturbing again a release whose product of γ's would
// overflow float64 is refused, even with --allow-recompose.
func TestPrivacySpent(t *testing.T) {
	dir := t.TempDir()
	enc := encrypted(t, dir, "a", 3, 10, 50)
	rel1, rel2 := filepath.Join(dir, "r1.csv"), filepath.Join(dir, "r2.csv")
	if res := runTool(perturbCmd, "--gamma", "1e200", enc, "-o", rel1); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	res := runTool(perturbCmd, "--gamma", "1e200", "--allow-recompose", rel1, "-o", rel2)
	if res.Code != cli.ExitFailure || !strings.Contains(res.Stderr, "r1.csv: the product of γ over its perturbations overflows: its privacy is spent") {
		t.Errorf("code %d, %q", res.Code, res.Stderr)
	}
	if _, err := os.Stat(rel2); err == nil {
		t.Error("output written")
	}
}
