package table

import (
	"errors"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// readAll copies every batch of r (which may reuse its buffers).
func readAllCopies(t *testing.T, r Reader) []arrow.RecordBatch {
	t.Helper()
	var recs []arrow.RecordBatch
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return recs
		}
		if err != nil {
			t.Fatal(err)
		}
		cols := make([]arrow.Array, rec.NumCols())
		for j := range cols {
			if cols[j], err = array.Concatenate([]arrow.Array{rec.Column(j)}, memory.DefaultAllocator); err != nil {
				t.Fatal(err)
			}
		}
		recs = append(recs, array.NewRecordBatch(rec.Schema(), cols, rec.NumRows()))
	}
}

// A reopened Parquet reader reads what a fresh Open with the same options
// reads, shares the first reader's file (closing it leaves the first one
// readable and closable once), and is refused once the first has read.
func TestParquetReopenReadsAsOpen(t *testing.T) {
	for seed := range uint64(4) {
		p, _ := randomParquet(t, seed)
		opt := ReadOptions{BatchSize: 700, DictColumns: []string{"label", "many"}, ReuseBuffers: true}
		fresh, err := Open(p, opt)
		if err != nil {
			t.Fatal(err)
		}
		want := readAllCopies(t, fresh)
		fresh.Close()

		in, err := Open(p, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := ParquetReopen(in, opt)
		if err != nil || d == nil {
			t.Fatalf("seed %d: reopen: %v, %v", seed, d, err)
		}
		if !d.Schema().Equal(fresh.Schema()) || d.NumRows() != fresh.NumRows() {
			t.Fatalf("seed %d: reopened schema %s (%d rows), Open's %s (%d rows)", seed, d.Schema(), d.NumRows(), fresh.Schema(), fresh.NumRows())
		}
		sameBatches(t, readAllCopies(t, d), want)
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		// in's file is still open: it reads every row and closes cleanly.
		var rows int64
		for _, rec := range readAllCopies(t, in) {
			rows += rec.NumRows()
		}
		if rows != in.NumRows() {
			t.Errorf("seed %d: the first reader read %d rows after the reopened one closed, want %d", seed, rows, in.NumRows())
		}
		if d, err := ParquetReopen(in, opt); d != nil || err != nil {
			t.Errorf("seed %d: a reader that has read was reopened: %v, %v", seed, d, err)
		}
		if err := in.Close(); err != nil {
			t.Errorf("seed %d: closing the first reader: %v", seed, err)
		}
	}
}
