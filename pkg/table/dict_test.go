package table

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	xreader "github.com/xitongsys/parquet-go/reader"
)

// dictRows is n rows of a categorical column, a column of small integers
// written as text, and a near-unique column.
func dictRows(n int) (cols []string, rows [][]string) {
	cols = []string{"occupation", "ct", "id"}
	occ := []string{"Prof-specialty", "Craft-repair", "", "ünï", "a,b"}
	rows = make([][]string, n)
	for i := range rows {
		rows[i] = []string{occ[(i/3)%len(occ)], strconv.Itoa(i % 7), "id" + strconv.Itoa(i)}
	}
	return cols, rows
}

// writeParquetRows writes rows in batches, and row groups, of batch rows.
func writeParquetRows(t testing.TB, cols []string, rows [][]string, batch int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "d.parquet")
	schema := StringSchema(cols)
	w, err := Create(p, schema, Meta{"n": strconv.Itoa(len(rows))}, WriteOptions{RowGroupRows: batch})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	writeRowBatches(t, schema, rows, batch, w.Write)
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeRowBatches gives write the rows, of string columns of schema, in
// batches of batch rows.
func writeRowBatches(t testing.TB, schema *arrow.Schema, rows [][]string, batch int, write func(arrow.RecordBatch) error) {
	t.Helper()
	bb := NewBatchBuilder(schema)
	defer bb.Release()
	for i, r := range rows {
		bb.AppendStrings(r)
		if bb.Rows() == batch || i == len(rows)-1 {
			rec := bb.NewBatch()
			if err := write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
	}
}

// TestParquetDictColumnsReadAsDictionaries checks ReadOptions.DictColumns:
// the named string columns come as dictionary arrays (schema and batches),
// the others as strings, values unchanged, over several row groups and
// batches that do not line up with them; and without the option nothing
// changes.
func TestParquetDictColumnsReadAsDictionaries(t *testing.T) {
	cols, rows := dictRows(10_000)
	p := writeParquetRows(t, cols, rows, 3000) // row groups of 3000
	for _, opt := range []ReadOptions{{BatchSize: 1024}, {BatchSize: 1024, DictColumns: []string{"occupation", "ct", "nosuch"}}} {
		r, err := Open(p, opt)
		if err != nil {
			t.Fatal(err)
		}
		dict := map[string]bool{}
		for _, c := range opt.DictColumns {
			dict[c] = true
		}
		for j, f := range r.Schema().Fields() {
			if got := f.Type.ID() == arrow.DICTIONARY; got != dict[f.Name] {
				t.Errorf("DictColumns %v: column %s has type %s", opt.DictColumns, f.Name, f.Type)
			}
			_ = j
		}
		row := 0
		err = EachBatch(r, func(rec arrow.RecordBatch, first int64) error {
			for j := range cols {
				a := rec.Column(j)
				if _, isDict := a.(*array.Dictionary); isDict != dict[cols[j]] {
					return fmt.Errorf("column %s is %T", cols[j], a)
				}
				vs := ValuesOf(a)
				for i := range a.Len() {
					if got, want := vs.String(i), rows[row+i][j]; got != want {
						return fmt.Errorf("row %d column %s: %q, want %q", row+i+1, cols[j], got, want)
					}
				}
			}
			row += int(rec.NumRows())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if row != len(rows) {
			t.Fatalf("read %d rows, want %d", row, len(rows))
		}
		if m := r.Meta(); m["n"] != "10000" {
			t.Errorf("metadata %v", m)
		}
		r.Close()
	}
}

// TestCoderCodesEveryColumnKind codes the same values held as a utf8
// column, as dictionary columns read from Parquet (the dictionary mapped
// once per batch, and remapped when the dictionary changes between row
// groups), and as int columns; an unknown label is reported at its cell.
func TestCoderCodesEveryColumnKind(t *testing.T) {
	cols, rows := dictRows(7000)
	labels := map[string]uint32{}
	for _, r := range rows {
		if _, ok := labels[r[0]]; !ok {
			labels[r[0]] = uint32(len(labels))
		}
	}
	for i := range 7 {
		labels[strconv.Itoa(i)] = uint32(100 + i)
	}
	// Row groups of 1000 rows each see the occupations in another order,
	// so their dictionaries differ.
	p := writeParquetRows(t, cols, rows, 1000)
	for _, dictCols := range [][]string{nil, {"occupation", "ct"}} {
		r, err := Open(p, ReadOptions{BatchSize: 300, DictColumns: dictCols})
		if err != nil {
			t.Fatal(err)
		}
		coders := []*Coder{MapCoder(labels), MapCoder(labels)}
		row := 0
		err = EachBatch(r, func(rec arrow.RecordBatch, first int64) error {
			n := int(rec.NumRows())
			for j := range 2 {
				// Two calls per batch, at an offset, as Cursor makes them.
				dst := make([]uint32, n)
				half := n / 2
				if bad, err := coders[j].Codes(dst[:half], rec.Column(j), 0); bad >= 0 {
					return err
				}
				if bad, err := coders[j].Codes(dst[half:], rec.Column(j), half); bad >= 0 {
					return err
				}
				for i, c := range dst {
					if want := labels[rows[row+i][j]]; c != want {
						return fmt.Errorf("DictColumns %v: row %d column %s: code %d, want %d", dictCols, row+i+1, cols[j], c, want)
					}
				}
			}
			row += n
			return nil
		})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
	}

	// An int32 column and an int64 column code through the labels' text.
	for _, a := range []arrow.Array{int32Array(3, 0, 6), int64Array(3, 0, 6)} {
		dst := make([]uint32, 3)
		if bad, err := MapCoder(labels).Codes(dst, a, 0); bad >= 0 || dst[0] != 103 || dst[1] != 100 || dst[2] != 106 {
			t.Errorf("%s: codes %v, bad %d %v", a.DataType(), dst, bad, err)
		}
		a.Release()
	}

	// Unknown labels: the first bad cell, relative to the offset.
	delete(labels, "ünï")
	r, err := Open(p, ReadOptions{BatchSize: 300, DictColumns: []string{"occupation"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec, _ := r.Next()
	dst := make([]uint32, 100)
	bad, err := MapCoder(labels).Codes(dst, rec.Column(0), 5)
	// Rows 10..12 (0-based 9..11) hold "ünï": cell 4 after offset 5.
	var ue *UnknownLabelError
	if bad != 4 || !errors.As(err, &ue) || ue.Label != "ünï" {
		t.Fatalf("bad %d, err %v; want 4 and an UnknownLabelError for ünï", bad, err)
	}
	if !strings.Contains(err.Error(), `"ünï"`) && !strings.Contains(err.Error(), "ünï") {
		t.Errorf("error %q does not name the label", err)
	}
}

func int32Array(v ...int32) arrow.Array {
	b := array.NewInt32Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(v, nil)
	return b.NewArray()
}

func int64Array(v ...int64) arrow.Array {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(v, nil)
	return b.NewArray()
}

// TestCursorReadsDictionaryColumns reads text integer columns that Parquet
// hands over as dictionaries through a Cursor, and reports a value outside
// the alphabet at its row, in a later batch.
func TestCursorReadsDictionaryColumns(t *testing.T) {
	cols, rows := dictRows(5000)
	rows[4321][1] = "9" // outside Z_7
	p := writeParquetRows(t, cols, rows, 2000)
	r, err := Open(p, ReadOptions{BatchSize: 700, DictColumns: []string{"ct"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := NewCursor(r, []string{"ct"}, []uint32{7}, false)
	if err != nil {
		t.Fatal(err)
	}
	blk := Block(1, 1000)
	row := 0
	for {
		n, err := c.Read(blk)
		if err != nil {
			var de *DataError
			if !errors.As(err, &de) || de.Row != 4322 || de.Column != "ct" || !strings.Contains(err.Error(), "value 9 is outside 0..6") {
				t.Fatalf("error %v; want row 4322, column ct, value 9", err)
			}
			if row > 4321 {
				t.Fatalf("rows up to %d read before the bad row 4322", row)
			}
			return
		}
		if n == 0 {
			t.Fatal("no error for the value outside the alphabet")
		}
		for i := range n {
			if want := uint32(i+row) % 7; blk[0][i] != want {
				t.Fatalf("row %d: %d, want %d", row+i+1, blk[0][i], want)
			}
		}
		row += n
	}
}

// TestParquetDictionaryReadMatchesIndependentReader reads one file with
// dictionary columns through pqarrow and through xitongsys/parquet-go
// (which shares no code with Arrow): same values in every row.
func TestParquetDictionaryReadMatchesIndependentReader(t *testing.T) {
	cols, rows := dictRows(150_000)
	p := writeParquetRows(t, cols, rows, DefaultBatchSize)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := xreader.NewParquetColumnReader(memFile{bytes.NewReader(b)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.ReadStop()
	indep := make([][]any, len(cols))
	for j := range cols {
		if indep[j], _, _, err = pr.ReadColumnByIndex(int64(j), int64(len(rows))); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Open(p, ReadOptions{BatchSize: 5000, DictColumns: cols})
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
		for j := range cols {
			vs := ValuesOf(rec.Column(j))
			for i := range int(rec.NumRows()) {
				if s, _ := indep[j][row+i].(string); vs.String(i) != s {
					t.Fatalf("row %d column %s: pqarrow dictionary %q, independent reader %q", row+i+1, cols[j], vs.String(i), s)
				}
			}
		}
		row += int(rec.NumRows())
	}
	if row != len(rows) {
		t.Fatalf("%d rows, want %d", row, len(rows))
	}
}

// dictColumn returns a dictionary column of indices idx over labels,
// made in mem.
func dictColumn(mem memory.Allocator, labels []string, idx ...int32) *array.Dictionary {
	sb := array.NewStringBuilder(mem)
	defer sb.Release()
	sb.AppendValues(labels, nil)
	dict := sb.NewArray()
	defer dict.Release()
	ib := array.NewInt32Builder(mem)
	defer ib.Release()
	ib.AppendValues(idx, nil)
	ind := ib.NewArray()
	defer ind.Release()
	return array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, ind, dict)
}

// TestCoderMapsEachDictionaryOnce: a Coder looks a dictionary's labels
// up once, and not again for a later batch's dictionary of the same
// labels (another array, the first one released); a dictionary of other
// labels, even of the same lengths, is looked up again. An entry with no
// code is an error only at the cells that use it, and a label whose code
// is noCode's value is coded. The dictionary is held until the next one
// is mapped, so that its memory is not reused under the comparison.
func TestCoderMapsEachDictionaryOnce(t *testing.T) {
	codes := map[string]uint32{"a": 0, "b": 1, "big": noCode, "c": 2}
	var lookups int
	c := NewCoder(func(s string) (uint32, error) {
		lookups++
		if code, ok := codes[s]; ok {
			return code, nil
		}
		return 0, &UnknownLabelError{Label: s}
	})
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	code := func(labels []string, idx ...int32) ([]uint32, int, error) {
		col := dictColumn(mem, labels, idx...)
		defer col.Release()
		dst := make([]uint32, len(idx))
		bad, err := c.Codes(dst, col, 0)
		return dst, bad, err
	}
	dst, bad, err := code([]string{"a", "zz", "big", "b"}, 0, 2, 3, 2)
	if bad >= 0 || fmt.Sprint(dst) != fmt.Sprint([]uint32{0, noCode, 1, noCode}) || lookups != 4 {
		t.Fatalf("codes %v, bad %d %v, %d lookups; want [0 max 1 max], none, 4", dst, bad, err, lookups)
	}
	if mem.CurrentAlloc() == 0 {
		t.Error("the mapped dictionary is not held once its batch is released")
	}
	_, bad, err = code([]string{"a", "zz", "big", "b"}, 3, 1)
	var ue *UnknownLabelError
	if bad != 1 || !errors.As(err, &ue) || ue.Label != "zz" || lookups != 4 {
		t.Errorf("same labels again: bad %d, %v, %d lookups; want cell 1 unknown \"zz\", still 4", bad, err, lookups)
	}
	dst, bad, _ = code([]string{"a", "zz", "big", "c"}, 3, 0)
	if bad >= 0 || dst[0] != 2 || dst[1] != 0 || lookups != 8 {
		t.Errorf("other labels: codes %v, bad %d, %d lookups; want [2 0], none, 8", dst, bad, lookups)
	}
}

// TestCoderInOrderSkipsLookups: with InOrder, a dictionary in code order
// is mapped without a lookup, one out of order looks up only the entries
// that break the order, and the codes and errors are those lookup gives.
func TestCoderInOrderSkipsLookups(t *testing.T) {
	labels := []string{"a", "b", "c", "d"}
	codes := map[string]uint32{"a": 0, "b": 1, "c": 2, "d": 3}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	for _, tc := range []struct {
		name    string
		dict    []string
		lookups int
	}{
		{"the labels in order", []string{"a", "b", "c", "d"}, 0},
		{"a prefix", []string{"a", "b"}, 0},
		{"a gap", []string{"a", "c", "d"}, 1},
		{"reversed", []string{"d", "c", "b", "a"}, 4},
		{"an unknown label", []string{"a", "zz", "b"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookups := 0
			lookup := func(s string) (uint32, error) {
				lookups++
				if code, ok := codes[s]; ok {
					return code, nil
				}
				return 0, &UnknownLabelError{Label: s}
			}
			inOrder := NewCoder(lookup).InOrder(func(x uint32) (string, bool) {
				if int(x) >= len(labels) {
					return "", false
				}
				return labels[x], true
			})
			idx := make([]int32, len(tc.dict))
			for i := range idx {
				idx[i] = int32(i)
			}
			col := dictColumn(mem, tc.dict, idx...)
			defer col.Release()
			got := make([]uint32, len(idx))
			gotBad, gotErr := inOrder.Codes(got, col, 0)
			if lookups != tc.lookups {
				t.Errorf("%d lookups, want %d", lookups, tc.lookups)
			}
			want := make([]uint32, len(idx))
			wantBad, wantErr := NewCoder(lookup).Codes(want, col, 0)
			if gotBad != wantBad || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || fmt.Sprint(got[:max(gotBad, 0)]) != fmt.Sprint(want[:max(wantBad, 0)]) {
				t.Errorf("InOrder: %v, bad %d %v; without: %v, bad %d %v", got, gotBad, gotErr, want, wantBad, wantErr)
			}
			if gotBad < 0 && fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("InOrder codes %v, want %v", got, want)
			}
		})
	}
}

// TestCoderInOrderStopsGuessingAfterMisses: InOrder's guess (the code
// after the previous entry's) is given up for a dictionary once it has
// missed inOrderMisses entries in a row — a row group's dictionary of a
// high-cardinality column is in code order with gaps everywhere, and each
// guess read a label from a random place of the codebook — while fewer
// misses in a row do not stop it; the codes are lookup's either way.
func TestCoderInOrderStopsGuessingAfterMisses(t *testing.T) {
	var labels []string
	codes := map[string]uint32{}
	for i := range 120 {
		labels = append(labels, fmt.Sprintf("l%03d", i))
		codes[labels[i]] = uint32(i)
	}
	every := func(from, to, step int) (c []int) {
		for i := from; i < to; i += step {
			c = append(c, i)
		}
		return c
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	for _, tc := range []struct {
		name             string
		dict             []int // codes of the entries
		guesses, lookups int
	}{
		{"in order", every(0, 120, 1), 120, 0},
		{"every third code", every(0, 120, 3), 1 + inOrderMisses, 39},
		// inOrderMisses-1 misses in a row (codes 3, 6, …), then codes
		// that follow each other: guessed again.
		{"gaps, then in order", append(every(0, 3*inOrderMisses, 3), every(3*inOrderMisses-2, 3*inOrderMisses+3, 1)...), inOrderMisses + 5, inOrderMisses - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			guesses, lookups := 0, 0
			c := NewCoder(func(s string) (uint32, error) {
				lookups++
				return codes[s], nil
			}).InOrder(func(x uint32) (string, bool) {
				guesses++
				if int(x) >= len(labels) {
					return "", false
				}
				return labels[x], true
			})
			dict := make([]string, len(tc.dict))
			idx := make([]int32, len(tc.dict))
			for i, x := range tc.dict {
				dict[i], idx[i] = labels[x], int32(i)
			}
			col := dictColumn(mem, dict, idx...)
			defer col.Release()
			got := make([]uint32, len(idx))
			if bad, err := c.Codes(got, col, 0); bad >= 0 || err != nil {
				t.Fatalf("bad %d: %v", bad, err)
			}
			for i, x := range tc.dict {
				if got[i] != uint32(x) {
					t.Fatalf("entry %d: code %d, want %d", i, got[i], x)
				}
			}
			if guesses != tc.guesses || lookups != tc.lookups {
				t.Errorf("%d guesses and %d lookups, want %d and %d", guesses, lookups, tc.guesses, tc.lookups)
			}
		})
	}
}

// TestCoderBatchCodesAsLookup: a Coder with Batch codes a dictionary as
// one without — the same codes, and the same error for a cell of an
// unknown label — with or without InOrder, where all takes the entries
// lookup would have taken one at a time (all of them, or those after
// InOrder gives up guessing).
func TestCoderBatchCodesAsLookup(t *testing.T) {
	var labels []string
	codes := map[string]uint32{}
	for i := range 60 {
		labels = append(labels, fmt.Sprintf("l%02d", i))
		codes[labels[i]] = uint32(i)
	}
	lookup := func(s string) (uint32, error) {
		if c, ok := codes[s]; ok {
			return c, nil
		}
		return 0, &UnknownLabelError{Label: s}
	}
	label := func(x uint32) (string, bool) {
		if int(x) >= len(labels) {
			return "", false
		}
		return labels[x], true
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	for _, tc := range []struct {
		name string
		dict []string
	}{
		{"in order", labels[:20]},
		{"every third", []string{"l00", "l03", "l06", "l09", "l12", "l15", "l18", "l21", "l24", "l27", "l30", "l33", "l36"}},
		{"unknown labels", []string{"l05", "zz", "l01", "l40", "yy", "l02", "l03", "l59", "l07", "l11", "l13", "l17", "l19", "xx"}},
	} {
		idx := make([]int32, len(tc.dict))
		for i := range idx {
			idx[i] = int32(len(idx) - 1 - i)
		}
		col := dictColumn(mem, tc.dict, idx...)
		want := make([]uint32, len(idx))
		wantBad, wantErr := NewCoder(lookup).Codes(want, col, 0)
		for _, inOrder := range []bool{false, true} {
			batched := 0
			c := NewCoder(lookup).Batch(func(ls []string, out []uint32, found []bool) {
				batched += len(ls)
				for i, s := range ls {
					out[i], found[i] = codes[s]
				}
			})
			if inOrder {
				c.InOrder(label)
			}
			got := make([]uint32, len(idx))
			gotBad, gotErr := c.Codes(got, col, 0)
			if gotBad != wantBad || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || fmt.Sprint(got[:max(gotBad, 0)]) != fmt.Sprint(want[:max(wantBad, 0)]) {
				t.Errorf("%s (InOrder %v): %v, bad %d %v; one at a time: %v, bad %d %v", tc.name, inOrder, got, gotBad, gotErr, want, wantBad, wantErr)
			}
			if !inOrder && batched != len(tc.dict) || inOrder && tc.name == "in order" && batched != 0 {
				t.Errorf("%s (InOrder %v): %d labels batched", tc.name, inOrder, batched)
			}
		}
		col.Release()
	}
}

// TestCoderBatchTextPastTheCache: a utf8 column of more labels than the
// label cache keeps is coded with Batch's all once the cache is full,
// giving the codes and the first error lookup gives one cell at a time.
func TestCoderBatchTextPastTheCache(t *testing.T) {
	codes := map[string]uint32{}
	for i := range 3 * maxCachedLabels {
		codes[fmt.Sprintf("v%d", i)] = uint32(i)
	}
	lookup := func(s string) (uint32, error) {
		if c, ok := codes[s]; ok {
			return c, nil
		}
		return 0, &UnknownLabelError{Label: s}
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	for _, bad := range []int{-1, 3*textBlock + 17} {
		var cells []string
		for i := range 4 * textBlock {
			cells = append(cells, fmt.Sprintf("v%d", (i*7919)%(3*maxCachedLabels)))
		}
		if bad >= 0 {
			cells[bad], cells[bad+5] = "nope", "nope2"
		}
		b := array.NewStringBuilder(mem)
		b.AppendValues(cells, nil)
		col := b.NewArray()
		b.Release()
		want := make([]uint32, len(cells))
		wantBad, wantErr := NewCoder(lookup).Codes(want, col, 0)
		batched := 0
		c := NewCoder(lookup).Batch(func(ls []string, out []uint32, found []bool) {
			batched += len(ls)
			for i, s := range ls {
				out[i], found[i] = codes[s]
			}
		})
		got := make([]uint32, len(cells))
		// Twice: the first call fills the cache, the second codes in blocks.
		for range 2 {
			gotBad, gotErr := c.Codes(got, col, 0)
			if gotBad != wantBad || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || fmt.Sprint(got[:max(gotBad, 0)]) != fmt.Sprint(want[:max(wantBad, 0)]) {
				t.Errorf("bad cell %d: %v, %v; one at a time %v, %v", bad, gotBad, gotErr, wantBad, wantErr)
			}
			if gotBad < 0 && fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("codes differ")
			}
		}
		if batched == 0 {
			t.Errorf("bad cell %d: no label coded in blocks", bad)
		}
		col.Release()
	}
}

// TestCoderBatchHoldsNoLabel: once Codes returns, a Coder with Batch
// holds no string of the column it coded in its scratch (they alias the
// batch's buffers, which a reader may lend to the next batch), whether
// the labels went through the dictionary or the text path.
func TestCoderBatchHoldsNoLabel(t *testing.T) {
	codes := map[string]uint32{}
	var cells []string
	for i := range 2 * maxCachedLabels {
		codes[fmt.Sprintf("v%d", i)] = uint32(i)
	}
	for i := range 4 * textBlock {
		cells = append(cells, fmt.Sprintf("v%d", (i*7919)%(2*maxCachedLabels)))
	}
	c := NewCoder(func(s string) (uint32, error) { return codes[s], nil }).Batch(func(ls []string, out []uint32, found []bool) {
		for i, s := range ls {
			out[i], found[i] = codes[s]
		}
	})
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	b := array.NewStringBuilder(mem)
	b.AppendValues(cells, nil)
	col := b.NewArray()
	b.Release()
	defer col.Release()
	got := make([]uint32, len(cells))
	for range 2 { // the cache fills, then blocks
		if bad, err := c.Codes(got, col, 0); bad >= 0 {
			t.Fatal(err)
		}
	}
	for i, s := range c.labels[:cap(c.labels)] {
		if s != "" {
			t.Fatalf("scratch label %d still holds %q", i, s)
		}
	}
}
