package estimate

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/pkg/table"
)

// readCSV reads a CSV table the fixture wrote (cells without commas or
// quotes): its header, rows and metadata.
func (f *pramFixture) readCSV(path string) (header []string, rows [][]string, meta table.Meta) {
	f.t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		f.t.Fatal(err)
	}
	r, err := table.Open(path, table.ReadOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	meta = r.Meta()
	r.Close()
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, l := range lines[1:] {
		rows = append(rows, strings.Split(l, ","))
	}
	return strings.Split(lines[0], ","), rows, meta
}

// pramSplit writes rows in len(names) contiguous parts, each with meta.
func (f *pramFixture) split(header []string, rows [][]string, meta table.Meta, names ...string) []string {
	var out []string
	for i, name := range names {
		lo, hi := i*len(rows)/len(names), (i+1)*len(rows)/len(names)
		out = append(out, f.write(name, header, rows[lo:hi], meta))
	}
	return out
}

// TestPRAMPartsEstimateAsOneRun: a release split into three row files, two
// of them tabulated, gives byte for byte the output of one run on all its
// rows, for every method, with intervals and the summary; also for a K
// above pramDenseCounts (the counts kept in a map).
func TestPRAMPartsEstimateAsOneRun(t *testing.T) {
	f := newPRAMFixture(t)
	whole := f.release("whole.csv", nil)
	parts := f.split([]string{"a", "b"}, pramFixtureRows(), f.meta(), "p1.csv", "p2.csv", "p3.csv")
	c1, c2 := f.path("c1.csv"), f.path("c2.csv")
	pramMustRun(t, NewCmd, "--tabulate", parts[0], "-o", c1)
	pramMustRun(t, NewCmd, "--tabulate", parts[1], "-o", c2)
	for _, args := range [][]string{
		{"--method", "inverse"}, {"--method", "projected"}, {"--method", "mle"}, {"--method", "mle", "--max-iter", "50"},
		{"--json"}, {"--method", "projected", "--ci", "bootstrap", "--replicates", "30", "--seed", "3"},
		{"--marginal", "b"}, {"--columns", "a", "--ci", "none"},
	} {
		want := pramMustRun(t, NewCmd, append(args, whole)...)
		got := pramMustRun(t, NewCmd, append(args, c1, parts[2], c2)...)
		if got != want {
			t.Errorf("%v: parts give\n%s\none run gives\n%s", args, got, want)
		}
	}

	// K = 300 × 300 = 90000 > pramDenseCounts.
	cat := func(name string, k int) map[string]any {
		c := make([]string, k)
		for i := range c {
			c[i] = fmt.Sprint(name, i)
		}
		return map[string]any{"name": name, "categories": c}
	}
	js, _ := json.Marshal(map[string]any{"columns": []any{cat("u", 300), cat("v", 300)}})
	var rows [][]string
	for i := range 40 {
		rows = append(rows, []string{fmt.Sprint("u", i*7%300), fmt.Sprint("v", i%5)})
	}
	meta := table.Meta{"stage": "decrypt", "mechanism": "gamma-diagonal", "gamma": "5e4", "K": "90000", "n": "1000", "m": "40", "codebook": string(js)}
	big := f.write("big.csv", []string{"u", "v"}, rows, meta)
	bp := f.split([]string{"u", "v"}, rows, meta, "b1.csv", "b2.csv")
	bc := f.path("bc.csv")
	pramMustRun(t, NewCmd, "--tabulate", bp[1], "-o", bc)
	if got, want := pramMustRun(t, NewCmd, "--json", bp[0], bc), pramMustRun(t, NewCmd, "--json", big); got != want {
		t.Errorf("K = 90000: parts give %s, one run %s", got, want)
	}
}

// TestPRAMPartsRefused: parts of other releases, a part given twice or
// missing, and edited count tables are refused with one line naming the
// files (and the row and column of a bad count); nothing is written.
func TestPRAMPartsRefused(t *testing.T) {
	f := newPRAMFixture(t)
	parts := f.split([]string{"a", "b"}, pramFixtureRows(), f.meta(), "p1.csv", "p2.csv", "p3.csv")
	other := f.meta()
	other["fingerprint"] = "0abc"
	op := f.split([]string{"a", "b"}, pramFixtureRows(), other, "o1.csv", "o2.csv", "o3.csv")
	// Parts are compared by their codebook's text, which the first part's
	// metadata no longer holds once parsed (its sum stands for it).
	otherCB := f.meta()
	otherCB["codebook"] += " "
	cp := f.split([]string{"a", "b"}, pramFixtureRows(), otherCB, "q1.csv", "q2.csv", "q3.csv")
	c1 := f.path("c1.csv")
	pramMustRun(t, NewCmd, "--tabulate", parts[0], "-o", c1)
	countsOf := func(name string, edit func([]string) []string) string {
		header, rows, meta := f.readCSV(c1)
		return f.write(name, edit(header), func() [][]string {
			rows[0] = edit(rows[0])
			return rows
		}(), meta)
	}
	negative := countsOf("neg.csv", func(r []string) []string {
		if r[2] != "count" {
			r[2] = "-1"
		}
		return r
	})
	fraction := countsOf("frac.csv", func(r []string) []string {
		if r[2] != "count" {
			r[2] = "2.5"
		}
		return r
	})
	noCount := countsOf("nocount.csv", func(r []string) []string {
		if r[2] == "count" {
			r[2] = "n"
		}
		return r
	})
	out := f.path("out.csv")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{parts[0], parts[1], op[2]}, "p1.csv and " + op[2] + ` are not parts of the same release: their metadata item "fingerprint" differs ("00ff" vs "0abc")`},
		{[]string{parts[0], parts[1], cp[2]}, "p1.csv and " + cp[2] + ` are not parts of the same release: their metadata item "codebook" differs`},
		{[]string{"--tabulate", parts[0], parts[1], cp[2]}, "p1.csv and " + cp[2] + ` are not parts of the same release: their metadata item "codebook" differs`},
		{[]string{c1, parts[0], parts[1], parts[2]}, "the parts have more rows than the release: " + c1 + " (4) + " + parts[0] + " (4) + " + parts[1] + " (4) + " + parts[2] + " (4) = 16 rows, but the release has m = 12; a part was given twice"},
		{[]string{c1, parts[2]}, "= 8 rows, but the release has m = 12; a part is missing"},
		{[]string{"--tabulate", c1, parts[0], parts[1], parts[2]}, "= 16 rows, but the release has m = 12; a part was given twice"},
		{[]string{negative, parts[1], parts[2]}, negative + `: row 1, column "count": count "-1" is not a non-negative integer`},
		{[]string{fraction, parts[1], parts[2]}, fraction + `: row 1, column "count": count "2.5" is not a non-negative integer`},
		{[]string{noCount, parts[1], parts[2]}, noCount + ` is a count table without a "count" column`},
	} {
		_, err := pramTryRun(NewCmd, append(c.args, "-o", out)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		} else if n := strings.Count(strings.TrimSpace(err.Error()), "\n"); n != 0 {
			t.Errorf("%v: a %d-line message: %v", c.args, n+1, err)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%v: wrote %s", c.args, out)
		}
	}
}
