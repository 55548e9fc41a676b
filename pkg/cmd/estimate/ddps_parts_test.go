package estimate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/cmdtest"
)

// lmDDPSSplit releases 300 owners' job (with non-participants "?") and
// splits the release's rows into len(names) contiguous CSV parts with its
// metadata; it returns the whole release, the parts and the original table.
func lmDDPSSplit(t *testing.T, names ...string) (dir, whole, in string, parts []string) {
	t.Helper()
	dir = t.TempDir()
	cb := cmdtest.WriteFile(t, dir, "cb.json", lmCodebook)
	in = cmdtest.WriteFile(t, dir, "jobs.csv", lmJobsCSV([]string{"Sales", "Tech", "Craft", "?"}, []int{120, 90, 40, 50}))
	whole = filepath.Join(dir, "whole.csv")
	lmMustRun(t, "perturb", "--mechanism", "ddps", "--column", "job", "--non-participant", "?", "--pi-s", "0.3", "--codebook", cb, "--seed", "7", "--insecure-seed", in, "-o", whole)
	parts = lmSplitCSV(t, whole, names...)
	return dir, whole, in, parts
}

// TestDDPSPartsEstimateAsOneRun: a ddps release split into three row files,
// two of them tabulated (one of those from two parts), gives byte for byte
// the output of one run on all its rows: table, --json, --round-two and
// --truth.
func TestDDPSPartsEstimateAsOneRun(t *testing.T) {
	dir, whole, in, parts := lmDDPSSplit(t, "p1.csv", "p2.csv", "p3.csv", "p4.csv")
	c1, c23 := filepath.Join(dir, "c1.csv"), filepath.Join(dir, "c23.parquet")
	lmMustRun(t, "estimate", "--tabulate", parts[0], "-o", c1)
	lmMustRun(t, "estimate", "--tabulate", parts[1], parts[2], "-o", c23)
	for _, args := range [][]string{
		nil, {"--json"}, {"--round-two"}, {"--json", "--round-two"}, {"--truth", in}, {"--json", "--truth", in},
	} {
		want := lmMustRun(t, "estimate", append(args, whole)...)
		for _, split := range [][]string{{c1, parts[3], c23}, {parts[0], parts[1], parts[2], parts[3]}, {c23, parts[3], parts[0]}} {
			if got := lmMustRun(t, "estimate", append(args, split...)...); got != want {
				t.Errorf("%v on %v: parts give\n%s\none run gives\n%s", args, split, got, want)
			}
		}
	}
	// A tabulation of the whole estimates as the whole; and the count table
	// holds one row per observed pair, far fewer than the owners.
	cw := filepath.Join(dir, "cw.csv")
	lmMustRun(t, "estimate", "--tabulate", whole, "-o", cw)
	if got, want := lmMustRun(t, "estimate", "--json", cw), lmMustRun(t, "estimate", "--json", whole); got != want {
		t.Errorf("the whole's count table gives %s, the rows %s", got, want)
	}
	data, err := os.ReadFile(cw)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n < 2 || n > 1+5*5 || !strings.HasPrefix(string(data), "job.round1,job.round2,count\n") {
		t.Errorf("count table of %d lines:\n%s", n, data)
	}
}

// TestDDPSPartsRefused: parts of another release, a path given twice,
// edited count tables and estimate flags with --tabulate are refused with
// one line; nothing is written.
func TestDDPSPartsRefused(t *testing.T) {
	dir, whole, in, parts := lmDDPSSplit(t, "p1.csv", "p2.csv")
	c1 := filepath.Join(dir, "c1.csv")
	lmMustRun(t, "estimate", "--tabulate", parts[0], "-o", c1)
	meta, err := os.ReadFile(c1 + ".meta.json")
	if err != nil {
		t.Fatal(err)
	}
	bad := cmdtest.WriteFile(t, dir, "bad.csv", "job.round1,job.round2,count\nSales,Tech,-3\n")
	cmdtest.WriteFile(t, dir, "bad.csv.meta.json", string(meta))
	noCount := cmdtest.WriteFile(t, dir, "nocount.csv", "job.round1,job.round2\nSales,Tech\n")
	cmdtest.WriteFile(t, dir, "nocount.csv.meta.json", string(meta))
	badLabel := cmdtest.WriteFile(t, dir, "badlabel.csv", "job.round1,job.round2,count\nSales,Boss,2\n")
	cmdtest.WriteFile(t, dir, "badlabel.csv.meta.json", string(meta))
	for _, p := range []string{bad, noCount, badLabel} {
		cmdtest.BindSidecar(t, p)
	}
	// Another release of the same table with another π_s.
	other := filepath.Join(dir, "other.csv")
	lmMustRun(t, "perturb", "--mechanism", "ddps", "--column", "job", "--non-participant", "?", "--pi-s", "0.4", "--codebook", filepath.Join(dir, "cb.json"), "--seed", "7", "--insecure-seed", in, "-o", other)
	out := filepath.Join(dir, "out.csv")
	tests := []cmdtest.Failure{
		{Name: "same part twice", Args: []string{parts[0], parts[1], parts[0]}, Code: 2, Msg: "p1.csv is given twice (arguments 1 and 3): give each part of the release once"},
		{Name: "same part twice, other spelling", Args: []string{c1, dir + "/./c1.csv"}, Code: 2, Msg: "is given twice (arguments 1 and 2)"},
		{Name: "another release", Args: []string{parts[0], other}, Code: 1, Msg: `are not parts of the same release: their metadata item "pi_s" differs ("0.3" vs "0.4")`},
		{Name: "negative count", Args: []string{parts[1], bad}, Code: 1, Msg: `bad.csv: row 1, column "count": count "-3" is not a non-negative integer`},
		{Name: "count table without counts", Args: []string{noCount}, Code: 1, Msg: `nocount.csv is a count table without a "count" column`},
		{Name: "count table with a bad label", Args: []string{c1, badLabel}, Code: 1, Msg: `badlabel.csv: row 1, column "job.round2": "Boss" is not an output of this release`},
		{Name: "tabulate with json", Args: []string{"--tabulate", "--json", whole}, Code: 2, Msg: "--tabulate writes the counts, not an estimate: drop --json"},
		{Name: "tabulate with truth", Args: []string{"--tabulate", "--truth", in, whole}, Code: 2, Msg: "drop --truth"},
		{Name: "tabulate with round-two", Args: []string{"--tabulate", "--round-two", whole}, Code: 2, Msg: "drop --round-two"},
	}
	cmdtest.ExpectFailures(t, newEstimate, out, tests, "-o", out)
}
