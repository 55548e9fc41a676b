package table

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	xreader "github.com/xitongsys/parquet-go/reader"
)

// footerTestBatch is rows [0, n) of a table of cols columns: with 1, one
// int32 column of codes; with 7, codes, large ints, categorical and
// unique strings, a nullable int32, a nullable string and codebook labels
// (rowGroupTestBatch's); with more, cols int32 columns of 0/1 (bitflip's
// one-hot bits: a wide table, written a group at a time).
func footerTestBatch(cols, n int) arrow.RecordBatch {
	switch cols {
	case 1, 7:
		rec := rowGroupTestBatch(n)
		defer rec.Release()
		keep := []int{0}
		if cols == 7 {
			keep = []int{0, 1, 2, 3, 4, 5, 9}
		}
		fields := make([]arrow.Field, len(keep))
		arrs := make([]arrow.Array, len(keep))
		for i, j := range keep {
			fields[i], arrs[i] = rec.Schema().Field(j), rec.Column(j)
		}
		return array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(n))
	}
	schema := int32Schema(cols)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for j := range cols {
		for i := range n {
			b.Field(j).(*array.Int32Builder).Append(int32(i / (j + 1) & 1))
		}
	}
	return b.NewRecordBatch()
}

// sliceRows cuts rec into batches of step rows.
func sliceRows(rec arrow.RecordBatch, step int) []arrow.RecordBatch {
	var recs []arrow.RecordBatch
	for off := int64(0); off < rec.NumRows(); off += int64(step) {
		recs = append(recs, rec.NewSlice(off, min(rec.NumRows(), off+int64(step))))
	}
	return recs
}

// TestStreamedFooterIsArrowGosFooter: the file written with the row
// groups' metadata held encoded (footerRowGroups) is the file written with
// it held in arrow-go's FileMetaDataBuilder, byte for byte: 1, 7 and 200
// columns (int32, strings, dictionary labels, nulls), no rows, one row
// group, 14 and 15 row groups (the short and long list headers), many,
// a key-value item of 10 MB, 15 items (a long list header) and an empty
// value; the row groups held in memory or, past a
// bound of 1 byte, every one in the temporary file.
func TestStreamedFooterIsArrowGosFooter(t *testing.T) {
	big := Meta{"codebook": strings.Repeat("0123456789", 1<<20)}
	for _, tc := range []struct {
		name           string
		cols, rows, rg int
		meta           Meta
	}{
		{"1 column, no rows", 1, 0, 100, nil},
		{"1 column, 1 row group", 1, 70, 100, Meta{"k": "v"}},
		{"1 column, 14 row groups", 1, 140, 10, nil},
		{"1 column, 15 row groups", 1, 150, 10, nil},
		{"7 columns, 1 row", 7, 1, 10, nil},
		{"7 columns, 302 row groups", 7, 3017, 10, Meta{"k": "v"}},
		{"7 columns, 15 items, one empty", 7, 30, 10, Meta{"a": "", "b": "1", "c": "2", "d": "3", "e": "4", "f": "5", "g": "6", "h": "7", "i": "8", "j": "9", "k": "10", "l": "11", "m": "12", "n": "13"}},
		{"7 columns, 10 MB of metadata", 7, 3017, 1000, big},
		{"200 columns, 1 row group", 200, 500, 1000, nil},
		{"200 columns, 40 row groups", 200, 4000, 100, nil},
	} {
		rec := footerTestBatch(tc.cols, tc.rows)
		recs := sliceRows(rec, 333)
		for _, held := range []int{footerHeldBytes, 1} {
			t.Run(fmt.Sprintf("%s/held %d bytes", tc.name, held), func(t *testing.T) {
				defer func(old int, oldStream bool) { footerHeldBytes, streamFooter = old, oldStream }(footerHeldBytes, streamFooter)
				footerHeldBytes = held
				streamFooter = false
				want := ownParquet(t, rec.Schema(), tc.meta, tc.rg, recs).Bytes()
				streamFooter = true
				got := ownParquet(t, rec.Schema(), tc.meta, tc.rg, recs).Bytes()
				if !bytes.Equal(got, want) {
					t.Fatalf("%d bytes, with arrow-go's footer %d: not the same", len(got), len(want))
				}
			})
		}
		for _, r := range recs {
			r.Release()
		}
		rec.Release()
	}
}

// TestStreamedFooterIsReadByOtherReaders: a file of 302 row groups, their
// metadata spilled to the temporary file, reads back as written with
// arrow-go's reader (this package's and file.Reader: 302 row groups of 10
// rows, the last 7, at ordinals 0…) and xitongsys/parquet-go's.
func TestStreamedFooterIsReadByOtherReaders(t *testing.T) {
	defer func(old int) { footerHeldBytes = old }(footerHeldBytes)
	footerHeldBytes = 4 << 10
	const n, group = 3017, 10
	rec := footerTestBatch(7, n)
	defer rec.Release()
	recs := sliceRows(rec, 1000)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	b := ownParquet(t, rec.Schema(), Meta{"k": "v"}, group, recs).Bytes()
	p := filepath.Join(t.TempDir(), "t.parquet")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	readBackEquals(t, p, rec)

	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if pf.NumRows() != n || pf.NumRowGroups() != (n+group-1)/group {
		t.Fatalf("arrow-go reads %d rows in %d row groups", pf.NumRows(), pf.NumRowGroups())
	}
	for i := range pf.NumRowGroups() {
		rg := pf.MetaData().RowGroup(i)
		if want := min(group, n-i*group); rg.NumRows() != int64(want) || rg.Ordinal() != int16(i) || rg.NumColumns() != 7 {
			t.Fatalf("row group %d: %d rows, ordinal %d, %d columns", i, rg.NumRows(), rg.Ordinal(), rg.NumColumns())
		}
	}

	pr, err := xreader.NewParquetColumnReader(memFile{bytes.NewReader(b)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.ReadStop()
	if pr.GetNumRows() != n || len(pr.Footer.RowGroups) != (n+group-1)/group {
		t.Fatalf("xitongsys/parquet-go reads %d rows in %d row groups", pr.GetNumRows(), len(pr.Footer.RowGroups))
	}
	for _, j := range []int{0, 3} {
		vals, _, _, err := pr.ReadColumnByIndex(int64(j), n)
		if err != nil {
			t.Fatal(err)
		}
		if len(vals) != n {
			t.Fatalf("column %d: %d values", j, len(vals))
		}
		for i, v := range vals {
			if got, want := fmt.Sprint(v), rec.Column(j).ValueStr(i); got != want {
				t.Fatalf("column %d row %d: xitongsys/parquet-go reads %s, want %s", j, i, got, want)
			}
		}
	}
}

// footerTemps lists the temporary files of footerRowGroups in dir.
func footerTemps(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "pramkit-parquet-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// failingSink fails every write after the first n bytes.
type failingSink struct {
	bufSink
	n int
}

func (s *failingSink) Write(p []byte) (int, error) {
	if s.Len()+len(p) > s.n {
		return 0, errors.New("disk full")
	}
	return s.bufSink.Write(p)
}

// TestFooterTempFileIsRemoved: the temporary file of the row groups'
// metadata is gone once the file is committed, aborted, or failed (a row
// group left unfinished, a footer the sink refuses) — unlinked at once,
// or, where it cannot be (footerUnlinkSpill off, as on Windows), kept
// under its name, registered for the signal handler, while the file is
// written, and removed at the end.
func TestFooterTempFileIsRemoved(t *testing.T) {
	defer func(old int, oldUnlink bool) { footerHeldBytes, footerUnlinkSpill = old, oldUnlink }(footerHeldBytes, footerUnlinkSpill)
	footerHeldBytes = 1
	const rows, group = 500, 100
	rec := footerTestBatch(7, rows)
	defer rec.Release()
	schema := rec.Schema()
	ends := map[string]func(t *testing.T, tmp string) error{
		"commit": func(t *testing.T, tmp string) error {
			w, err := Create(filepath.Join(tmp, "out", "t.parquet"), schema, nil, WriteOptions{RowGroupRows: group})
			if err != nil {
				return err
			}
			if err := w.Write(rec); err != nil {
				return err
			}
			return w.Commit()
		},
		"abort": func(t *testing.T, tmp string) error {
			w, err := Create(filepath.Join(tmp, "out", "t.parquet"), schema, nil, WriteOptions{RowGroupRows: group})
			if err != nil {
				return err
			}
			if err := w.Write(rec); err != nil {
				return err
			}
			w.Abort()
			return nil
		},
		"unfinished row group": func(t *testing.T, tmp string) error {
			return writeGroupsThen(t, schema, rec, new(bufSink), func(f *pqFile) error {
				if _, err := f.appendRowGroup(); err != nil {
					return err
				}
				if err := f.close(); err == nil {
					return errors.New("close wrote a footer after an unfinished row group")
				}
				return nil
			})
		},
		"footer refused": func(t *testing.T, tmp string) error {
			return writeGroupsThen(t, schema, rec, &failingSink{n: 1 << 20}, func(f *pqFile) error {
				f.sink.s.(*failingSink).n = 0
				if err := f.close(); err == nil || !strings.Contains(err.Error(), "disk full") {
					return fmt.Errorf("close after the sink failed: %v", err)
				}
				return nil
			})
		},
	}
	for _, unlink := range []bool{true, false} {
		for name, end := range ends {
			t.Run(fmt.Sprintf("%s/unlink=%v", name, unlink), func(t *testing.T) {
				footerUnlinkSpill = unlink
				tmp := t.TempDir()
				t.Setenv("TMPDIR", tmp)
				if err := os.Mkdir(filepath.Join(tmp, "out"), 0o755); err != nil {
					t.Fatal(err)
				}
				spilled := 0
				footerSpilled = func(name string) {
					spilled++
					if got := footerTemps(t, tmp); unlink && len(got) != 0 || !unlink && len(got) != 1 {
						t.Errorf("while the file is written: temporary files %v", got)
					}
					partials.Lock()
					_, tracked := partials.temps[name]
					partials.Unlock()
					if tracked == unlink {
						t.Errorf("%s registered for the signal handler: %v", name, tracked)
					}
				}
				defer func() { footerSpilled = nil }()
				if err := end(t, tmp); err != nil {
					t.Fatal(err)
				}
				if spilled != 1 {
					t.Errorf("%d temporary files made, want 1", spilled)
				}
				if got := footerTemps(t, tmp); len(got) != 0 {
					t.Errorf("temporary files left: %v", got)
				}
				partials.Lock()
				defer partials.Unlock()
				for p := range partials.temps {
					if strings.HasPrefix(p, tmp) {
						t.Errorf("%s still registered", p)
					}
				}
			})
		}
	}
}

// writeGroupsThen writes rec to a pqFile on s, a row group of group rows
// at a time (spilling their metadata), then calls end.
func writeGroupsThen(t *testing.T, schema *arrow.Schema, rec arrow.RecordBatch, s sink, end func(*pqFile) error) error {
	t.Helper()
	const group = 100
	p := &parquetWriter{schema: schema, fields: schema.Fields(), groupRows: group, memos: dictMemos(schema)}
	defer releaseMemos(p.memos)
	f, err := newPQFile(withMeta(plainSchema(schema), nil), s, parquetProps(schema, group), lateItems{})
	if err != nil {
		return err
	}
	p.fw = f
	for _, r := range sliceRows(rec, group) {
		g, err := p.startGroup(r, make(chan struct{}, 2))
		r.Release()
		if err != nil {
			return err
		}
		if err := g.wait(); err != nil {
			return err
		}
	}
	if f.footer.spill == nil {
		return errors.New("nothing spilled")
	}
	return end(f)
}

// TestFooterSpliceInPieces: the footer is the same whether its metadata
// comes in one Write (spliced in place) or in pieces (gathered first),
// and a truncated one is refused, never spliced.
func TestFooterSpliceInPieces(t *testing.T) {
	rec := footerTestBatch(7, 50)
	defer rec.Release()
	meta := Meta{"k": strings.Repeat("v", 300)}
	sch := withMeta(plainSchema(rec.Schema()), meta)
	f, err := newPQFile(sch, new(bufSink), parquetProps(rec.Schema(), 10), lateItems{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	md, err := f.meta.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	if _, err := md.WriteTo(&raw, nil); err != nil {
		t.Fatal(err)
	}
	f.footer.held, f.footer.n, f.footer.rows = []byte("ROWGROUPS"), 20, 1<<40
	var whole bytes.Buffer
	sp := &footerSplice{rg: &f.footer, w: &whole}
	if _, err := sp.Write(raw.Bytes()); err != nil || !sp.done || sp.finish() != nil {
		t.Fatalf("one Write: %v, spliced %v", err, sp.done)
	}
	if !bytes.Contains(whole.Bytes(), []byte{0xFC, 20, 'R', 'O', 'W'}) {
		t.Error("no list header of 20 structs before the row groups")
	}
	for _, piece := range []int{1, 7, 1000} {
		var got bytes.Buffer
		sp := &footerSplice{rg: &f.footer, w: &got}
		for b := raw.Bytes(); len(b) > 0; b = b[min(piece, len(b)):] {
			if _, err := sp.Write(b[:min(piece, len(b))]); err != nil {
				t.Fatal(err)
			}
		}
		if err := sp.finish(); err != nil || !bytes.Equal(got.Bytes(), whole.Bytes()) {
			t.Errorf("pieces of %d bytes: %v, %d bytes, in one Write %d", piece, err, got.Len(), whole.Len())
		}
	}
	for n := range raw.Len() {
		var out bytes.Buffer
		sp := &footerSplice{rg: &f.footer, w: &out}
		if _, err := sp.Write(raw.Bytes()[:n]); err != nil {
			continue
		}
		if err := sp.finish(); err == nil || out.Len() != 0 {
			t.Fatalf("the first %d bytes of %d: spliced (%v), wrote %d bytes", n, raw.Len(), err, out.Len())
		}
	}
}

// BenchmarkRowGroupMetadata closes row groups of 4,000 one-hot bit
// columns of 64 rows each (bitPages) with their metadata held encoded
// (footerRowGroups) or in arrow-go's builder, and writes the footer: the
// encoding's cost per row group.
func BenchmarkRowGroupMetadata(b *testing.B) {
	const cols, rows = 4000, 64
	schema := int32Schema(cols)
	bits := make([]byte, rows/8)
	for i := range bits {
		bits[i] = byte(i * 37)
	}
	for _, stream := range []bool{false, true} {
		b.Run(fmt.Sprintf("streamFooter=%v", stream), func(b *testing.B) {
			defer func(old bool) { streamFooter = old }(streamFooter)
			streamFooter = stream
			f, err := newPQFile(schema, new(bufSink), parquetProps(schema, rows), lateItems{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				rg, err := f.appendRowGroup()
				if err != nil {
					b.Fatal(err)
				}
				for j := range cols {
					if err := rg.bitPages(j, bits, rows, 1); err != nil {
						b.Fatal(err)
					}
				}
				if err := rg.close(); err != nil {
					b.Fatal(err)
				}
			}
			if err := f.close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
