package estimate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/table"
)

// csvToParquet copies a table into a Parquet file of row groups of
// groupRows rows, metadata included.
func csvToParquet(t *testing.T, src, dst string, groupRows int) {
	t.Helper()
	cmdtest.CopyTableWith(t, src, dst, table.WriteOptions{RowGroupRows: groupRows})
}

// A Parquet release of many row groups is counted row group by row group
// on every core (countGroups), and the estimates are the sequential
// count's byte for byte; a label outside the codebook in a later row group
// is reported, as by the sequential count, at the first bad cell in file
// order.
func TestPRAMGroupCountIsTheSequentialOnRowGroups(t *testing.T) {
	p := newPRAMAdultPipeline(t)
	rel, err := p.release(10, 20000, 1)
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Dir(rel)
	csv := p.decryptAs(t, rel, "csv")
	pq := filepath.Join(run, "groups.parquet")
	csvToParquet(t, csv, pq, 1024) // 20 row groups
	before := pramGroupCounts.Load()
	for _, args := range [][]string{{"--method", "mle", "--truth", p.table}, {"--method", "inverse", "--json"}, {"--tabulate"}} {
		pramCountModes(t, func(mode string) string {
			out, err := pramTryRun(NewCmd, append(args, pq)...)
			if err != nil {
				t.Fatalf("%s %v: %v", mode, args, err)
			}
			return out
		})
	}
	if pramGroupCounts.Load() == before {
		t.Fatal("no count went through countGroups")
	}

	b, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for _, e := range []struct {
		row, col int
		v        string
	}{{19000, 0, "Later"}, {15000, 1, "Bogus-income"}, {15000, 0, "Bogus-education"}} {
		f := strings.Split(lines[e.row], ",")
		f[e.col] = e.v
		lines[e.row] = strings.Join(f, ",")
	}
	bad := filepath.Join(run, "bad.csv")
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	side, err := os.ReadFile(csv + ".meta.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad+".meta.json", side, 0o644); err != nil {
		t.Fatal(err)
	}
	cmdtest.BindSidecar(t, bad)
	badPQ := filepath.Join(run, "bad.parquet")
	csvToParquet(t, bad, badPQ, 1024)
	pramCountModes(t, func(mode string) string {
		code, _, stderr := pramRunTool(NewCmd, badPQ)
		if code != 1 || !strings.Contains(stderr, "row 15000") || !strings.Contains(stderr, "Bogus-education") {
			t.Errorf("%s: exit %d, %s; want exit 1 naming row 15000's education", mode, code, stderr)
		}
		return stderr
	})
}
