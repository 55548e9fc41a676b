package estimate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/cmdtest"
)

// lmSplitCSV splits a CSV release's rows into len(names) contiguous parts
// carrying its metadata, in its folder.
func lmSplitCSV(t *testing.T, rel string, names ...string) []string {
	t.Helper()
	data, err := os.ReadFile(rel)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := os.ReadFile(rel + ".meta.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(rel)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	header, rows := lines[0], lines[1:]
	var parts []string
	for i, name := range names {
		lo, hi := i*len(rows)/len(names), (i+1)*len(rows)/len(names)
		p := cmdtest.WriteFile(t, dir, name, header+"\n"+strings.Join(rows[lo:hi], "\n")+"\n")
		cmdtest.WriteFile(t, dir, name+".meta.json", string(meta))
		cmdtest.BindSidecar(t, p) // a part of the release, cut by hand
		parts = append(parts, p)
	}
	return parts
}

// TestBitflipPartsEstimateAsOneRun: a bitflip release split into three row
// files, two of them tabulated, gives byte for byte the output of one run
// on all its rows: table, --json, --truth, --level, --columns; and
// --anonymity is the same on a count table as on the rows.
func TestBitflipPartsEstimateAsOneRun(t *testing.T) {
	dir, _, in, rel := lmBitflipRelease(t, 5, 400, "sex,color,flag,job")
	parts := lmSplitCSV(t, rel, "p1.csv", "p2.csv", "p3.csv")
	c1, c3 := filepath.Join(dir, "c1.csv"), filepath.Join(dir, "c3.arrow")
	lmMustRun(t, "estimate", "--tabulate", parts[0], "-o", c1)
	lmMustRun(t, "estimate", "--tabulate", parts[2], "-o", c3)
	for _, args := range [][]string{
		nil, {"--json"}, {"--truth", in}, {"--json", "--truth", in, "--level", "0.8"}, {"--columns", "color,job"},
	} {
		want := lmMustRun(t, "estimate", append(args, rel)...)
		for _, split := range [][]string{{c1, parts[1], c3}, parts, {parts[1], c3, parts[0]}} {
			if got := lmMustRun(t, "estimate", append(args, split...)...); got != want {
				t.Errorf("%v on %v: parts give\n%s\none run gives\n%s", args, split, got, want)
			}
		}
	}
	cw := filepath.Join(dir, "cw.csv")
	lmMustRun(t, "estimate", "--tabulate", rel, "-o", cw)
	anon := []string{"--anonymity", "--truth", in, "--json"}
	if got, want := lmMustRun(t, "estimate", append(anon, cw)...), lmMustRun(t, "estimate", append(anon, rel)...); got != want {
		t.Errorf("--anonymity on the count table gives %s, on the rows %s", got, want)
	}
	data, err := os.ReadFile(cw)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(data)), "\n"); len(lines) != 2 || !strings.HasSuffix(lines[0], ",count") || !strings.HasSuffix(lines[1], ",400") {
		t.Errorf("count table:\n%s", data)
	}
}

// TestBitflipPartsRefused: parts of another release, a path given twice,
// edited count tables, --anonymity on several files and estimate flags with
// --tabulate are refused with one line; nothing is written.
func TestBitflipPartsRefused(t *testing.T) {
	dir, cb, in, rel := lmBitflipRelease(t, 5, 100, "sex,flag")
	parts := lmSplitCSV(t, rel, "p1.csv", "p2.csv")
	c1 := filepath.Join(dir, "c1.csv")
	lmMustRun(t, "estimate", "--tabulate", parts[0], "-o", c1)
	meta, err := os.ReadFile(c1 + ".meta.json")
	if err != nil {
		t.Fatal(err)
	}
	head, err := os.ReadFile(c1)
	if err != nil {
		t.Fatal(err)
	}
	header := strings.SplitN(string(head), "\n", 2)[0] // sex bit, flag bit, count
	edit := func(name, body string) string {
		p := cmdtest.WriteFile(t, dir, name, body)
		cmdtest.WriteFile(t, dir, name+".meta.json", string(meta))
		cmdtest.BindSidecar(t, p)
		return p
	}
	tooMany := edit("toomany.csv", header+"\n3,9,5\n")
	negative := edit("negative.csv", header+"\n0,0,-1\n")
	noCount := edit("nocount.csv", strings.TrimSuffix(header, ",count")+"\n1,1\n")
	other := filepath.Join(dir, "other.csv")
	lmMustRun(t, "perturb", "--mechanism", "bitflip", "--lie", "0.3", "--columns", "sex,flag", "--codebook", cb, "--seed", "1", "--insecure-seed", in, "-o", other)
	out := filepath.Join(dir, "out.csv")
	tests := []cmdtest.Failure{
		{Name: "same part twice", Args: []string{parts[0], parts[1], parts[0]}, Code: 2, Msg: "p1.csv is given twice (arguments 1 and 3): give each part of the release once (a bitflip release records no number of rows"},
		{Name: "another release", Args: []string{parts[0], other}, Code: 1, Msg: `are not parts of the same release: their metadata item "lie" differs ("0.2" vs "0.3")`},
		{Name: "more ones than rows", Args: []string{c1, tooMany}, Code: 1, Msg: `toomany.csv: row 1, column "flag=1": "9" is not a number of ones in [0, 5] (the row's count)`},
		{Name: "negative count", Args: []string{negative}, Code: 1, Msg: `negative.csv: row 1, column "count": count "-1" is not a non-negative integer`},
		{Name: "count table without counts", Args: []string{noCount}, Code: 1, Msg: `nocount.csv is a count table without a "count" column`},
		{Name: "anonymity on parts", Args: []string{"--anonymity", "--truth", in, parts[0], parts[1]}, Code: 2, Msg: "--anonymity reads the release's q and L, not its rows: give one file of the release"},
		{Name: "tabulate with json", Args: []string{"--tabulate", "--json", rel}, Code: 2, Msg: "drop --json"},
		{Name: "tabulate with columns", Args: []string{"--tabulate", "--columns", "sex", rel}, Code: 2, Msg: "drop --columns"},
		{Name: "tabulate with anonymity", Args: []string{"--tabulate", "--anonymity", "--truth", in, rel}, Code: 2, Msg: "drop --truth"},
	}
	cmdtest.ExpectFailures(t, newEstimate, out, tests, "-o", out)
}
