package pipeline_test

import (
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pramkit/pramkit/pkg/pipeline"
	"github.com/pramkit/pramkit/pkg/table"
)

// TestSelectRowsCutsAcrossBatches reads rows [skip, skip+n) of a table
// written in batches of 7 rows, for ranges that start and end inside,
// at the edges of and across batches, and past the end.
func TestSelectRowsCutsAcrossBatches(t *testing.T) {
	const m = 50
	path := filepath.Join(t.TempDir(), "t.arrow")
	schema := table.StringSchema([]string{"x"})
	w, err := table.Create(path, schema, table.Meta{}, table.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bb := table.NewBatchBuilder(schema)
	for i := range m {
		bb.AppendStrings([]string{strconv.Itoa(i)})
		if bb.Rows() == 7 || i == m-1 {
			rec := bb.NewBatch()
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
	}
	bb.Release()
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ skip, n, want int64 }{{0, 50, 50}, {0, 7, 7}, {3, 4, 4}, {6, 9, 9}, {7, 7, 7}, {13, 30, 30}, {49, 1, 1}, {45, 10, 5}} {
		r, err := table.Open(path, table.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s := pipeline.SelectRows(r, tt.skip, tt.n)
		var got []string
		for {
			rec, err := s.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			col := rec.Column(0).(*array.String)
			for i := range col.Len() {
				got = append(got, col.Value(i))
			}
		}
		var want []string
		for i := tt.skip; i < tt.skip+tt.want; i++ {
			want = append(want, strconv.Itoa(int(i)))
		}
		if !slices.Equal(got, want) || s.RowsRead() != tt.want {
			t.Errorf("rows [%d, %d): got %v (RowsRead %d), want %v", tt.skip, tt.skip+tt.n, got, s.RowsRead(), want)
		}
		s.Close()
	}
}
