package table

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	xreader "github.com/xitongsys/parquet-go/reader"
)

// int32Schema is a schema of n int32 columns b0…b{n−1}, as bitflip's
// reports of n bits.
func int32Schema(n int) *arrow.Schema {
	fs := make([]arrow.Field, n)
	for j := range fs {
		fs[j] = arrow.Field{Name: fmt.Sprintf("b%d", j), Type: arrow.PrimitiveTypes.Int32}
	}
	return arrow.NewSchema(fs, nil)
}

// TestRowsWithinBoundsAGroupsCells: a group of a narrow table keeps its
// rows (every stage's output on the bench: 17 bits, 7 strings); a wide
// one is cut to the rows whose cells fit the bytes, never below 64 rows.
func TestRowsWithinBoundsAGroupsCells(t *testing.T) {
	for _, c := range []struct {
		name   string
		schema *arrow.Schema
		bytes  int
		want   int
	}{
		{"17 bits", int32Schema(17), GroupBytes, RowGroupRows},
		{"32 bits", int32Schema(32), GroupBytes, RowGroupRows},
		{"200 bits", int32Schema(200), GroupBytes, GroupBytes / 800},
		{"8 strings", StringSchema([]string{"a", "b", "c", "d", "e", "f", "g", "h"}), GroupBytes, RowGroupRows},
		{"15 strings", StringSchema([]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o"}), GroupBytes, GroupBytes / 240},
		{"2^16 bits", int32Schema(1 << 16), GroupBytes, 64},
		{"no columns", arrow.NewSchema(nil, nil), GroupBytes, RowGroupRows},
	} {
		if got := RowsWithin(c.schema, c.bytes, RowGroupRows); got != c.want {
			t.Errorf("%s: RowsWithin = %d rows, want %d", c.name, got, c.want)
		}
	}
	if got := RowsWithin(int32Schema(1<<16), GroupBytes, 10); got != 10 {
		t.Errorf("the floor of 64 rows passes the most asked (10): %d", got)
	}
}

// TestWideArrowBatchesAreBounded: an Arrow output of 300 int32 columns
// goes out in record batches of RowsWithin rows (~7,000, 8 MiB of cells),
// not RowGroupRows (78 MB of cells, held up to twice while written).
func TestWideArrowBatchesAreBounded(t *testing.T) {
	const L, n = 300, 20000
	schema := int32Schema(L)
	var buf bytes.Buffer
	w, err := Create("-", schema, nil, WriteOptions{Format: Arrow, Stdout: &buf})
	if err != nil {
		t.Fatal(err)
	}
	block := Block(L, n)
	for j := range block {
		for i := range block[j] {
			block[j][i] = uint32((i + j) & 1)
		}
	}
	rec := Int32Batch(schema, block, n)
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	per, rows, batches := GroupBytes/(4*L), 0, 0
	for r.Next() {
		k := int(r.RecordBatch().NumRows())
		if k != min(per, n-rows) {
			t.Errorf("a batch of %d rows at row %d, want %d", k, rows, min(per, n-rows))
		}
		rows, batches = rows+k, batches+1
	}
	if want := (n + per - 1) / per; rows != n || batches != want {
		t.Errorf("%d rows in %d batches, want %d in %d", rows, batches, n, want)
	}
}

// writeWideParquet writes n rows of L int32 0/1 columns (bit j of row i
// is (i/(j+1)) & 1) to a Parquet file in batches of 10,000 rows and
// returns its bytes.
func writeWideParquet(t *testing.T, L, n int) []byte {
	t.Helper()
	schema := int32Schema(L)
	return writeParquetBatches(t, schema, Meta{"L": strconv.Itoa(L)}, n, 10000, func(first, k int) arrow.RecordBatch {
		block := Block(L, k)
		for j := range block {
			for i := range block[j] {
				block[j][i] = uint32((first + i) / (j + 1) & 1)
			}
		}
		return Int32Batch(schema, block, k)
	})
}

// sameInlineAndQueued returns the file write writes one wide group at a
// time (inlineWideGroups), after checking that it is the file write
// writes through the writer's queue.
func sameInlineAndQueued(t *testing.T, write func() []byte) []byte {
	t.Helper()
	inline := write()
	inlineWideGroups = false
	queued := write()
	inlineWideGroups = true
	if !bytes.Equal(inline, queued) {
		t.Fatalf("one group at a time wrote %d bytes, the queue %d: not the same file", len(inline), len(queued))
	}
	return inline
}

// writeParquetBatches writes n rows of schema to a Parquet file, the
// batches batch(first, k) of k ≤ step rows, and returns its bytes.
func writeParquetBatches(t *testing.T, schema *arrow.Schema, meta Meta, n, step int, batch func(first, k int) arrow.RecordBatch) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "wide.parquet")
	w, err := Create(p, schema, meta, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for first := 0; first < n; first += step {
		rec := batch(first, min(step, n-first))
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWideParquetGroupsOneAtATimeAreTheSameFile: a table wider than
// GroupBytes allows in a row group (40 int32 columns) has its groups
// encoded one at a time, each before the next is gathered (one group
// held, not up to four); the file is the same bytes as through the
// writer's queue, has 64Ki-row groups, and an independent reader
// (xitongsys/parquet-go) reads back every cell.
func TestWideParquetGroupsOneAtATimeAreTheSameFile(t *testing.T) {
	const L, n = 40, 150_000 // 3 row groups
	if RowsWithin(int32Schema(L), GroupBytes, RowGroupRows) >= RowGroupRows {
		t.Fatalf("%d columns are not wide: the test would not take the one-group path", L)
	}
	inline := sameInlineAndQueued(t, func() []byte { return writeWideParquet(t, L, n) })
	pr, err := xreader.NewParquetColumnReader(memFile{bytes.NewReader(inline)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.ReadStop()
	if got, groups := pr.GetNumRows(), len(pr.Footer.RowGroups); got != n || groups != 3 {
		t.Fatalf("independent reader sees %d rows in %d groups, want %d in 3", got, groups, n)
	}
	for _, j := range []int{0, 1, 17, L - 1} {
		vals, _, _, err := pr.ReadColumnByIndex(int64(j), n)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if want := int32(i / (j + 1) & 1); v != want {
				t.Fatalf("column %d, row %d: %v, want %d", j, i, v, want)
			}
		}
	}
}
