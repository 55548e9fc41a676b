package table

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	xreader "github.com/xitongsys/parquet-go/reader"
)

// usedLabelsOnly returns rec with every dictionary column of strings whose
// dictionary page would exceed maxDictPage bytes replaced by the labels its
// rows use, in dictionary order, its indices renumbered: compactDict's
// result, computed with a map and a sort (no hash table of its own).
func usedLabelsOnly(t *testing.T, rec arrow.RecordBatch) arrow.RecordBatch {
	t.Helper()
	cols := make([]arrow.Array, rec.NumCols())
	for j, c := range rec.Columns() {
		cols[j] = c
		d, ok := c.(*array.Dictionary)
		if !ok {
			continue
		}
		labels := d.Dictionary().(*array.String)
		size := 0
		for i := range labels.Len() {
			size += 4 + len(labels.Value(i))
		}
		if size <= maxDictPage {
			continue
		}
		idx := d.Indices().(*array.Int32)
		seen := map[int32]bool{}
		for i, v := range idx.Int32Values() {
			if idx.IsValid(i) {
				seen[v] = true
			}
		}
		var used []int32
		for v := range seen {
			used = append(used, v)
		}
		slices.Sort(used)
		rank := map[int32]int32{}
		lb := array.NewStringBuilder(memory.DefaultAllocator)
		for r, v := range used {
			rank[v] = int32(r)
			lb.Append(labels.Value(int(v)))
		}
		ib := array.NewInt32Builder(memory.DefaultAllocator)
		for i, v := range idx.Int32Values() {
			if idx.IsValid(i) {
				ib.Append(rank[v])
			} else {
				ib.AppendNull()
			}
		}
		ld, ia := lb.NewArray(), ib.NewArray()
		cols[j] = array.NewDictionaryArray(d.DataType(), ia, ld)
		defer cols[j].Release()
		ld.Release()
		ia.Release()
		lb.Release()
		ib.Release()
	}
	return array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
}

// TestLargeDictionaryGoesOutAsTheRowGroupsLabels reproduces a 5× larger
// file: anonymize's output of a sensitive column of 1M distinct values
// (a 74 MB CSV) was 378 MB of Parquet, each of its 64 Ki-row row groups
// carrying all 1M labels in its dictionary page. A column over a
// dictionary of 300,000 labels, in row groups of 1000 rows, must come out
// with at most 1000 labels a row group's dictionary page — a file under
// 100 KB instead of the 3.3 MB a row group that the whole dictionary
// takes — read back as written, the nullable column's nulls too; with
// compactDict off, the same rows make the bloated file.
func TestLargeDictionaryGoesOutAsTheRowGroupsLabels(t *testing.T) {
	const k, n, group = 300_000, 3_017, 1000
	lb := array.NewStringBuilder(memory.DefaultAllocator)
	for i := range k {
		lb.Append(fmt.Sprintf("value-%06d", i))
	}
	labels := lb.NewArray()
	lb.Release()
	defer labels.Release()
	var cols []arrow.Array
	var fields []arrow.Field
	for _, nullable := range []bool{false, true} {
		ib := array.NewInt32Builder(memory.DefaultAllocator)
		for i := range n {
			if nullable && i%11 == 4 {
				ib.AppendNull()
				continue
			}
			ib.Append(int32(i * 7919 % k)) // spread over the dictionary
		}
		idx := ib.NewArray()
		ib.Release()
		cols = append(cols, array.NewDictionaryArray(DictType, idx, labels))
		idx.Release()
		f := DictField(fmt.Sprintf("s%v", nullable))
		f.Nullable = nullable
		fields = append(fields, f)
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, n)
	defer rec.Release()
	for _, c := range cols {
		c.Release()
	}
	var recs []arrow.RecordBatch
	for off := 0; off < n; off += group {
		recs = append(recs, rec.NewSlice(int64(off), int64(min(n, off+group))))
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for _, compact := range []bool{true, false} {
		t.Run(fmt.Sprintf("compact=%v", compact), func(t *testing.T) {
			defer func(old bool) { compactDicts = old }(compactDicts)
			compactDicts = compact
			buf := ownParquet(t, rec.Schema(), Meta{}, group, recs)
			if compact && buf.Len() > 100_000 || !compact && buf.Len() < 3_000_000 {
				t.Fatalf("compactDict %v: %d bytes", compact, buf.Len())
			}
			p := filepath.Join(t.TempDir(), "t.parquet")
			if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			readBackEquals(t, p, rec)
			if !compact {
				return
			}
			// The independent reader sees the labels too.
			pr, err := xreader.NewParquetColumnReader(memFile{bytes.NewReader(buf.Bytes())}, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer pr.ReadStop()
			vals, _, _, err := pr.ReadColumnByIndex(0, n)
			if err != nil || len(vals) != n {
				t.Fatalf("independent reader: %d values, %v", len(vals), err)
			}
			for i, v := range vals {
				if want := fmt.Sprintf("value-%06d", i*7919%k); v != want {
					t.Fatalf("row %d: independent reader has %v, want %q", i+1, v, want)
				}
			}
			pf, err := file.OpenParquetFile(p, false)
			if err != nil {
				t.Fatal(err)
			}
			defer pf.Close()
			for g := range pf.NumRowGroups() {
				for j := range len(fields) {
					cr, err := pf.RowGroup(g).GetColumnPageReader(j)
					if err != nil {
						t.Fatal(err)
					}
					if !cr.Next() {
						t.Fatalf("row group %d column %d: no page (%v)", g, j, cr.Err())
					}
					dp, ok := cr.Page().(*file.DictionaryPage)
					if !ok {
						t.Fatalf("row group %d column %d: first page %T, want a dictionary page", g, j, cr.Page())
					}
					if rows := pf.RowGroup(g).NumRows(); int64(dp.NumValues()) > rows {
						t.Errorf("row group %d column %d: %d labels in the dictionary page for %d rows", g, j, dp.NumValues(), rows)
					}
				}
			}
		})
	}
}

// TestLargeMetadataIsStoredOnce: a Parquet file's pramkit metadata past
// storedSchemaMeta bytes (a release's codebook of many labels) is stored
// once, in the key-value metadata, and the stored Arrow schema
// (ARROW:schema) keeps the fields only; small metadata is in both, as
// pqarrow stores it. Either way the file reads back with its metadata and
// its dictionary column.
func TestLargeMetadataIsStoredOnce(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{DictField("s")}, nil)
	labels := NewLabels([]string{"a", "b"})
	for _, size := range []int{100, storedSchemaMeta + 1} {
		meta := Meta{"codebook": strings.Repeat("x", size)}
		p := filepath.Join(t.TempDir(), "t.parquet")
		w, err := Create(p, schema, meta, WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rec := CodesBatch(schema, [][]uint32{{0, 1, 1}}, []*Labels{labels}, 3)
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		pf, err := file.OpenParquetFile(p, false)
		if err != nil {
			t.Fatal(err)
		}
		kv := pf.MetaData().KeyValueMetadata()
		stored := kv.FindValue("ARROW:schema")
		inKV := kv.FindValue(MetaPrefix + "codebook")
		pf.Close()
		if inKV == nil || *inKV != meta["codebook"] {
			t.Fatalf("%d bytes of metadata: not in the key-value metadata", size)
		}
		if stored == nil {
			t.Fatalf("no stored Arrow schema")
		}
		repeated := len(*stored) > size // base64 of the schema and the metadata
		if want := size <= storedSchemaMeta; repeated != want {
			t.Errorf("%d bytes of metadata: stored Arrow schema of %d bytes repeats it: %v, want %v", size, len(*stored), repeated, want)
		}
		r, err := Open(p, ReadOptions{DictColumns: []string{"s"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Meta()["codebook"]; got != meta["codebook"] {
			t.Errorf("%d bytes of metadata read back as %d", size, len(got))
		}
		if typ := r.Schema().Field(0).Type.ID(); typ != arrow.DICTIONARY {
			t.Errorf("column s read as %s, want a dictionary", r.Schema().Field(0).Type)
		}
		r.Close()
		if got := firstColumn(t, p); !slices.Equal(got, []string{"a", "b", "b"}) {
			t.Errorf("%d bytes of metadata: rows %v", size, got)
		}
	}
}

// TestScratchListKeepsItsValuesAcrossCollections: a value put back is
// handed out again after two collections (a sync.Pool drops it by then),
// and a full list drops what it cannot keep.
func TestScratchListKeepsItsValuesAcrossCollections(t *testing.T) {
	l := newScratchList[labelScratch]()
	s := l.get()
	s.dict = make([]byte, 0, 1<<20)
	l.put(s)
	runtime.GC()
	runtime.GC()
	if got := l.get(); got != s {
		t.Error("the scratch put back was not handed out again after two collections")
	}
	for range cap(l.free) + 3 {
		l.put(new(labelScratch))
	}
	if len(l.free) != cap(l.free) {
		t.Errorf("%d values kept, want %d", len(l.free), cap(l.free))
	}
}
