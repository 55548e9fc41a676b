package estimate

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/table"
)

// pramCountModes runs f under every way of counting that must agree: the
// sequential path, and the parallel one on 1 and 2 cores with the reader's
// batches and with batches of 1000 and 4093 rows ($PRAMKIT_BATCH_ROWS),
// its workers counting each batch (pramChunkCounts), and once with emit
// counting row by row, as for a K above pramChunkCounts.
func pramCountModes(t *testing.T, f func(mode string) string) {
	t.Helper()
	defer func(p int, s bool, c int) {
		runtime.GOMAXPROCS(p)
		pramCountSerial = s
		pramChunkCounts = c
	}(runtime.GOMAXPROCS(0), pramCountSerial, pramChunkCounts)
	pramCountSerial = true
	want := f("serial")
	pramCountSerial = false
	for _, procs := range []int{1, 2} {
		for _, chunk := range []int{0, 1000, 4093} {
			runtime.GOMAXPROCS(procs)
			setBatchRows(t, chunk)
			mode := fmt.Sprintf("GOMAXPROCS=%d chunk=%d", procs, chunk)
			if got := f(mode); got != want {
				t.Errorf("%s: output differs from the sequential count's:\n%s\nwant\n%s", mode, got, want)
			}
		}
	}
	pramChunkCounts = 0
	setBatchRows(t, 1000)
	if got := f("GOMAXPROCS=2 chunk=1000 counted by row"); got != want {
		t.Errorf("counted row by row in emit: output differs from the sequential count's:\n%s\nwant\n%s", got, want)
	}
}

// The parallel count gives the sequential one's output byte for byte on a
// real release of Adult (education × income, m = 20,000), in every format
// the reader takes, whatever the core count and the chunk size.
func TestPRAMParallelCountIsTheSequentialOnAdult(t *testing.T) {
	p := newPRAMAdultPipeline(t)
	rel, err := p.release(7, 20000, 1)
	if err != nil {
		t.Fatal(err)
	}
	files := []string{rel}
	for _, ext := range []string{"csv", "parquet"} {
		files = append(files, p.decryptAs(t, rel, ext))
	}
	for _, file := range files {
		for _, args := range [][]string{
			{"--method", "mle", "--truth", p.table},
			{"--method", "inverse", "--json"},
			{"--tabulate"},
		} {
			pramCountModes(t, func(mode string) string {
				out, err := pramTryRun(NewCmd, append(args, file)...)
				if err != nil {
					t.Fatalf("%s %v: %v", mode, args, err)
				}
				return out
			})
		}
	}
}

// A bad label is reported at the same row and column as the sequential
// path reports it: the first bad cell in row order, and within the row the
// first column, even when later chunks (or a later column of the chunk)
// hold bad cells too.
func TestPRAMParallelCountReportsTheFirstBadCell(t *testing.T) {
	p := newPRAMAdultPipeline(t)
	rel, err := p.release(8, 20000, 1)
	if err != nil {
		t.Fatal(err)
	}
	csv := p.decryptAs(t, rel, "csv")
	b, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	// Line 0 is the header: line i is row i. Row 15000 has a bad income
	// (second column) and row 15000 a bad education too; rows 15001 and
	// 19000 (later chunks) have bad cells as well.
	for _, e := range []struct {
		row, col int
		v        string
	}{{15000, 1, "Bogus-income"}, {15000, 0, "Bogus-education"}, {15001, 0, "Later"}, {19000, 1, "Later"}} {
		f := strings.Split(lines[e.row], ",")
		f[e.col] = e.v
		lines[e.row] = strings.Join(f, ",")
	}
	if err := os.WriteFile(csv, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	cmdtest.BindSidecar(t, csv)
	pramCountModes(t, func(mode string) string {
		code, _, stderr := pramRunTool(NewCmd, csv)
		if code != 1 || !strings.Contains(stderr, "row 15000") || !strings.Contains(stderr, "Bogus-education") {
			t.Errorf("%s: exit %d, %s; want exit 1 naming row 15000's education", mode, code, stderr)
		}
		return stderr
	})
}

// A Parquet release is read with its release columns as dictionaries (no
// string per cell); a release on standard input is read as it comes.
func TestPRAMParquetReleaseIsReadAsDictionaries(t *testing.T) {
	p := newPRAMAdultPipeline(t)
	rel, err := p.release(9, 20000, 1)
	if err != nil {
		t.Fatal(err)
	}
	pq := p.decryptAs(t, rel, "parquet")
	o := &Options{Streams: &cli.Streams{In: strings.NewReader("")}}
	r := &pramRelease{names: []string{"education", "income"}}
	in, err := table.Open(pq, table.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	d, err := r.reopenWithDictionaries(o, in)
	if err != nil || d == nil {
		t.Fatalf("reopen: %v, %v", d, err)
	}
	defer d.Close()
	for _, f := range d.Schema().Fields() {
		if f.Type.ID() != arrow.DICTIONARY {
			t.Errorf("column %s reads as %s, want a dictionary", f.Name, f.Type)
		}
	}
	// In batches of at most pramDictBatch rows (pqarrow's scratch per row
	// group grows with the batch); the release has 20,000 rows.
	t.Setenv(table.BatchRowsEnv, "")
	if in.NumRows() <= pramDictBatch {
		t.Fatalf("the release has %d rows, too few to test the batch size", in.NumRows())
	}
	if rec, err := d.Next(); err != nil || rec.NumRows() != pramDictBatch {
		t.Errorf("first batch of the dictionary read: %v rows, %v; want %d", rec.NumRows(), err, pramDictBatch)
	}
	b, err := os.ReadFile(pq)
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := table.Open("-", table.ReadOptions{Stdin: bytes.NewReader(b)})
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if d, err := r.reopenWithDictionaries(o, stdin); d != nil || err != nil {
		t.Errorf("standard input reopened: %v, %v", d, err)
	}
}

// setBatchRows makes the readers of the runs that follow cut batches (and
// CSV chunks) of rows rows; 0 restores the default.
func setBatchRows(t *testing.T, rows int) {
	if rows == 0 {
		t.Setenv(table.BatchRowsEnv, "")
		os.Unsetenv(table.BatchRowsEnv)
		return
	}
	t.Setenv(table.BatchRowsEnv, fmt.Sprint(rows))
}

// gcPercent returns the current GOGC without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// While a Parquet release is read as dictionaries the collector runs at
// dictReadGCPercent, and the caller's setting comes back afterwards; a
// GOGC in the environment is left alone.
func TestCollectLessSetsAndRestoresGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(137))
	t.Setenv("GOGC", "")
	restore := collectLess()
	if got := gcPercent(); got != dictReadGCPercent {
		t.Errorf("GOGC during the read: %d, want %d", got, dictReadGCPercent)
	}
	restore()
	if got := gcPercent(); got != 137 {
		t.Errorf("GOGC after the read: %d, want 137 back", got)
	}
	t.Setenv("GOGC", "137")
	collectLess()()
	restore = collectLess()
	if got := gcPercent(); got != 137 {
		t.Errorf("GOGC=137 in the environment: %d during the read", got)
	}
	restore()
}
