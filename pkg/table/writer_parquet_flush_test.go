package table

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestParquetEarlyPageFlushGivesTheSameBytes: encoding a dictionary
// column's page on its own goroutine (flushDictPage) writes the file Close
// would have written, byte for byte, for every kind of column the writer
// meets — codes (small ints), large ints, categorical and unique strings,
// a nullable column, codebook labels (DictType) — and for batches small
// and large enough that other columns flush pages in the middle of a write
// (1<<18 int32 cells: exactly one 1 MiB page, nothing left to flush).
func TestParquetEarlyPageFlushGivesTheSameBytes(t *testing.T) {
	fields := []arrow.Field{
		{Name: "code", Type: arrow.PrimitiveTypes.Int32},
		{Name: "big", Type: arrow.PrimitiveTypes.Int32},
		{Name: "cat", Type: arrow.BinaryTypes.String},
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "null", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "label", Type: DictType},
	}
	schema := arrow.NewSchema(fields, nil)
	labels := NewLabels([]string{"HS-grad", "Bachelors", "Masters", "Doctorate"})
	write := func(early bool, sizes []int) []byte {
		defer func(old bool) { earlyPageFlush = old }(earlyPageFlush)
		earlyPageFlush = early
		p := filepath.Join(t.TempDir(), "t.parquet")
		w, err := Create(p, schema, nil, WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		row := 0
		for _, n := range sizes {
			b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields[:5], nil))
			codes := make([]uint32, n)
			for i := range n {
				k := row + i
				b.Field(0).(*array.Int32Builder).Append(int32(k % 15))
				b.Field(1).(*array.Int32Builder).Append(int32(k * 7919))
				b.Field(2).(*array.StringBuilder).Append(fmt.Sprint("label", k%9))
				b.Field(3).(*array.StringBuilder).Append(fmt.Sprint("id", k))
				if k%5 == 0 {
					b.Field(4).(*array.Int32Builder).AppendNull()
				} else {
					b.Field(4).(*array.Int32Builder).Append(int32(k % 3))
				}
				codes[i] = uint32(k*k) % 4
			}
			rec := b.NewRecordBatch()
			b.Release()
			cols := rec.Columns()[:5]
			lab := labels.Column(codes)
			all := append(append([]arrow.Array{}, cols...), lab)
			full := array.NewRecordBatch(schema, all, int64(n))
			lab.Release()
			rec.Release()
			if err := w.Write(full); err != nil {
				t.Fatal(err)
			}
			full.Release()
			row += n
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Open(p, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		got := 0
		if err := EachBatch(r, func(rec arrow.RecordBatch, _ int64) error { got += int(rec.NumRows()); return nil }); err != nil || got != row {
			t.Fatalf("read back %d rows (%v), want %d", got, err, row)
		}
		return data
	}
	for _, sizes := range [][]int{{1}, {1000, 3, 5000}, {300_000}, {1 << 18}} {
		on, off := write(true, sizes), write(false, sizes)
		if !bytes.Equal(on, off) {
			t.Errorf("batches %v: %d bytes with the early flush, %d without, not the same", sizes, len(on), len(off))
		}
	}
}
