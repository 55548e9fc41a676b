package anonymize

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/table"
)

// nsaTable writes a table of n rows: a sensitive column s (8 values), a
// non-sensitive column c whose cells cycle through cells, and an id; and
// two codebooks: s alone, and s with c declared over declared.
func nsaTable(t *testing.T, n int, cells, declared []string) (in, cbS, cbSC string) {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("id,s,c\n")
	for i := range n {
		fmt.Fprintf(&b, "%d,v%d,%s\n", i, (i*7)%8, cells[i%len(cells)])
	}
	in = filepath.Join(dir, "in.csv")
	var sCats []string
	for v := range 8 {
		sCats = append(sCats, fmt.Sprintf(`"v%d"`, v))
	}
	var cCats []string
	for _, c := range declared {
		cCats = append(cCats, fmt.Sprintf("%q", c))
	}
	s := `{"name": "s", "categories": [` + strings.Join(sCats, ", ") + `]}`
	cbS, cbSC = filepath.Join(dir, "s.json"), filepath.Join(dir, "sc.json")
	for path, text := range map[string]string{
		in:   b.String(),
		cbS:  `{"columns": [` + s + `]}`,
		cbSC: `{"columns": [` + s + `, {"name": "c", "categories": [` + strings.Join(cCats, ", ") + `]}]}`,
	} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return in, cbS, cbSC
}

// dictionaryOf returns the dictionary of column name in the first batch
// of a Parquet file read with its dictionary pages (DictColumns).
func dictionaryOf(t *testing.T, path, name string) []string {
	t.Helper()
	r, err := table.Open(path, table.ReadOptions{DictColumns: []string{name}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	d, ok := rec.Column(r.Schema().FieldIndices(name)[0]).(*array.Dictionary)
	if !ok {
		t.Fatalf("column %s is not read as a dictionary", name)
	}
	vs := table.ValuesOf(d.Dictionary())
	var dict []string
	for i := range d.Dictionary().Len() {
		dict = append(dict, vs.String(i))
	}
	return dict
}

// TestCodedColumnsPublishTheSameRows: a non-sensitive column that the
// codebook declares travels as codes (nsaCoder) and is published exactly
// as it is: a seeded run gives the same rows in the same order whether
// the codebook declares it or not, in CSV and in Parquet, with cells the
// codebook lacks among them (extra labels). In the Parquet file the
// column's dictionary is the codebook's labels, then the extra labels in
// sorted order, not in the order they first appear in the input (which
// the shuffle hides).
func TestCodedColumnsPublishTheSameRows(t *testing.T) {
	cells := []string{"zeta", "c1", "beta", "c0", "alpha", "c1", "zeta", "c2"}
	in, cbS, cbSC := nsaTable(t, 3000, cells, []string{"c0", "c1", "c2", "unused"})
	dir := t.TempDir()
	for _, ext := range []string{"csv", "parquet"} {
		out := func(cb, name string) string {
			p := filepath.Join(dir, name+"."+ext)
			mustAnon(t, "--sensitive", "s", "--l", "3", "--codebook", cb, "--seed", "5", "--insecure-seed", in, "-o", p)
			return p
		}
		plain, coded := out(cbS, "plain"), out(cbSC, "coded")
		_, want, _ := cmdtest.ReadTable(t, plain)
		_, got, _ := cmdtest.ReadTable(t, coded)
		if len(want) < 1000 {
			t.Fatalf("%s: %d rows", ext, len(want))
		}
		if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
			t.Errorf("%s: the rows differ when the codebook declares c", ext)
		}
		if ext == "parquet" {
			wantDict := []string{"c0", "c1", "c2", "unused", "alpha", "beta", "zeta"}
			if dict := dictionaryOf(t, coded, "c"); !slices.Equal(dict, wantDict) {
				t.Errorf("the Parquet dictionary of c is %q, want %q", dict, wantDict)
			}
		}
	}
}

// TestCodedColumnTooManyExtraLabels: past maxExtraLabels values that the
// codebook does not declare, anonymize stops with one line naming the
// file, the row, the column and the fix, and writes nothing.
func TestCodedColumnTooManyExtraLabels(t *testing.T) {
	defer func(old int) { maxExtraLabels = old }(maxExtraLabels)
	maxExtraLabels = 2
	in, _, cbSC := nsaTable(t, 500, []string{"c0", "x", "y", "c0", "z"}, []string{"c0"})
	out := filepath.Join(t.TempDir(), "out.csv")
	code, _, errs := runAnon("--sensitive", "s", "--l", "3", "--codebook", cbSC, "--seed", "5", "--insecure-seed", in, "-o", out)
	if code == 0 {
		t.Fatal("anonymize took a third extra label")
	}
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	last := lines[len(lines)-1] // after the seed's warning and the left-out note
	for _, want := range []string{"in.csv: row 5, column \"c\"", `"z"`, "declare them in the codebook"} {
		if !strings.Contains(last, want) {
			t.Errorf("message %q lacks %q", last, want)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("output left behind: %v", err)
	}
}
