package table

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
	xreader "github.com/xitongsys/parquet-go/reader"
)

// codesTable is n rows of two categorical columns held as codes (with
// labels that need CSV quoting) and an int32 column.
func codesTable(n int) (schema *arrow.Schema, labels []*Labels, names [][]string, cols [][]uint32) {
	names = [][]string{{"Male", "Female"}, {"a,b", `say "hi"`, "line\nbreak", "", "ünï"}, nil}
	labels = []*Labels{NewLabels(names[0]), NewLabels(names[1]), nil}
	schema = arrow.NewSchema([]arrow.Field{DictField("sex"), DictField("text"), {Name: "ct", Type: arrow.PrimitiveTypes.Int32}}, nil)
	cols = Block(3, n)
	for i := range n {
		cols[0][i] = uint32(i % 2)
		cols[1][i] = uint32((i / 3) % 5)
		cols[2][i] = uint32(i % 11)
	}
	return
}

// writeCodes writes the table in batches of batch rows, row groups of 1000.
func writeCodes(t *testing.T, path string, batch int) {
	t.Helper()
	schema, labels, _, cols := codesTable(3000)
	w, err := Create(path, schema, Meta{"n": "3000"}, WriteOptions{RowGroupRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for off := 0; off < 3000; off += batch {
		n := min(batch, 3000-off)
		part := [][]uint32{cols[0][off:], cols[1][off:], cols[2][off:]}
		rec := CodesBatch(schema, part, labels, n)
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestCodesWriteAsLabelsInEveryFormat writes a table built from codes and
// Labels to CSV, Parquet and Arrow and reads it back: the labels in every
// cell; CSV and Parquet read back as plain string columns (Parquet as
// dictionaries only when asked), Arrow keeps its dictionaries.
func TestCodesWriteAsLabelsInEveryFormat(t *testing.T) {
	_, _, names, cols := codesTable(3000)
	dir := t.TempDir()
	for _, ext := range []string{"csv", "parquet", "arrow"} {
		p := filepath.Join(dir, "t."+ext)
		writeCodes(t, p, 700)
		for _, dictCols := range [][]string{nil, {"sex", "text"}} {
			r, err := Open(p, ReadOptions{BatchSize: 256, DictColumns: dictCols})
			if err != nil {
				t.Fatal(err)
			}
			wantDict := ext == "arrow" || (ext == "parquet" && dictCols != nil)
			for j := range 2 {
				if got := r.Schema().Field(j).Type.ID() == arrow.DICTIONARY; got != wantDict {
					t.Errorf("%s, DictColumns %v: column %d has type %s", ext, dictCols, j, r.Schema().Field(j).Type)
				}
			}
			if r.Meta()["n"] != "3000" {
				t.Errorf("%s: metadata %v", ext, r.Meta())
			}
			row := 0
			err = EachBatch(r, func(rec arrow.RecordBatch, first int64) error {
				for i := range int(rec.NumRows()) {
					for j := range 3 {
						want := ""
						if j < 2 {
							want = names[j][cols[j][row+i]]
						} else {
							want = strconv.Itoa(int(cols[2][row+i]))
						}
						if got := ValuesOf(rec.Column(j)).String(i); got != want {
							t.Fatalf("%s row %d column %d: %q, want %q", ext, row+i+1, j, got, want)
						}
					}
				}
				row += int(rec.NumRows())
				return nil
			})
			r.Close()
			if err != nil || row != 3000 {
				t.Fatalf("%s: %d rows, %v", ext, row, err)
			}
		}
	}
}

// TestParquetFromCodesIsDictionaryEncodedAndReadByIndependentReader checks
// that the categorical columns are stored dictionary-encoded (a dictionary
// page per column chunk, the labels as its values) and that
// xitongsys/parquet-go reads the labels as plain strings.
func TestParquetFromCodesIsDictionaryEncodedAndReadByIndependentReader(t *testing.T) {
	_, _, names, cols := codesTable(3000)
	p := filepath.Join(t.TempDir(), "t.parquet")
	writeCodes(t, p, 1000)
	pf, err := file.OpenParquetFile(p, false)
	if err != nil {
		t.Fatal(err)
	}
	if pf.NumRowGroups() != 3 {
		t.Errorf("%d row groups, want 3", pf.NumRowGroups())
	}
	for g := range pf.NumRowGroups() {
		for j := range 2 {
			cc, err := pf.MetaData().RowGroup(g).ColumnChunk(j)
			if err != nil {
				t.Fatal(err)
			}
			if !cc.HasDictionaryPage() {
				t.Errorf("row group %d column %d has no dictionary page", g, j)
			}
		}
	}
	pf.Close()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := xreader.NewParquetColumnReader(memFile{bytes.NewReader(b)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.ReadStop()
	for j := range 2 {
		vals, _, _, err := pr.ReadColumnByIndex(int64(j), 3000)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if s, ok := v.(string); !ok || s != names[j][cols[j][i]] {
				t.Fatalf("column %d row %d: independent reader has %v, want %q", j, i+1, v, names[j][cols[j][i]])
			}
		}
	}
}

// TestCodePastLabelsIsRefused: a code outside the labels is a stage's bug;
// the writer reports it instead of writing (or reading out of bounds).
func TestCodePastLabelsIsRefused(t *testing.T) {
	for _, ext := range []string{"csv", "parquet", "arrow"} {
		p := filepath.Join(t.TempDir(), "t."+ext)
		schema := arrow.NewSchema([]arrow.Field{DictField("sex")}, nil)
		w, err := Create(p, schema, nil, WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rec := CodesBatch(schema, [][]uint32{{0, 1, 2}}, []*Labels{NewLabels([]string{"Male", "Female"})}, 3)
		err = w.Write(rec)
		rec.Release()
		w.Abort()
		if err == nil || !strings.Contains(err.Error(), "dictionary entry 2 of 2") {
			t.Errorf("%s: error %v, want one about dictionary entry 2 of 2", ext, err)
		}
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: output left behind", ext)
		}
	}
}

// TestLabelsColumnSharesCodes: the column is the codes, not a copy.
func TestLabelsColumnSharesCodes(t *testing.T) {
	codes := []uint32{1, 0, 1}
	a := NewLabels([]string{"x", "y"}).Column(codes).(*array.Dictionary)
	defer a.Release()
	codes[1] = 1
	if got := ValuesOf(a).String(1); got != "y" {
		t.Errorf("cell 1 is %q after the code changed to 1, want y", got)
	}
}

// TestWritersLetCallersReuseBatchMemory writes batches built over one
// reused block of codes (as stages do with Int32Batch and CodesBatch),
// overwriting the block right after each Write: every format must have
// what the block held at the time of the Write, though Parquet encodes on
// another goroutine.
func TestWritersLetCallersReuseBatchMemory(t *testing.T) {
	labels := NewLabels([]string{"a", "b", "c", "d", "e", "f", "g"})
	schema := arrow.NewSchema([]arrow.Field{DictField("d"), {Name: "i", Type: arrow.PrimitiveTypes.Int32}}, nil)
	const batches, rows = 40, 500
	block := Block(2, rows)
	for _, ext := range []string{"csv", "parquet", "arrow"} {
		p := filepath.Join(t.TempDir(), "t."+ext)
		w, err := Create(p, schema, nil, WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for b := range batches {
			for i := range rows {
				block[0][i] = uint32((b + i) % 7)
				block[1][i] = uint32(b*rows + i)
			}
			rec := CodesBatch(schema, block, []*Labels{labels, nil}, rows)
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
			for i := range rows { // the next batch's values, or garbage
				block[0][i], block[1][i] = 6, 0
			}
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		_, got, _, _ := readAllMax(t, p, ReadOptions{BatchSize: 333})
		if len(got) != batches*rows {
			t.Fatalf("%s: %d rows", ext, len(got))
		}
		for r, row := range got {
			b, i := r/rows, r%rows
			if want := []string{string(rune('a' + (b+i)%7)), strconv.Itoa(r)}; row[0] != want[0] || row[1] != want[1] {
				t.Fatalf("%s row %d: %q, want %q", ext, r+1, row, want)
			}
		}
	}
}

// TestLabelTableFindsExactlyTheLabels: Labels.code finds every label at
// its first index and nothing else — not a label's prefix, extension, a
// zero-padded twin ("ab" and "ab\x00" share their first-8-bytes word),
// nor a string sharing a long label's first 8 bytes — for label sets of
// every size up to a few thousand, with the empty label and repeats.
func TestLabelTableFindsExactlyTheLabels(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		b := make([]byte, r.IntN(20))
		for i := range b {
			b[i] = "ab\x00xyz-"[r.IntN(7)]
		}
		return string(b)
	}
	for _, n := range []int{0, 1, 2, 7, 16, 100, 3000} {
		labels := make([]string, n)
		for i := range labels {
			labels[i] = word()
		}
		if n > 2 {
			labels[n-1] = labels[0] // a repeat: the first one's code
			labels[1] = ""
		}
		first := map[string]int{}
		for i, l := range labels {
			if _, ok := first[l]; !ok {
				first[l] = i
			}
		}
		l := NewLabels(labels)
		for s, i := range first {
			if c, ok := l.code([]byte(s)); !ok || int(c) != i {
				t.Fatalf("n=%d: label %q: code %d, %v; want %d", n, s, c, ok, i)
			}
		}
		for range 20_000 {
			s := word()
			c, ok := l.code([]byte(s))
			want, is := first[s]
			if ok != is || ok && int(c) != want {
				t.Fatalf("n=%d: %q: code %d, %v; want %d, %v", n, s, c, ok, want, is)
			}
		}
		for s := range first {
			others := []string{s + "\x00", s + "a", strings.TrimSuffix(s, s[max(0, len(s)-1):])}
			for p := range len(s) { // the same length, one byte changed: in the first 8, the next 8 or past 16
				b := []byte(s)
				b[p] = "ab\x00xyz-"[(strings.IndexByte("ab\x00xyz-", b[p])+1)%7]
				others = append(others, string(b))
			}
			for _, other := range others {
				c, ok := l.code([]byte(other))
				want, is := first[other]
				if ok != is || ok && int(c) != want {
					t.Fatalf("n=%d: %q: code %d, %v; want %d, %v", n, other, c, ok, want, is)
				}
			}
		}
	}
}

// TestFrozenDictsForgetCollectedLabels: the registry of Labels
// dictionaries holds them weakly, so a long-running process (a Beam
// worker) that builds Labels per bundle does not keep them all.
func TestFrozenDictsForgetCollectedLabels(t *testing.T) {
	keys := make([]weak.Pointer[array.Data], 100)
	for i := range keys {
		l := NewLabels([]string{"a", "b", "c"})
		keys[i] = weak.Make(l.dict.Data().(*array.Data))
	}
	registered := func() (n int) {
		for _, k := range keys {
			if _, ok := frozenDicts.Load(k); ok {
				n++
			}
		}
		return n
	}
	if n := registered(); n != len(keys) {
		t.Fatalf("%d of %d new Labels registered as frozen", n, len(keys))
	}
	deadline := time.Now().Add(5 * time.Second)
	for registered() > 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := registered(); n > 0 {
		t.Errorf("%d registrations of collected Labels remain", n)
	}
}

// TestHead8IgnoresBytesPastTheField: head8 of a field is its bytes
// zero-padded to 8, whatever follows the field in its buffer (the masked
// load) and when nothing does (the byte loop).
func TestHead8IgnoresBytesPastTheField(t *testing.T) {
	buf := []byte("Female,Male\xff\xff\xff\xff\xff\xff\xff\xff")
	for n := range 9 {
		var want uint64
		for i := range n {
			want |= uint64(buf[i]) << (8 * i)
		}
		if got := head8(buf[:n]); got != want {
			t.Errorf("head8 of %q followed by more bytes = %#x, want %#x", buf[:n], got, want)
		}
		if got := head8(buf[:n:n]); got != want {
			t.Errorf("head8 of %q alone = %#x, want %#x", buf[:n], got, want)
		}
		if got := head8(buf[4 : 4+n]); n <= len(buf)-4 {
			var w uint64
			for i := range n {
				w |= uint64(buf[4+i]) << (8 * i)
			}
			if got != w {
				t.Errorf("head8 of %q mid-buffer = %#x, want %#x", buf[4:4+n], got, w)
			}
		}
	}
}
