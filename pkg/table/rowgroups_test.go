package table

import (
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParquetRowGroupsReadsTheChosenGroups: ReadOptions.RowGroups reads
// just those row groups, in the order given, and NumRows counts theirs;
// ParquetRowGroups lists every group's rows (WriteOptions.RowGroupRows
// each, the last one shorter, whatever the batches); a missing group and a
// non-Parquet file are refused.
func TestParquetRowGroupsReadsTheChosenGroups(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.parquet")
	schema := StringSchema([]string{"a"})
	w, err := Create(path, schema, Meta{"k": "v"}, WriteOptions{RowGroupRows: 2})
	if err != nil {
		t.Fatal(err)
	}
	for g, n := range []int{3, 3, 1} { // row groups a0 a1, a2 b0, b1 b2, c0
		bb := NewBatchBuilder(schema)
		for i := range n {
			bb.AppendStrings([]string{string(rune('a'+g)) + string(rune('0'+i))})
		}
		rec := bb.NewBatch()
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		bb.Release()
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	whole, err := Open(path, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ParquetRowGroups(whole); !slices.Equal(got, []int64{2, 2, 2, 1}) {
		t.Errorf("ParquetRowGroups = %v, want [2 2 2 1]", got)
	}
	whole.Close()
	r, err := Open(path, ReadOptions{RowGroups: []int{3, 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.NumRows() != 3 || r.Meta()["k"] != "v" {
		t.Errorf("NumRows %d, meta %v", r.NumRows(), r.Meta())
	}
	var got []string
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range int(rec.NumRows()) {
			got = append(got, ValuesOf(rec.Column(0)).String(i))
		}
	}
	if strings.Join(got, ",") != "c0,a2,b0" {
		t.Errorf("read %v, want c0 a2 b0", got)
	}
	if _, err := Open(path, ReadOptions{RowGroups: []int{4}}); err == nil || !strings.Contains(err.Error(), "no row group 4") {
		t.Errorf("group 3: %v", err)
	}
	csv := filepath.Join(dir, "t.csv")
	cw, err := Create(csv, schema, nil, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cw.Commit()
	if _, err := Open(csv, ReadOptions{RowGroups: []int{0}}); err == nil || !strings.Contains(err.Error(), "not Parquet") {
		t.Errorf("CSV: %v", err)
	}
	if r, err := Open(csv, ReadOptions{}); err != nil || ParquetRowGroups(r) != nil {
		t.Errorf("CSV: %v", err)
	}
}
