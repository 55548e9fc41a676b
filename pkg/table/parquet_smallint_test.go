package table

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	xreader "github.com/xitongsys/parquet-go/reader"
)

// TestParquetInt32ColumnsRoundTripThroughSmallIntDict writes int32 columns
// that take smallIntDict's path (0/1 bits starting with 1, so that a
// hashing encoder's dictionary would differ from 0..max; codes with gaps;
// a sliced batch) and columns that do not (values past maxSmallInt,
// negative values, nulls), in batches whose maxima differ, and reads them
// back with this package and with xitongsys/parquet-go: every cell as
// written, the small columns dictionary-encoded, int32 columns without
// min/max statistics (computing them hashed every cell).
func TestParquetInt32ColumnsRoundTripThroughSmallIntDict(t *testing.T) {
	names := []string{"bit", "code", "big", "neg", "null"}
	fields := make([]arrow.Field, len(names))
	for j, n := range names {
		fields[j] = arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Int32, Nullable: n == "null"}
	}
	schema := arrow.NewSchema(fields, nil)
	const rows = 3000
	want := make([][]int32, len(names))
	valid := make([]bool, rows)
	for i := range rows {
		want[0] = append(want[0], int32((i+1)%2))
		want[1] = append(want[1], int32(i%7*600%(maxSmallInt-1)))
		want[2] = append(want[2], int32(maxSmallInt+i%3))
		want[3] = append(want[3], int32(i%5-2))
		want[4] = append(want[4], int32(i%4))
		valid[i] = i%9 != 0
	}
	p := filepath.Join(t.TempDir(), "t.parquet")
	// Row groups of 1000 rows, across the batches.
	w, err := Create(p, schema, nil, WriteOptions{RowGroupRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, part := range [][2]int{{0, 700}, {700, 2000}, {2000, rows}} {
		// Built one row early and sliced: the arrays have an offset.
		lo := max(part[0]-1, 0)
		cols := make([]arrow.Array, len(names))
		for j := range names {
			b := array.NewInt32Builder(memory.DefaultAllocator)
			for i := lo; i < part[1]; i++ {
				if j == 4 && !valid[i] {
					b.AppendNull()
				} else {
					b.Append(want[j][i])
				}
			}
			full := b.NewArray()
			cols[j] = array.NewSlice(full, int64(part[0]-lo), int64(part[1]-lo))
			full.Release()
			b.Release()
		}
		rec := array.NewRecordBatch(schema, cols, int64(part[1]-part[0]))
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		for _, c := range cols {
			c.Release()
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}

	pf, err := file.OpenParquetFile(p, false)
	if err != nil {
		t.Fatal(err)
	}
	for g := range pf.NumRowGroups() {
		for j := range names {
			cc, err := pf.MetaData().RowGroup(g).ColumnChunk(j)
			if err != nil {
				t.Fatal(err)
			}
			if j < 2 && !cc.HasDictionaryPage() {
				t.Errorf("row group %d: column %s has no dictionary page", g, names[j])
			}
			if set, _ := cc.StatsSet(); set {
				t.Errorf("row group %d: column %s has statistics", g, names[j])
			}
		}
	}
	pf.Close()

	r, err := Open(p, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	row := 0
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range int(rec.NumRows()) {
			for j := range names {
				col := rec.Column(j).(*array.Int32)
				if j == 4 && !valid[row+i] {
					if !col.IsNull(i) {
						t.Fatalf("row %d column %s: %d, want null", row+i+1, names[j], col.Value(i))
					}
					continue
				}
				if col.IsNull(i) || col.Value(i) != want[j][row+i] {
					t.Fatalf("row %d column %s: %v, want %d", row+i+1, names[j], col.ValueStr(i), want[j][row+i])
				}
			}
		}
		row += int(rec.NumRows())
	}
	if row != rows {
		t.Fatalf("read %d rows, want %d", row, rows)
	}

	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := xreader.NewParquetColumnReader(memFile{bytes.NewReader(b)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.ReadStop()
	for j := range 4 {
		vals, _, _, err := pr.ReadColumnByIndex(int64(j), rows)
		if err != nil {
			t.Fatal(err)
		}
		if len(vals) != rows {
			t.Fatalf("column %s: independent reader has %d values, want %d", names[j], len(vals), rows)
		}
		for i, v := range vals {
			if x, ok := v.(int32); !ok || x != want[j][i] {
				t.Fatalf("column %s row %d: independent reader has %v, want %d", names[j], i+1, v, want[j][i])
			}
		}
	}
}

// TestParquetUniqueStringsFallBackToPlain: a column of unique values (an
// id) stops being dictionary-encoded once its dictionary passes
// maxDictPage, which saves hashing every cell; a categorical column keeps
// its dictionary (built by stringDicts); both read back as written.
func TestParquetUniqueStringsFallBackToPlain(t *testing.T) {
	const rows = 20000
	p := filepath.Join(t.TempDir(), "t.parquet")
	data := make([][]string, rows)
	for i := range rows {
		data[i] = []string{fmt.Sprintf("person-%08d", i), []string{"Male", "Female"}[i%2]}
	}
	writeRows(t, p, []string{"id", "sex"}, data, nil, WriteOptions{})
	pf, err := file.OpenParquetFile(p, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	// plain tells whether column j has a data page in plain encoding.
	plain := func(j int) bool {
		pr, err := pf.RowGroup(0).GetColumnPageReader(j)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for pr.Next() {
			// Thrift's PageType DICTIONARY_PAGE is 2, Encoding PLAIN 0
			// (their Go types are internal to arrow-go).
			if pg := pr.Page(); pg.Type() != 2 && pg.Encoding() == 0 {
				found = true
			}
		}
		if err := pr.Err(); err != nil {
			t.Fatal(err)
		}
		return found
	}
	if !plain(0) {
		t.Error("the id column has no plain data page: it was dictionary-encoded throughout")
	}
	if plain(1) {
		t.Error("the sex column has a plain data page")
	}
	// Categorical text goes the dictionary path (stringDicts), without
	// min/max statistics, whose computation hashed every index.
	for j := range 2 {
		cc, err := pf.MetaData().RowGroup(0).ColumnChunk(j)
		if err != nil {
			t.Fatal(err)
		}
		if set, _ := cc.StatsSet(); set {
			t.Errorf("column %d has statistics", j)
		}
	}
	r, err := Open(p, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	row := 0
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range int(rec.NumRows()) {
			for j := range 2 {
				if got := rec.Column(j).(*array.String).Value(i); got != data[row+i][j] {
					t.Fatalf("row %d column %d: %q, want %q", row+i+1, j, got, data[row+i][j])
				}
			}
		}
		row += int(rec.NumRows())
	}
	if row != rows {
		t.Fatalf("%d rows, want %d", row, rows)
	}
}
