package table

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// rowGroupTestLabels is the codebook of rowGroupTestBatch's label column:
// more labels than the rows use, so that a dictionary built from the rows
// would differ from it.
var rowGroupTestLabels = []string{"HS-grad", "Bachelors", "Masters", "Doctorate", "Preschool", "unused"}

// rowGroupTestBatch is rows [0, n) of a table with a column of every kind
// the Parquet writer gathers differently: codes (small ints), large ints,
// categorical and unique strings, nullable int32 and string columns,
// codebook labels (DictType), int64, float64 and a nullable boolean.
func rowGroupTestBatch(n int) arrow.RecordBatch {
	fields := []arrow.Field{
		{Name: "code", Type: arrow.PrimitiveTypes.Int32},
		{Name: "big", Type: arrow.PrimitiveTypes.Int32},
		{Name: "cat", Type: arrow.BinaryTypes.String},
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "null", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "nullstr", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
		{Name: "bool", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	codes := make([]uint32, n)
	for k := range n {
		b.Field(0).(*array.Int32Builder).Append(int32(k % 15))
		b.Field(1).(*array.Int32Builder).Append(int32(k * 7919))
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprint("label", k%9))
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprint("id", k))
		if k%5 == 0 {
			b.Field(4).(*array.Int32Builder).AppendNull()
		} else {
			b.Field(4).(*array.Int32Builder).Append(int32(k % 3))
		}
		// Nulls only in a few stretches: most batches have none.
		if k%40000 < 7 {
			b.Field(5).(*array.StringBuilder).AppendNull()
		} else {
			b.Field(5).(*array.StringBuilder).Append(fmt.Sprint(k % 13))
		}
		b.Field(6).(*array.Int64Builder).Append(int64(k) << 33)
		b.Field(7).(*array.Float64Builder).Append(float64(k) / 7)
		if k%11 == 0 {
			b.Field(8).(*array.BooleanBuilder).AppendNull()
		} else {
			b.Field(8).(*array.BooleanBuilder).Append(k%3 == 0)
		}
		codes[k] = uint32(k*k) % 5 // never "unused"
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	lab := NewLabels(rowGroupTestLabels).Column(codes)
	defer lab.Release()
	schema := arrow.NewSchema(append(fields, DictField("label")), nil)
	return array.NewRecordBatch(schema, append(append([]arrow.Array{}, rec.Columns()...), lab), int64(n))
}

// writeInBatches writes rec to a Parquet file as batches of sizes[0],
// sizes[1]… rows, the last size repeated until the rows run out
// (groupRows rows a row group, 0 for RowGroupRows), and returns the file's
// path and bytes. Each batch is a copy the test scribbles over once
// written, as stages reuse their batches' memory.
func writeInBatches(t *testing.T, rec arrow.RecordBatch, sizes []int, groupRows int) (string, []byte) {
	t.Helper()
	return writeFileInBatches(t, "t.parquet", rec, sizes, groupRows)
}

// writeFileInBatches is writeInBatches to a file of the given name, whose
// extension picks the format.
func writeFileInBatches(t *testing.T, name string, rec arrow.RecordBatch, sizes []int, groupRows int) (string, []byte) {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	w, err := Create(p, rec.Schema(), Meta{"k": "v"}, WriteOptions{RowGroupRows: groupRows})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	n := int(rec.NumRows())
	for b, off := 0, 0; off < n; b++ {
		size := sizes[min(b, len(sizes)-1)]
		s := rec.NewSlice(int64(off), int64(min(n, off+size)))
		off += size
		c := copyBatchForTest(t, s)
		s.Release()
		if err := w.Write(c); err != nil {
			t.Fatal(err)
		}
		for _, col := range c.Columns() {
			for _, b := range col.Data().Buffers() {
				if b != nil {
					clear(b.Bytes())
				}
			}
		}
		c.Release()
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, data
}

// copyBatchForTest copies rec's cells (not the whole buffers of a slice).
func copyBatchForTest(t *testing.T, rec arrow.RecordBatch) arrow.RecordBatch {
	cols := make([]arrow.Array, rec.NumCols())
	for j, c := range rec.Columns() {
		a, err := array.Concatenate([]arrow.Array{c}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		cols[j] = a
		defer a.Release()
	}
	return array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
}

// TestParquetBytesIgnoreBatchSizes: the same rows written as batches of 1,
// 3, 1000, R−1, R+1 rows or whole give the same file, byte for byte, of
// row groups of exactly R rows (the last one shorter) — at R =
// RowGroupRows and at a small R, where a row group spans many batches and
// a batch many row groups. The file reads back as the rows written, and
// each row group's dictionary for the label column is the codebook's
// labels, unused ones included, however many batches the group came in.
func TestParquetBytesIgnoreBatchSizes(t *testing.T) {
	eachBatchSizing(t, "t.parquet", func(rec arrow.RecordBatch, R, size int, p string, _ []byte) {
		n := int(rec.NumRows())
		r, err := Open(p, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if g := ParquetRowGroups(r); !slices.Equal(g, []int64{int64(R), int64(R), int64(n - 2*R)}) {
			t.Errorf("R %d: row groups %v", R, g)
		}
		r.Close()
		for g := range 3 {
			r, err := Open(p, ReadOptions{DictColumns: []string{"label"}, RowGroups: []int{g}, BatchSize: R + 1})
			if err != nil {
				t.Fatal(err)
			}
			b, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			d := b.Column(9).(*array.Dictionary).Dictionary().(*array.String)
			var got []string
			for i := range d.Len() {
				got = append(got, d.Value(i))
			}
			if !slices.Equal(got, rowGroupTestLabels) {
				t.Errorf("R %d, batches of %d: row group %d's label dictionary is %q, want the codebook's %q", R, size, g, got, rowGroupTestLabels)
			}
			r.Close()
		}
	})
}

// eachBatchSizing writes rowGroupTestBatch(n), n = 2R + R/2 + 7, to a
// file named name (its extension picks the format) with R rows a row
// group or record batch, at R = RowGroupRows and at a small R = 100 (where
// a group spans many batches and a batch many groups): whole, and as
// batches of 1, 3, 1000, R−1 and R+1 rows. Each write must give the whole
// write's bytes and read back as the rows written; check then looks at
// the format's own structure of the file at p (bytes data).
func eachBatchSizing(t *testing.T, name string, check func(rec arrow.RecordBatch, R, size int, p string, data []byte)) {
	t.Helper()
	for _, R := range []int{RowGroupRows, 100} {
		n := 2*R + R/2 + 7
		rec := rowGroupTestBatch(n)
		_, want := writeFileInBatches(t, name, rec, []int{n}, R)
		for _, size := range []int{n, 1, 3, 1000, R - 1, R + 1} {
			p, got := writeFileInBatches(t, name, rec, []int{size}, R)
			if !bytes.Equal(got, want) {
				t.Errorf("R %d: batches of %d rows give %d bytes, not the %d bytes of one batch", R, size, len(got), len(want))
				continue
			}
			readBackEquals(t, p, rec)
			check(rec, R, size, p, got)
		}
		rec.Release()
	}
}

// readBackEquals checks that the Parquet file at p holds rec's rows.
func readBackEquals(t *testing.T, p string, rec arrow.RecordBatch) {
	t.Helper()
	r, err := Open(p, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rows := 0
	err = EachBatch(r, func(b arrow.RecordBatch, first int64) error {
		for j := range int(b.NumCols()) {
			for i := range int(b.NumRows()) {
				row := int(first) - 1 + i
				got, want := b.Column(j).ValueStr(i), rec.Column(j).ValueStr(row)
				if got != want {
					return fmt.Errorf("row %d column %s: read %q, wrote %q", row+1, rec.Schema().Field(j).Name, got, want)
				}
			}
		}
		rows += int(b.NumRows())
		return nil
	})
	if err != nil || rows != int(rec.NumRows()) {
		t.Fatalf("read %d rows (%v), wrote %d", rows, err, rec.NumRows())
	}
}

// TestParquetRowGroupOfBatchesWithOtherDictionaries: a dictionary column
// whose batches carry different dictionaries (none of the stages writes
// one: a Labels column has one for the whole file, but an Arrow input may)
// is gathered into a row group over their union: the labels read back, and
// the bytes still depend only on each row's label and dictionary, not on
// where the batches are cut.
func TestParquetRowGroupOfBatchesWithOtherDictionaries(t *testing.T) {
	sameBytesWhereverBatchesOfOtherDictionariesAreCut(t, "t.parquet", nil)
}

// sameBytesWhereverBatchesOfOtherDictionariesAreCut writes 40 rows of one
// dictionary column, the first 20 over the dictionary [x y] and the rest
// over [z y w], to a file named name (its extension picks the format) of
// 30 rows a row group or record batch, as batches cut at [0 20 40] and at
// two finer sets of cuts, each batch carrying its rows' dictionary. Every
// file must read back as the labels written and be the same, byte for
// byte; check (if any) looks at each file's bytes data too.
func sameBytesWhereverBatchesOfOtherDictionariesAreCut(t *testing.T, name string, check func(cuts []int, data []byte, want []string)) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{DictField("d")}, nil)
	dicts := []*Labels{NewLabels([]string{"x", "y"}), NewLabels([]string{"z", "y", "w"})}
	codes := make([]uint32, 40)
	var want []string
	for i := range codes {
		codes[i] = uint32(i*7) % 2
		want = append(want, []string{"x", "y"}[codes[i]])
		if i >= 20 {
			codes[i] = uint32(i*5) % 3
			want[i] = []string{"z", "y", "w"}[codes[i]]
		}
	}
	write := func(cuts []int) []byte {
		p := filepath.Join(t.TempDir(), name)
		w, err := Create(p, schema, nil, WriteOptions{RowGroupRows: 30})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		for k := range len(cuts) - 1 {
			lo, hi := cuts[k], cuts[k+1]
			col := dicts[min(lo/20, 1)].Column(slices.Clone(codes[lo:hi]))
			rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(hi-lo))
			col.Release()
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		r, err := Open(p, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var got []string
		if err := EachBatch(r, func(b arrow.RecordBatch, _ int64) error {
			for i := range int(b.NumRows()) {
				got = append(got, ValuesOf(b.Column(0)).String(i))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("batches cut at %v: read %q, wrote %q", cuts, got, want)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if check != nil {
			check(cuts, data, want)
		}
		return data
	}
	a := write([]int{0, 20, 40})
	for _, cuts := range [][]int{{0, 7, 20, 21, 33, 40}, {0, 3, 6, 9, 12, 15, 18, 20, 25, 29, 31, 40}} {
		if b := write(cuts); !bytes.Equal(a, b) {
			t.Errorf("batches cut at %v: %d bytes, not the %d of batches cut at [0 20 40]", cuts, len(b), len(a))
		}
	}
}

// TestRowGroupValuesAreRecycled gathers 50 groups of four int32 columns
// (1 MiB of values each), releasing each group's batch as the writers do
// once it is encoded, and checks that the groups reuse one another's
// memory: fresh buffers were 50 MiB of allocations, zeroed and faulted
// in, for what one group's worth serves.
func TestRowGroupValuesAreRecycled(t *testing.T) {
	const rows, groups = 64 * 1024, 50
	fields := make([]arrow.Field, 4)
	cols := make([]arrow.Array, len(fields))
	for j := range fields {
		fields[j] = arrow.Field{Name: fmt.Sprint("c", j), Type: arrow.PrimitiveTypes.Int32}
		b := array.NewInt32Builder(memory.DefaultAllocator)
		for i := range rows {
			b.Append(int32(i*(j+1)) % 1000)
		}
		cols[j] = b.NewArray()
		defer cols[j].Release()
		b.Release()
	}
	schema := arrow.NewSchema(fields, nil)
	rec := array.NewRecordBatch(schema, cols, rows)
	defer rec.Release()
	gather := func() {
		g := newRowGroupBuf(schema, rows, dictMemos(schema))
		if err := g.appendRows(rec, 0, rows); err != nil {
			t.Fatal(err)
		}
		b, err := g.batch()
		if err != nil {
			t.Fatal(err)
		}
		if v := b.Column(3).(*array.Int32).Value(rows - 1); v != int32((rows-1)*4)%1000 {
			t.Fatalf("gathered %d, want %d", v, int32((rows-1)*4)%1000)
		}
		b.Release()
	}
	gather() // the first group's buffers, kept from here on
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range groups {
		gather()
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("%d groups allocated %d MiB; their values should reuse one group's 1 MiB", groups, got>>20)
	}
}

// TestRowGroupsOverOneDictionaryShareOneCopy: a dictionary column written
// in 21 batches of 150 rows, row groups (Parquet) and record batches
// (Arrow) of 1000 rows, is gathered with one copy of its dictionary for
// the first three groups (dictMemo), not one a group, and reads back as
// written; batches over another dictionary array with the same labels
// join a group as they are (equal labels) and cost one more copy for the
// group they start. The dictionary of a Labels is never copied: its
// memory never changes (frozenDicts).
func TestRowGroupsOverOneDictionaryShareOneCopy(t *testing.T) {
	words := []string{"north", "south", "east", "west"}
	// unfrozen is a Labels whose dictionary the writer cannot know to be
	// immutable, as a dictionary from another source.
	unfrozen := func() *Labels {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues(words, nil)
		return &Labels{dict: b.NewStringArray()}
	}
	schema := arrow.NewSchema([]arrow.Field{DictField("dir")}, nil)
	for _, tc := range []struct {
		name          string
		labels, other *Labels
		copies        int64
	}{
		{"Labels", NewLabels(words), NewLabels(words), 0},
		{"unfrozen", unfrozen(), unfrozen(), 2},
	} {
		for _, ext := range []string{"parquet", "arrow"} {
			p := filepath.Join(t.TempDir(), "t."+ext)
			w, err := Create(p, schema, Meta{}, WriteOptions{RowGroupRows: 1000})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			before := dictCopies.Load()
			for b := range 21 {
				l := tc.labels
				if b >= 19 { // within the third group, then starting the fourth
					l = tc.other
				}
				codes := make([]uint32, 150)
				for i := range codes {
					codes[i] = uint32((b*150 + i) % 7 % 4)
					want = append(want, l.dict.Value(int(codes[i])))
				}
				rec := CodesBatch(schema, [][]uint32{codes}, []*Labels{l}, len(codes))
				if err := w.Write(rec); err != nil {
					t.Fatal(err)
				}
				rec.Release()
			}
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			if n := dictCopies.Load() - before; n != tc.copies {
				t.Errorf("%s, %s: %d dictionary copies for 3 groups over one dictionary and one over another, want %d", tc.name, ext, n, tc.copies)
			}
			got := firstColumn(t, p)
			if !slices.Equal(got, want) {
				t.Errorf("%s, %s reads back as %d labels, not the %d written", tc.name, ext, len(got), len(want))
			}
		}
	}
}

// firstColumn reads a table's first column as strings (readAll).
func firstColumn(t *testing.T, path string) []string {
	t.Helper()
	_, rows, _, _ := readAll(t, path, ReadOptions{})
	cells := make([]string, len(rows))
	for i, r := range rows {
		cells[i] = r[0]
	}
	return cells
}
