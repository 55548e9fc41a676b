package estimate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/cmdtest"
)

// countPartsQueries are count queries on Adult's published columns: P
// with one or two sensitive values, P alone, a sensitive value alone.
const countPartsQueries = `query
"sex=Female,occupation=Sales"
"race=White,sex=Male,occupation=Craft-repair"
"income=>50K,occupation=Exec-managerial"
"income=<=50K,race=Black,sex=Female,occupation=Adm-clerical"
"sex=Female"
"occupation=Prof-specialty"
"race=Asian-Pac-Islander,income=>50K,occupation=Tech-support"
`

// TestCountPartsEstimateAsOneRun: an anonymize release (A′ with one and
// with two sensitive columns, Anatomy, global) cut into three parts — CSV
// and Parquet row files — some of them tabulated into count tables (CSV,
// Parquet, Arrow), answers count queries byte for byte as one run over
// all its rows, in any order of the parts (-o with its metadata, --json,
// --truth); and the count table of count tables is the count table of the
// whole release.
func TestCountPartsEstimateAsOneRun(t *testing.T) {
	a := countAdultData(t, false)
	queries := cmdtest.WriteFile(t, a.dir, "q.csv", countPartsQueries)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"diverted", []string{"--sensitive", "occupation", "--l", "5"}},
		{"diverted2", []string{"--sensitive", "occupation,relationship", "--l", "2", "--grouping", "random"}},
		{"anatomy", []string{"--mechanism", "anatomy", "--sensitive", "occupation", "--l", "5"}},
		{"global", []string{"--mechanism", "global", "--sensitive", "occupation", "--l", "5"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(a.dir, c.name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			rel := filepath.Join(dir, "rel.csv")
			args := append([]string{"--codebook", a.cb, "--seed", "3", "--insecure-seed", a.csv, "-o", rel}, c.args...)
			if c.name == "anatomy" {
				args = append(args, "--groups", filepath.Join(dir, "rel.groups.csv"))
			}
			countRun(t, true, args...)
			parts := lmSplitCSV(t, rel, "p1.csv", "p2.csv", "p3.csv")
			p2 := cmdtest.CopyTable(t, parts[1], filepath.Join(dir, "p2.parquet"))
			cols := "sex,race,income"
			c1, c3, c23 := filepath.Join(dir, "c1.csv"), filepath.Join(dir, "c3.parquet"), filepath.Join(dir, "c23.arrow")
			countRun(t, false, "--tabulate", "--columns", cols, parts[0], "-o", c1)
			countRun(t, false, "--tabulate", "--columns", cols, parts[2], "-o", c3)
			countRun(t, false, "--tabulate", "--columns", cols, p2, parts[2], "-o", c23)

			for _, extra := range [][]string{nil, {"--json"}, {"--truth", a.csv}} {
				whole := filepath.Join(dir, "whole.csv")
				wantOut := countRun(t, false, append([]string{"--queries", queries, rel, "-o", whole}, extra...)...)
				want, wantMeta := readBoth(t, whole)
				for i, split := range [][]string{{c1, p2, c3}, {p2, c3, parts[0]}, {c3, parts[0], parts[1]}, {c23, c1}, parts} {
					got := filepath.Join(dir, "got.csv")
					args := append([]string{"--queries", queries, "-o", got}, split...)
					if c.name == "anatomy" {
						args = append(args, "--groups", filepath.Join(dir, "rel.groups.csv"))
					}
					gotOut := countRun(t, false, append(args, extra...)...)
					g, gMeta := readBoth(t, got)
					if g != want || gMeta != wantMeta || gotOut != wantOut {
						t.Errorf("%v, split %d: parts give\n%s%s\none run gives\n%s%s", extra, i, g, gotOut, want, wantOut)
					}
				}
			}
			// The count table of count tables (and rows) is the whole's.
			cw, cm := filepath.Join(dir, "cw.csv"), filepath.Join(dir, "cm.csv")
			countRun(t, false, "--tabulate", "--columns", cols, rel, "-o", cw)
			countRun(t, false, "--tabulate", c3, c1, p2, "-o", cm)
			w, wm := readBoth(t, cw)
			m, mm := readBoth(t, cm)
			if w != m || wm != mm {
				t.Errorf("merged count table\n%s\n%s\nwhole's\n%s\n%s", m, mm, w, wm)
			}
			if !strings.HasSuffix(strings.SplitN(w, "\n", 2)[0], ",count") || !strings.Contains(wm, `"count_table":"true"`) {
				t.Errorf("count table:\n%s\n%s", w[:min(len(w), 300)], wm)
			}
		})
	}
}

// readBoth returns a CSV file and its sidecar.
func readBoth(t *testing.T, path string) (string, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := os.ReadFile(path + ".meta.json")
	if err != nil {
		t.Fatal(err)
	}
	return string(b), string(m)
}

// TestCountPartsRefused: parts of another release, a part given twice,
// parts adding up to more or fewer rows than N, a query on a column the
// count table lacks, edited count tables and flags that do not go with
// --tabulate are refused with one line naming the file and the fix, and
// nothing is written.
func TestCountPartsRefused(t *testing.T) {
	a := countAdultData(t, false)
	rel := filepath.Join(a.dir, "rel.csv")
	countRun(t, true, "--sensitive", "occupation", "--l", "5", "--codebook", a.cb, "--seed", "1", "--insecure-seed", a.csv, "-o", rel)
	other := filepath.Join(a.dir, "other.csv")
	countRun(t, true, "--sensitive", "occupation", "--l", "4", "--codebook", a.cb, "--seed", "1", "--insecure-seed", a.csv, "-o", other)
	anat := filepath.Join(a.dir, "anat.csv")
	countRun(t, true, "--mechanism", "anatomy", "--sensitive", "occupation", "--l", "5", "--codebook", a.cb, "--seed", "1", "--insecure-seed", a.csv, "-o", anat, "--groups", filepath.Join(a.dir, "anat.groups.csv"))
	parts := lmSplitCSV(t, rel, "p1.csv", "p2.csv")
	c1 := filepath.Join(a.dir, "c1.csv")
	countRun(t, false, "--tabulate", "--columns", "sex", parts[0], "-o", c1)
	meta, err := os.ReadFile(c1 + ".meta.json")
	if err != nil {
		t.Fatal(err)
	}
	edit := func(name, body string) string {
		p := cmdtest.WriteFile(t, a.dir, name, body)
		cmdtest.WriteFile(t, a.dir, name+".meta.json", string(meta))
		cmdtest.BindSidecar(t, p)
		return p
	}
	zero := edit("zero.csv", "sex,occupation,count\nMale,Sales,0\n")
	text := edit("text.csv", "sex,occupation,count\nMale,Sales,many\n")
	noCount := edit("nocount.csv", "sex,occupation\nMale,Sales\n")
	q := "sex=Female,occupation=Sales"
	out := filepath.Join(a.dir, "out.csv")
	tests := []cmdtest.Failure{
		{Name: "another release", Args: []string{"--query", q, c1, other}, Code: 1, Msg: `c1.csv and ` + other + ` are not parts of the same release: their metadata item "l" differs ("5" vs "4"); estimate each release on its own`},
		{Name: "given twice", Args: []string{"--query", q, c1, parts[1], c1}, Code: 2, Msg: `c1.csv is given twice (arguments 1 and 3): give each part of the release once`},
		{Name: "overlap", Args: []string{"--query", q, c1, parts[0], parts[1]}, Code: 1, Msg: `the parts have more rows than the release: ` + c1 + ` (16280) + ` + parts[0] + ` (16280) + ` + parts[1] + ` (16280) ≥ 48840 rows, but the release has N = 32560; a part was given twice, or the parts overlap`},
		{Name: "overlap tabulated", Args: []string{"--tabulate", c1, parts[0], parts[1]}, Code: 1, Msg: `but the release has N = 32560; a part was given twice, or the parts overlap`},
		{Name: "missing part", Args: []string{"--query", q, c1}, Code: 1, Msg: `the parts have fewer rows than the release: ` + c1 + ` (16280) = 16280 rows, but the release has N = 32560; a part is missing: give every part of the release`},
		{Name: "column not kept", Args: []string{"--query", "race=White,occupation=Sales", c1, parts[1]}, Code: 1, Msg: `query "race=White,occupation=Sales": ` + c1 + ` is a count table of the columns sex, occupation, without "race"; tabulate the release again with --columns sex,race`},
		{Name: "column not kept, second part", Args: []string{"--query", "race=White,occupation=Sales", parts[1], c1}, Code: 1, Msg: `without "race"; tabulate the release again with --columns sex,race`},
		{Name: "tabulate without columns", Args: []string{"--tabulate", parts[0]}, Code: 2, Msg: `p1.csv is a release of anonymize (mechanism diverted): name the columns the count table keeps, those your queries will use, with --columns C1,C2,…`},
		{Name: "tabulate a column the rows lack", Args: []string{"--tabulate", "--columns", "sexx", parts[0]}, Code: 1, Msg: `p1.csv has no column "sexx" (columns: age, workclass`},
		{Name: "tabulate a count table again with a column it lacks", Args: []string{"--tabulate", "--columns", "sex,race", parts[1], c1}, Code: 1, Msg: `c1.csv is a count table of the columns sex, occupation, without "race"; tabulate its rows again with --columns sex,race,occupation`},
		{Name: "tabulate with a query", Args: []string{"--tabulate", "--columns", "sex", "--query", q, rel}, Code: 2, Msg: `--tabulate writes the counts, not an estimate: drop --query`},
		{Name: "columns without tabulate", Args: []string{"--columns", "sex", "--query", q, rel}, Code: 2, Msg: `--columns names the columns of a count table of an anonymize release: give it with --tabulate`},
		{Name: "anatomy's sensitive column", Args: []string{"--tabulate", "--columns", "sex,occupation", anat}, Code: 2, Msg: `--columns: "occupation" is in the anatomy release's groups table, not in its rows; drop it: the count table keeps the group id "group" instead`},
		{Name: "count of zero", Args: []string{"--query", q, zero}, Code: 1, Msg: `zero.csv: row 1, column "count": count "0" is not a positive integer: the count table was edited; tabulate the release again with estimate --tabulate`},
		{Name: "count not a number", Args: []string{"--tabulate", text, parts[1]}, Code: 1, Msg: `text.csv: row 1, column "count": count "many" is not a positive integer`},
		{Name: "no count column", Args: []string{"--query", q, noCount, parts[1]}, Code: 1, Msg: `nocount.csv is a count table without a "count" column; tabulate the release again with estimate --tabulate`},
	}
	cmdtest.ExpectFailures(t, newEstimate, out, tests, "-o", out)

	// -o naming a part other than the first is refused too.
	before, _ := readBoth(t, parts[1])
	res := cmdtest.Run(newEstimate, nil, "--query", q, c1, parts[1], "-o", parts[1])
	if after, _ := readBoth(t, parts[1]); res.Code != 1 || !strings.Contains(res.Stderr, "p2.csv: the output is also an input") || after != before {
		t.Errorf("-o over the second part: exit %d, %s; part changed: %v", res.Code, res.Stderr, after != before)
	}
}
