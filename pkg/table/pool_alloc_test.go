package table

import (
	"errors"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// A pooled buffer comes back zeroed up to its capacity, whatever the
// batch that had it wrote; sizes outside the pooled range pass through.
func TestPoolAllocatorHandsOutZeroedMemory(t *testing.T) {
	a := poolAllocator{decodeAllocator}
	for range 20 {
		b := a.Allocate(100_000)
		if len(b) != 100_000 || cap(b) != 1<<17 {
			t.Fatalf("Allocate(100000): len %d cap %d, want 100000 and %d", len(b), cap(b), 1<<17)
		}
		for i, v := range b[:cap(b)] {
			if v != 0 {
				t.Fatalf("byte %d of a handed-out buffer is %d, want 0", i, v)
			}
		}
		b = b[:cap(b)]
		for i := range b {
			b[i] = 0xff
		}
		a.Free(b[:10]) // (Buffer.Resize shrinks the length only)
	}
	if b := a.Allocate(100); len(b) != 100 {
		t.Errorf("Allocate(100): len %d", len(b))
	}
	b := a.Reallocate(200_000, a.Allocate(70_000))
	if len(b) != 200_000 || cap(b) != 1<<18 {
		t.Errorf("Reallocate(200000): len %d cap %d", len(b), cap(b))
	}
}

// The pool takes buffers from 16 KiB up (a Parquet page reader's): a
// pooled buffer has its size class's power-of-two capacity.
func TestPoolAllocatorSizeClassesStartAt16KiB(t *testing.T) {
	a := poolAllocator{decodeAllocator}
	for _, c := range []struct {
		size   int
		pooled bool
	}{{10_000, false}, {16_383, false}, {16_384, true}, {20_000, true}, {70_000, true}} {
		b := a.Allocate(c.size)
		class := 1 << bits.Len(uint(c.size-1))
		if got := cap(b) == class; got != c.pooled || len(b) != c.size {
			t.Errorf("Allocate(%d): len %d cap %d, want a pooled buffer (cap %d): %v", c.size, len(b), cap(b), class, c.pooled)
		}
		a.Free(b)
	}
}

// ReuseBuffers changes no value: a Parquet file read with it (dictionary
// and string columns, batches across row groups, a dictionary and index
// buffers large enough to be pooled) gives the batches of a plain read.
func TestParquetReuseBuffersReadsTheSameValues(t *testing.T) {
	cols, rows := dictRows(100_000)
	p := writeParquetRows(t, cols, rows, 30_000)
	for _, dict := range [][]string{nil, {"occupation", "ct", "id"}} {
		checkReuseReadsTheSameValues(t, p, ReadOptions{BatchSize: 20_000, DictColumns: dict}, cols, rows)
	}
}

// ReuseBuffers changes no value of an Arrow IPC stream or file either: a
// message body, which the batch's arrays slice, goes back to the pool
// only once the batch and the reader have both let it go.
func TestArrowReuseBuffersReadsTheSameValues(t *testing.T) {
	defer PoolAllBuffersForTests()() // offsets and bitmaps through the pool too
	cols, rows := dictRows(100_000)
	for _, file := range []bool{false, true} {
		checkReuseReadsTheSameValues(t, writeArrowRows(t, cols, rows, 20_000, file), ReadOptions{}, cols, rows)
	}
}

// checkReuseReadsTheSameValues reads path plainly and with ReuseBuffers,
// side by side, a batch of each at a time, and checks that both give rows.
func checkReuseReadsTheSameValues(t *testing.T, path string, opt ReadOptions, cols []string, rows [][]string) {
	t.Helper()
	plain, err := Open(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	opt.ReuseBuffers = true
	reuse, err := Open(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer reuse.Close()
	for row := 0; ; {
		want, err1 := plain.Next()
		got, err2 := reuse.Next()
		if errors.Is(err1, io.EOF) && errors.Is(err2, io.EOF) {
			if row != len(rows) {
				t.Errorf("%s, %+v: %d rows, want %d", path, opt, row, len(rows))
			}
			return
		}
		if err1 != nil || err2 != nil {
			t.Fatalf("%s, %+v: %v, %v", path, opt, err1, err2)
		}
		if got.NumRows() != want.NumRows() {
			t.Fatalf("%s, %+v: batch of %d rows, want %d", path, opt, got.NumRows(), want.NumRows())
		}
		for j := range cols {
			g, w := ValuesOf(got.Column(j)), ValuesOf(want.Column(j))
			for i := range int(got.NumRows()) {
				if g.String(i) != w.String(i) || g.String(i) != rows[row+i][j] {
					t.Fatalf("%s, %+v: row %d column %s: %q, plain read %q, written %q", path, opt, row+i+1, cols[j], g.String(i), w.String(i), rows[row+i][j])
				}
			}
		}
		row += int(got.NumRows())
	}
}

// writeArrowRows writes rows as an Arrow IPC stream, or file, in batches of
// batch rows.
func writeArrowRows(t *testing.T, cols []string, rows [][]string, batch int, file bool) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "d.arrow")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	schema := StringSchema(cols)
	var w interface {
		Write(arrow.RecordBatch) error
		Close() error
	}
	if file {
		if w, err = ipc.NewFileWriter(f, ipc.WithSchema(schema)); err != nil {
			t.Fatal(err)
		}
	} else {
		w = ipc.NewWriter(f, ipc.WithSchema(schema))
	}
	writeRowBatches(t, schema, rows, batch, w.Write)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}
