package table

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	xreader "github.com/xitongsys/parquet-go/reader"
	xsource "github.com/xitongsys/parquet-go/source"
)

// memFile is the in-memory source.ParquetFile the independent reader needs
// (parquet-go-source would pull ~260 modules into go.sum for one file type).
type memFile struct{ *bytes.Reader }

func (m memFile) Write([]byte) (int, error) { return 0, errors.New("read only") }
func (m memFile) Close() error              { return nil }
func (m memFile) Open(string) (xsource.ParquetFile, error) {
	return memFile{bytes.NewReader(m.bytes())}, nil
}
func (m memFile) Create(string) (xsource.ParquetFile, error) { return nil, errors.New("read only") }
func (m memFile) bytes() []byte {
	b := make([]byte, m.Size())
	m.ReadAt(b, 0)
	return b
}

// TestParquetIsReadByAnIndependentImplementation checks our Parquet files
// against github.com/xitongsys/parquet-go, which shares no code with Arrow:
// same values, same column order, several row groups, and our metadata in
// the file's key-value metadata.
func TestParquetIsReadByAnIndependentImplementation(t *testing.T) {
	const n = 200_000 // > DefaultBatchSize, so several row groups
	cols := []string{"sex", "code", "text"}
	rows := make([][]string, n)
	for i := range rows {
		rows[i] = []string{[]string{"Female", "Male"}[i%2], strconv.Itoa(i % 97), tricky[i%len(tricky)][1]}
	}
	p := filepath.Join(t.TempDir(), "x.parquet")
	schema := StringSchema(cols)
	w, err := Create(p, schema, Meta{"n": "200000"}, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bb := NewBatchBuilder(schema)
	for i, r := range rows {
		bb.AppendStrings(r)
		if bb.Rows() == DefaultBatchSize || i == n-1 {
			rec := bb.NewBatch()
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	pr, err := xreader.NewParquetColumnReader(memFile{bytes.NewReader(b)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.ReadStop()
	if got := pr.GetNumRows(); got != n {
		t.Fatalf("independent reader sees %d rows, want %d", got, n)
	}
	if len(pr.Footer.RowGroups) < 2 {
		t.Errorf("want several row groups, got %d", len(pr.Footer.RowGroups))
	}
	var sawMeta bool
	for _, kv := range pr.Footer.KeyValueMetadata {
		if kv.Key == MetaPrefix+"n" && kv.Value != nil && *kv.Value == "200000" {
			sawMeta = true
		}
	}
	if !sawMeta {
		t.Error("pramkit.n not in the file's key-value metadata")
	}
	for j, name := range cols {
		if got := pr.SchemaHandler.GetExName(j + 1); got != name {
			t.Errorf("column %d is %q, want %q", j, got, name)
		}
		vals, _, _, err := pr.ReadColumnByIndex(int64(j), n)
		if err != nil {
			t.Fatal(err)
		}
		if len(vals) != n {
			t.Fatalf("column %s: %d values", name, len(vals))
		}
		for i, v := range vals {
			if s, ok := v.(string); !ok || s != rows[i][j] {
				t.Fatalf("column %s row %d: independent reader has %v, want %q", name, i, v, rows[i][j])
			}
		}
	}
}

// FuzzCSVReader feeds arbitrary bytes to the CSV reader: it must return rows
// or an error naming the input, never panic, and every row it returns must
// have one value per header column.
func FuzzCSVReader(f *testing.F) {
	for _, s := range []string{
		"a,b\n1,2\n", "a\n", "", "a,b\n1\n", "\"a\nb\",c\n1,2\n", "#pramkit {\"pramkit\":1,\"meta\":{\"n\":\"2\"}}\na\n1\n",
		"\xef\xbb\xbfa,b\n\"x\"\"y\",z\n", "a,a\n1,2\n", "a,b\r\n1,2\r\n", "#pramkit nope\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if sniff(data) != CSV {
			return
		}
		r, err := Open("-", ReadOptions{Stdin: bytes.NewReader(data), BatchSize: 3})
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		defer r.Close()
		width := r.Schema().NumFields()
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				return
			}
			if int(rec.NumCols()) != width {
				t.Fatalf("%d columns, header has %d", rec.NumCols(), width)
			}
		}
	})
}
