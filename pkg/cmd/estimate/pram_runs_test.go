package estimate

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/pkg/table"
)

// pramWideRelease writes a release over u × v (ku × kv values) of m rows
// whose values repeat with uneven counts, in three row-file parts and as
// one file; it returns the one file and the parts (the middle one
// tabulated, with an explicit zero count added).
func pramWideRelease(t *testing.T, f *pramFixture, ku, kv, m int) (whole string, parts []string) {
	t.Helper()
	cat := func(name string, k int) map[string]any {
		c := make([]string, k)
		for i := range c {
			c[i] = fmt.Sprint(name, i)
		}
		return map[string]any{"name": name, "categories": c}
	}
	js, _ := json.Marshal(map[string]any{"columns": []any{cat("u", ku), cat("v", kv)}})
	var rows [][]string
	for i := range m {
		// i*i mod a prime spreads the values, with repeats of every count
		// from 1 up.
		r := i * i % 1009
		rows = append(rows, []string{fmt.Sprint("u", r*13%ku), fmt.Sprint("v", r%kv)})
	}
	meta := table.Meta{"stage": "decrypt", "mechanism": "gamma-diagonal", "gamma": "40",
		"K": fmt.Sprint(ku * kv), "n": fmt.Sprint(10 * m), "m": fmt.Sprint(m), "codebook": string(js)}
	whole = f.write(fmt.Sprintf("wide%d.csv", ku*kv), []string{"u", "v"}, rows, meta)
	parts = f.split([]string{"u", "v"}, rows, meta, "w1.csv", "w2.csv", "w3.csv")
	tab := f.path("w2-tab.csv")
	pramMustRun(t, NewCmd, "--tabulate", parts[1], "-o", tab)
	header, counted, tabMeta := f.readCSV(tab)
	// A value no row has, with an explicit zero count.
	counted = append(counted, []string{fmt.Sprint("u", ku-1), fmt.Sprint("v", kv-1), "0"})
	tab = f.write("w2-counts.csv", header, counted, tabMeta)
	parts[1] = tab
	return whole, parts
}

// TestPRAMStreamedEstimateIsTheHeldOne: the streamed estimate (counts
// walked from the tally, each value's estimate and interval a function of
// its count) writes byte for byte what the estimate holding every count
// and estimate writes, for every method, with and without intervals, for a
// K listed value by value and one aggregated; and so does it when the
// tally spills its counts to disk every 3, 20 or 100 values — from one
// row file, and from parts mixing row files and a count table with a zero
// count.
func TestPRAMStreamedEstimateIsTheHeldOne(t *testing.T) {
	defer func(h bool, s int) { pramHoldWhole, pramSpillAt = h, s }(pramHoldWhole, pramSpillAt)
	f := newPRAMFixture(t)
	setBatchRows(t, 250) // the tally spills between batches
	for _, shape := range []struct{ ku, kv, m int }{{300, 300, 2000}, {1100, 1000, 3000}} {
		whole, parts := pramWideRelease(t, f, shape.ku, shape.kv, shape.m)
		for _, args := range [][]string{
			{"--method", "inverse"}, {"--method", "projected"}, {"--method", "mle"},
			{"--method", "mle", "--ci", "none"}, {"--json"}, {"--json", "--method", "inverse", "--level", "0.8"},
		} {
			pramHoldWhole, pramSpillAt = true, 1<<18
			want := pramMustRun(t, NewCmd, append(args, whole)...)
			pramHoldWhole = false
			for _, spill := range []int{1 << 18, 100, 20, 3} {
				pramSpillAt = spill
				for _, in := range [][]string{{whole}, parts} {
					spills := pramSpills.Load()
					got := pramMustRun(t, NewCmd, append(args, in...)...)
					if spilled := pramSpills.Load() > spills; spilled != (spill < 1<<18) {
						t.Fatalf("spill every %d values: spilled %v", spill, spilled)
					}
					if got != want {
						t.Errorf("K = %d, %v, spilled every %d values, %d input(s): streamed estimate differs from the held one:\n%.600s\nwant\n%.600s",
							shape.ku*shape.kv, args, spill, len(in), got, want)
					}
				}
			}
		}
	}
}

// TestPRAMSpilledTabulateIsTheHeldOne: a count table tabulated with the
// counts spilled to disk is the one tabulated in memory.
func TestPRAMSpilledTabulateIsTheHeldOne(t *testing.T) {
	defer func(s int) { pramSpillAt = s }(pramSpillAt)
	f := newPRAMFixture(t)
	whole, parts := pramWideRelease(t, f, 1100, 1000, 3000)
	want := pramMustRun(t, NewCmd, "--tabulate", whole)
	if n := strings.Count(want, "\n"); n < 500 {
		t.Fatalf("the count table has %d lines; the test wants hundreds of values", n)
	}
	pramSpillAt = 7
	setBatchRows(t, 100) // a spill after each batch of rows
	spills := pramSpills.Load()
	if got := pramMustRun(t, NewCmd, "--tabulate", whole); got != want {
		t.Errorf("spilled tabulate differs:\n%.600s\nwant\n%.600s", got, want)
	}
	if pramSpills.Load() < spills+30 {
		t.Errorf("%d runs spilled, want one a batch", pramSpills.Load()-spills)
	}
	// The parts' tabulation: the explicit zero is left out, as in memory.
	pramSpillAt = 1 << 18
	wantParts := pramMustRun(t, NewCmd, append([]string{"--tabulate"}, parts...)...)
	pramSpillAt = 7
	if got := pramMustRun(t, NewCmd, append([]string{"--tabulate"}, parts...)...); got != wantParts {
		t.Errorf("spilled tabulate of parts differs:\n%.600s\nwant\n%.600s", got, wantParts)
	}
}

// TestPRAMSpillWithoutRoomFailsCleanly: when the counts must spill and
// $TMPDIR cannot take them, estimate fails with one line that says to set
// TMPDIR, and writes no table.
func TestPRAMSpillWithoutRoomFailsCleanly(t *testing.T) {
	defer func(s int) { pramSpillAt = s }(pramSpillAt)
	f := newPRAMFixture(t)
	whole, _ := pramWideRelease(t, f, 1100, 1000, 3000)
	pramSpillAt = 7
	t.Setenv("TMPDIR", f.path("no-such-dir"))
	out := f.path("est.csv")
	_, err := pramTryRun(NewCmd, whole, "-o", out)
	if err == nil || !strings.Contains(err.Error(), "set TMPDIR") || strings.Contains(err.Error(), "estimate: estimate:") || strings.Count(strings.TrimSpace(err.Error()), "\n") > 0 {
		t.Errorf("err = %v, want one line saying to set TMPDIR, named once", err)
	}
	if _, serr := os.Stat(out); serr == nil {
		t.Errorf("%s was written", out)
	}
}
