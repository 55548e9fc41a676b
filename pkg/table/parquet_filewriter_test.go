package table

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

type bufSink struct{ bytes.Buffer }

func (*bufSink) Close() error { return nil }

// legacyParquet writes recs, one row group each, as newParquetWriter did
// before pqFile: through arrow-go's file.Writer with buffered row groups,
// every column through pqarrow and arrow-go's encoders (int32 columns of
// small values as smallIntDict's dictionary arrays, strings through
// stringDicts, dictionary pages flushed early). The reference pqFile's
// bytes are compared with.
func legacyParquet(t *testing.T, schema *arrow.Schema, meta Meta, groupRows int, recs []arrow.RecordBatch, extra ...parquet.WriterProperty) []byte {
	t.Helper()
	props := parquetProps(schema, groupRows, extra...)
	sch := withMeta(plainSchema(schema), meta)
	pqschema, err := pqarrow.ToParquet(sch, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	var buf bufSink
	fw, err := file.NewParquetWriterWithError(&buf, pqschema.Root(), file.WithWriterProps(props), file.WithWriteMetadata(fileKeyValues(sch, props, 0)))
	if err != nil {
		t.Fatal(err)
	}
	var strs stringDicts
	ctx := pqarrow.NewArrowWriteContext(context.Background(), nil)
	for _, rec := range recs {
		rgw, err := fw.AppendBufferedRowGroupChecked()
		if err != nil {
			t.Fatal(err)
		}
		for j, col := range rec.Columns() {
			a, ok := smallIntDict(col)
			if !ok {
				a, ok = strs.dict(j, col, 0)
			}
			if !ok {
				col.Retain()
				a = col
			}
			cw, err := rgw.Column(j)
			if err != nil {
				t.Fatal(err)
			}
			var def []int16
			if cw.LevelInfo().DefLevel > 0 {
				def = make([]int16, a.Len())
				for i := range def {
					if a.IsValid(i) {
						def[i] = 1
					}
				}
			}
			if err := pqarrow.WriteArrowToColumn(ctx, cw, a, def, nil, schema.Field(j).Nullable); err != nil {
				t.Fatal(err)
			}
			if err := flushDictPage(cw, a); err != nil {
				t.Fatal(err)
			}
			a.Release()
		}
		if err := rgw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ownParquet is the file newParquetWriter writes for recs, in row groups
// of group rows.
func ownParquet(t *testing.T, schema *arrow.Schema, meta Meta, group int, recs []arrow.RecordBatch) *bufSink {
	t.Helper()
	buf := new(bufSink)
	w, err := newParquetWriter(buf, schema, meta, lateItems{}, group)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	return buf
}

// TestPlainPagesGiveArrowGoBytesWithoutDictionary: a string column that
// stringDicts finds wide (unique ids) is written as finished PLAIN pages
// (plainPages), the file arrow-go's file.Writer writes for the same row
// groups with dictionary encoding off for that column, byte for byte: in
// row groups of 1000 rows and of 70,000 (6 MB of ids: pages cut at
// DataPageSize), beside a categorical column; it reads back as written.
// With plainPages off the column writer writes the same bytes too, after
// hashing the cells into a dictionary it drops when it falls back before
// its first data page: plainPages saves the hashing.
func TestPlainPagesGiveArrowGoBytesWithoutDictionary(t *testing.T) {
	const n = 70_000
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "sex", Type: arrow.BinaryTypes.String}}, nil)
	ids, sexes := array.NewStringBuilder(memory.DefaultAllocator), array.NewStringBuilder(memory.DefaultAllocator)
	for i := range n {
		ids.Append(fmt.Sprintf("person-%08d-%s", i*7919%n, strings.Repeat("x", 60+i%31)))
		sexes.Append([]string{"Male", "Female"}[i%3%2])
	}
	cols := []arrow.Array{ids.NewArray(), sexes.NewArray()}
	rec := array.NewRecordBatch(sch, cols, n)
	defer rec.Release()
	for _, c := range cols {
		c.Release()
	}
	for _, group := range []int{1000, n} {
		var recs []arrow.RecordBatch
		for off := 0; off < n; off += group {
			recs = append(recs, rec.NewSlice(int64(off), int64(min(n, off+group))))
		}
		want := legacyParquet(t, sch, Meta{"k": "v"}, group, recs, parquet.WithDictionaryFor("id", false))
		for _, own := range []bool{true, false} {
			t.Run(fmt.Sprintf("group=%d/plainPages=%v", group, own), func(t *testing.T) {
				defer func(old bool) { ownPlainPages = old }(ownPlainPages)
				ownPlainPages = own
				before := plainPagesChunks.Load()
				buf := ownParquet(t, sch, Meta{"k": "v"}, group, recs)
				chunks := plainPagesChunks.Load() - before
				same := bytes.Equal(buf.Bytes(), want)
				switch {
				case !same:
					t.Fatalf("%d bytes, arrow-go's file.Writer without a dictionary for id writes %d, not the same", buf.Len(), len(want))
				case own && chunks != int64(len(recs)):
					t.Errorf("plainPages wrote %d column chunks of %d row groups", chunks, len(recs))
				case !own && chunks != 0:
					t.Errorf("plainPages wrote %d chunks while off", chunks)
				}
				p := filepath.Join(t.TempDir(), "t.parquet")
				if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				readBackEquals(t, p, rec)
			})
		}
		for _, r := range recs {
			r.Release()
		}
	}
}

// intPagesTestBatch is rowGroupTestBatch with more int32 columns: one-hot
// bits in runs, an all-zero column (a one-entry dictionary), three
// values, values up to maxSmallInt-1 (12-bit indices), and one whose
// values pass maxSmallInt only in its second 1000 rows and one with
// negative values (both then written by a column writer), a column of
// codebook labels (DictType) and labelTestColumns' label columns.
func intPagesTestBatch(n int) arrow.RecordBatch {
	base := rowGroupTestBatch(n)
	defer base.Release()
	fields := append([]arrow.Field(nil), base.Schema().Fields()...)
	cols := append([]arrow.Array(nil), base.Columns()...)
	extra := map[string]func(k int) int32{
		"bit":   func(k int) int32 { return int32(k*k/7%23) % 2 },
		"zero":  func(int) int32 { return 0 },
		"three": func(k int) int32 { return int32(k / 9 % 3) },
		"wide":  func(k int) int32 { return int32(k * 2654435761 % maxSmallInt) },
		"mixed": func(k int) int32 {
			if k >= 1000 && k < 2000 {
				return maxSmallInt + 1
			}
			return int32(k % 5)
		},
		"neg": func(k int) int32 { return int32(k%4 - 1) },
	}
	for _, name := range []string{"bit", "zero", "three", "wide", "mixed", "neg"} {
		b := array.NewInt32Builder(memory.DefaultAllocator)
		for k := range n {
			b.Append(extra[name](k))
		}
		fields = append(fields, arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int32})
		a := b.NewArray()
		defer a.Release()
		cols = append(cols, a)
		b.Release()
	}
	// A codebook column as stages write it: labels over codes.
	labels := array.NewStringBuilder(memory.DefaultAllocator)
	labels.AppendValues([]string{"Sales", "Tech", "Craft", "?"}, nil)
	dict := labels.NewArray()
	labels.Release()
	defer dict.Release()
	idx := array.NewInt32Builder(memory.DefaultAllocator)
	for k := range n {
		idx.Append(int32(k / 3 % 4))
	}
	ia := idx.NewArray()
	idx.Release()
	defer ia.Release()
	da := array.NewDictionaryArray(DictType, ia, dict)
	defer da.Release()
	fields = append(fields, DictField("label"))
	cols = append(cols, da)
	lf, lc := labelTestColumns(n)
	for _, c := range lc {
		defer c.Release()
	}
	fields = append(fields, lf...)
	cols = append(cols, lc...)
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(n))
}

// TestParquetFileWriterGivesArrowGoBytes: the file pqFile writes — int32
// columns of small values and dictionary columns of labels as finished
// pages (intPages, labelPages, appendRLEHybrid), the other columns through
// column writers of its own row groups — is the file arrow-go's
// file.Writer and encoders write for the same row groups, byte for byte
// (legacyParquet), with intPages and labelPages on and off, for row groups
// of one row, of 1000 rows (the last shorter) and of 70,000 rows; a
// dictionary of more than maxDictPage bytes given to arrow-go as the row
// group's own labels (usedLabelsOnly), as compactDict writes it. It
// reads back as written with this package's reader.
func TestParquetFileWriterGivesArrowGoBytes(t *testing.T) {
	for _, tc := range []struct{ n, group int }{{3, 1}, {3017, 1000}, {70_000, 70_000}} {
		rec := intPagesTestBatch(tc.n)
		var recs []arrow.RecordBatch
		for off := 0; off < tc.n; off += tc.group {
			recs = append(recs, rec.NewSlice(int64(off), int64(min(tc.n, off+tc.group))))
		}
		meta := Meta{"k": "v"}
		// A dictionary past maxDictPage bytes goes out as the row group's
		// own labels (compactDict): arrow-go writes the same bytes given
		// those labels (usedLabelsOnly, a map-based compaction of its own).
		compacted := make([]arrow.RecordBatch, len(recs))
		for i, r := range recs {
			compacted[i] = usedLabelsOnly(t, r)
		}
		want := legacyParquet(t, rec.Schema(), meta, tc.group, compacted)
		for _, r := range compacted {
			r.Release()
		}
		for _, own := range []bool{true, false} {
			t.Run(fmt.Sprintf("rows=%d/group=%d/ownPages=%v", tc.n, tc.group, own), func(t *testing.T) {
				defer func(old, oldLabels bool) { ownIntPages, ownLabelPages = old, oldLabels }(ownIntPages, ownLabelPages)
				ownIntPages, ownLabelPages = own, own
				before, beforeLabels := intPagesChunks.Load(), labelPagesChunks.Load()
				buf := ownParquet(t, rec.Schema(), meta, tc.group, recs)
				if !bytes.Equal(buf.Bytes(), want) {
					t.Fatalf("%d bytes, arrow-go's file.Writer writes %d, not the same", buf.Len(), len(want))
				}
				p := filepath.Join(t.TempDir(), "t.parquet")
				if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				readBackEquals(t, p, rec)
				// At least code, bit, zero, three and wide in every row
				// group (null is nullable, big and neg take it only in
				// row groups of one row).
				chunks := intPagesChunks.Load() - before
				if groups := int64(len(recs)); own && chunks < 5*groups || !own && chunks != 0 {
					t.Errorf("intPages wrote %d column chunks of %d row groups", chunks, groups)
				}
				labelChunks := labelPagesChunks.Load() - beforeLabels
				if groups := int64(len(recs)); own && labelChunks < labelPagesPerGroup*groups || !own && labelChunks != 0 {
					t.Errorf("labelPages wrote %d column chunks of %d row groups, want at least %d a row group", labelChunks, groups, labelPagesPerGroup)
				}
			})
		}
		for _, r := range recs {
			r.Release()
		}
		rec.Release()
	}
}

// TestSmallIntMaxIsTheLargestValueInRange: smallIntMax agrees with a plain
// loop on slices of every length up to 13 and offsets, with the largest
// value, a negative value or a value of maxSmallInt or more at every
// position.
func TestSmallIntMaxIsTheLargestValueInRange(t *testing.T) {
	b := array.NewInt32Builder(memory.DefaultAllocator)
	defer b.Release()
	for n := 1; n <= 13; n++ {
		for pos := range n {
			for _, special := range []int32{maxSmallInt - 1, 4000, -1, maxSmallInt, 1 << 30, -1 << 31} {
				vals := make([]int32, n+2)
				for i := range vals {
					vals[i] = int32(i * 37 % 900)
				}
				vals[1+pos] = special
				b.AppendValues(vals, nil)
				whole := b.NewInt32Array()
				a := array.NewSlice(whole, 1, int64(n+1)).(*array.Int32)
				want, wantOK := int32(0), true
				for _, v := range a.Int32Values() {
					wantOK = wantOK && v >= 0 && v < maxSmallInt
					want = max(want, v)
				}
				got, ok := smallIntMax(a)
				if ok != wantOK || ok && got != want {
					t.Errorf("%v: smallIntMax = %d, %v; want %d, %v", a.Int32Values(), got, ok, want, wantOK)
				}
				a.Release()
				whole.Release()
			}
		}
	}
}

type closeCounter struct {
	bufSink
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// TestPQFileAfterAFailedRowGroup: a row group left unfinished (a column
// failed) makes close refuse to write a footer over it — the file is
// broken and its caller discards it — yet close still closes the sink,
// once; a row group started after it cannot be closed before it.
func TestPQFileAfterAFailedRowGroup(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32}}, nil)
	var s closeCounter
	f, err := newPQFile(schema, &s, parquetProps(schema, 10), lateItems{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.appendRowGroup(); err != nil {
		t.Fatal(err)
	}
	second, err := f.appendRowGroup()
	if err != nil {
		t.Fatal(err)
	}
	if err := second.close(); err == nil || !strings.Contains(err.Error(), "before the row groups before it") {
		t.Errorf("the second row group closed before the first: %v", err)
	}
	if err := f.close(); err == nil || s.closed != 1 {
		t.Errorf("close: %v, sink closed %d times; want an error and 1", err, s.closed)
	}
	if err := f.close(); err != nil || s.closed != 1 {
		t.Errorf("second close: %v, sink closed %d times", err, s.closed)
	}
	if bytes.HasSuffix(s.Bytes(), []byte("PAR1")) && s.Len() > 4 {
		t.Error("a footer was written")
	}
}
