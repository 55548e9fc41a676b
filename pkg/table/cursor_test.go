package table

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// writeCSV writes a CSV table with the given header and rows.
func writeCSV(t *testing.T, header []string, rows [][]string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.csv")
	schema := StringSchema(header)
	w, err := Create(p, schema, nil, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bb := NewBatchBuilder(schema)
	for _, r := range rows {
		bb.AppendStrings(r)
	}
	rec := bb.NewBatch()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	bb.Release()
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCursorReadsBlocksAcrossBatches reads 23 rows in batches of 7 as
// blocks of 5, columns picked by name in another order than the file's.
func TestCursorReadsBlocksAcrossBatches(t *testing.T) {
	var rows [][]string
	for i := range 23 {
		rows = append(rows, []string{itoa(i % 5), itoa(i % 3)})
	}
	r, err := Open(writeCSV(t, []string{"a", "b"}, rows), ReadOptions{BatchSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := NewCursor(r, []string{"b", "a"}, []uint32{3, 5}, false)
	if err != nil {
		t.Fatal(err)
	}
	block := Block(2, 5)
	var got int
	for {
		n, err := c.Read(block)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		for i := range n {
			row := got + i
			if block[0][i] != uint32(row%3) || block[1][i] != uint32(row%5) {
				t.Fatalf("row %d: b=%d a=%d", row+1, block[0][i], block[1][i])
			}
		}
		got += n
	}
	if got != 23 || c.Rows() != 23 {
		t.Errorf("read %d rows, Rows() = %d, want 23", got, c.Rows())
	}
}

// TestCursorRejectsValuesOutsideTheAlphabet checks the error names file,
// row and column, and quotes the value only when it is not key material.
func TestCursorRejectsValuesOutsideTheAlphabet(t *testing.T) {
	tests := []struct {
		name   string
		cell   string
		secret bool
		want   string
	}{
		{"k or more", "4", false, `row 3, column "a": ciphertext value 4 is outside 0..3`},
		{"negative", "-2", false, `row 3, column "a": ciphertext value -2 is outside 0..3`},
		{"not an integer", "x", false, `row 3, column "a": the cell is empty or not an integer`},
		{"empty", "", false, `row 3, column "a": the cell is empty or not an integer`},
		{"pad out of range", "987654", true, `row 3, column "a": the pad is not an integer in 0..3 (value not shown: it is key material)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeCSV(t, []string{"a", "z"}, [][]string{{"0", "z"}, {"3", "z"}, {tt.cell, "z"}})
			r, err := Open(p, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			c, _ := NewCursor(r, []string{"a"}, []uint32{4}, tt.secret)
			_, err = c.Read(Block(1, 10))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), p) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if tt.secret && strings.Contains(err.Error(), tt.cell) {
				t.Errorf("error quotes the pad: %v", err)
			}
		})
	}
}

func TestNewCursorNamesMissingColumn(t *testing.T) {
	r, err := Open(writeCSV(t, []string{"a"}, [][]string{{"0"}}), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := NewCursor(r, []string{"b"}, []uint32{2}, false); err == nil || !strings.Contains(err.Error(), `lists column "b" but the table has no such column (columns: a)`) {
		t.Errorf("error %v", err)
	}
}

func TestInt32BatchRoundTrip(t *testing.T) {
	cols := [][]uint32{{0, 1, 1<<31 - 1, 9}, {5, 6, 7, 8}}
	rec := Int32Batch(Int32Schema([]string{"a", "b"}), cols, 3)
	defer rec.Release()
	if rec.NumRows() != 3 || rec.NumCols() != 2 {
		t.Fatalf("%d rows, %d columns", rec.NumRows(), rec.NumCols())
	}
	for j := range cols {
		v := ValuesOf(rec.Column(j))
		for i := range 3 {
			if x, ok := v.Int(i); !ok || x != int64(cols[j][i]) {
				t.Errorf("column %d row %d: %d, want %d", j, i, x, cols[j][i])
			}
		}
	}
}

func itoa(i int) string { return string(rune('0' + i)) }

// TestCursorDeferFillsAsReadReads: Defer then Fill, with the fills run
// later, on other goroutines and out of order (as perturb's and decrypt's
// workers run them), gives the blocks Read gives, and the same error at
// the same cell (row, column, file) — for an int32 column (copied by
// Fill) and a text one (coded by Defer), across batch boundaries.
func TestCursorDeferFillsAsReadReads(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32}, {Name: "b", Type: arrow.BinaryTypes.String}}, nil)
	for _, tc := range []struct {
		name    string
		badA    int // row whose a is outside Z_5, -1 for none
		badB    int // row whose b is outside Z_3, -1 for none
		wantErr string
	}{
		{"good", -1, -1, ""},
		{"int32 cell outside", 17, -1, "row 18"},
		{"text cell outside", -1, 12, "row 13"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "t.arrow")
			w, err := Create(p, schema, nil, WriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			bb := NewBatchBuilder(schema)
			for i := range 23 {
				a, b := i%5, strconv.Itoa(i%3)
				if i == tc.badA {
					a = 9
				}
				if i == tc.badB {
					b = "x"
				}
				bb.Int32(0, int32(a))
				bb.String(1, b)
				bb.EndRow()
				if bb.Rows() == 7 || i == 22 {
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
			read := func(deferred bool) ([]uint32, error) {
				r, err := Open(p, ReadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				c, err := NewCursor(r, []string{"b", "a"}, []uint32{3, 5}, false)
				if err != nil {
					t.Fatal(err)
				}
				var blocks [][][]uint32
				var pend []*Pending
				var ns []int
				var readErr error
				for {
					block := Block(2, 5)
					var n int
					if deferred {
						pd := new(Pending)
						n, readErr = c.Defer(block, pd)
						pend = append(pend, pd)
					} else {
						n, readErr = c.Read(block)
					}
					if readErr != nil || n == 0 {
						break
					}
					blocks, ns = append(blocks, block), append(ns, n)
				}
				errs := make([]error, len(blocks))
				if deferred {
					var wg sync.WaitGroup
					for k := len(blocks) - 1; k >= 0; k-- {
						wg.Add(1)
						go func() { defer wg.Done(); errs[k] = pend[k].Fill(blocks[k]) }()
					}
					wg.Wait()
				}
				var got []uint32
				for k, b := range blocks {
					if errs[k] != nil {
						return got, errs[k] // the first error in row order
					}
					for i := range ns[k] {
						got = append(got, b[0][i]*10+b[1][i])
					}
				}
				return got, readErr
			}
			want, wantErr := read(false)
			got, gotErr := read(true)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("Defer's error %v, Read's %v", gotErr, wantErr)
			}
			if tc.wantErr != "" && (wantErr == nil || !strings.Contains(wantErr.Error(), tc.wantErr)) {
				t.Fatalf("Read's error %v, want one at %s", wantErr, tc.wantErr)
			}
			if wantErr == nil && !slices.Equal(got, want) {
				t.Fatalf("Defer read %v, Read %v", got, want)
			}
		})
	}
}
