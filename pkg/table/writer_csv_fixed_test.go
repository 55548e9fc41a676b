package table

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestCSVFixedCellsMatchEncodingCSV writes dictionary columns whose cells
// fit cellWidth (formatFixedRows: every awkward value encoding/csv
// quotes, one of exactly cellWidth bytes with its comma) and, with one
// label a byte longer, cells that do not (formatCSVRows), to a file in
// blocks and to a stream, in batches of every size class, at GOMAXPROCS 1
// and 2: the bytes are encoding/csv's.
func TestCSVFixedCellsMatchEncodingCSV(t *testing.T) {
	const n = 70_000
	exact := strings.Repeat("x", cellWidth-1) // with its separator: cellWidth
	for _, extra := range []string{exact, exact + "y"} {
		labels := append([]string{extra}, csvAwkward...)
		lab := NewLabels(labels)
		schema := arrow.NewSchema([]arrow.Field{DictField("a"), DictField("b"), DictField("c")}, nil)
		cols := [][]uint32{make([]uint32, n), make([]uint32, n), make([]uint32, n)}
		var want bytes.Buffer
		cw := csv.NewWriter(&want)
		cw.Write([]string{"a", "b", "c"})
		for i := range n {
			row := make([]string, 3)
			for j := range cols {
				cols[j][i] = uint32(i*(j+3)+i/7) % uint32(len(labels))
				row[j] = labels[cols[j][i]]
			}
			cw.Write(row)
		}
		cw.Flush()
		// Whether the batch takes formatFixedRows.
		probe := CodesBatch(schema, [][]uint32{cols[0][:1], cols[1][:1], cols[2][:1]}, []*Labels{lab, lab, lab}, 1)
		m := len(labels)
		cs := []csvColumn{newCSVColumn(probe.Column(0), m), newCSVColumn(probe.Column(1), m), newCSVColumn(probe.Column(2), m)}
		if fixed := fixedCells(cs); fixed != (extra == exact) {
			t.Fatalf("label of %d bytes: fixedCells %v", len(extra), fixed)
		}
		// Batches of fewer rows than labels (sizes 1 and 3 below) format
		// each cell from its label instead.
		if c := newCSVColumn(probe.Column(0), m-1); c.enc != nil || fixedCells([]csvColumn{c, c}) {
			t.Fatalf("a batch of %d rows over %d labels formats the whole dictionary", m-1, m)
		}
		probe.Release()
		sizes := []int{1, 100, minParallelRows, 64 << 10, 3}
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
		for _, procs := range []int{1, 2} {
			runtime.GOMAXPROCS(procs)
			for _, stream := range []bool{false, true} {
				path := filepath.Join(t.TempDir(), "out.csv")
				var buf bytes.Buffer
				var w Writer
				var err error
				if stream {
					w, err = Create("-", schema, nil, WriteOptions{Format: CSV, Stdout: &buf})
				} else {
					w, err = Create(path, schema, Meta{"k": "v"}, WriteOptions{})
				}
				if err != nil {
					t.Fatal(err)
				}
				for off, k := 0, 0; off < n; k++ {
					m := min(sizes[k%len(sizes)], n-off)
					rec := CodesBatch(schema, [][]uint32{cols[0][off : off+m], cols[1][off : off+m], cols[2][off : off+m]}, []*Labels{lab, lab, lab}, m)
					if err := w.Write(rec); err != nil {
						t.Fatal(err)
					}
					rec.Release()
					off += m
				}
				if err := w.Commit(); err != nil {
					t.Fatal(err)
				}
				got := buf.Bytes()
				if !stream {
					if got, err = os.ReadFile(path); err != nil {
						t.Fatal(err)
					}
				}
				if !bytes.Equal(got, want.Bytes()) {
					i := 0
					for i < min(len(got), want.Len()) && got[i] == want.Bytes()[i] {
						i++
					}
					t.Fatalf("label of %d bytes, GOMAXPROCS %d, stream %v: differs from encoding/csv at byte %d of %d (want %d)", len(extra), procs, stream, i, len(got), want.Len())
				}
			}
		}
	}
}
