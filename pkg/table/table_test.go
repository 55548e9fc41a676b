package table

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// tricky holds values that break naive CSV and type inference.
var tricky = [][]string{
	{"007", "a,b", "Female"},
	{"A", `say "hi"`, "Male"},
	{"", "line\nbreak", "Female"},
	{"ünï", " padded ", "?"},
}

var trickyCols = []string{"id", "text", "sex"}

func writeRows(t *testing.T, path string, cols []string, rows [][]string, meta Meta, opt WriteOptions) {
	t.Helper()
	writeRowsThen(t, path, cols, rows, meta, opt, func() {})
}

// writeRowsThen is writeRows that calls beforeCommit just before Commit.
func writeRowsThen(t *testing.T, path string, cols []string, rows [][]string, meta Meta, opt WriteOptions, beforeCommit func()) {
	t.Helper()
	schema := StringSchema(cols)
	w, err := Create(path, schema, meta, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	bb := NewBatchBuilder(schema)
	defer bb.Release()
	for _, r := range rows {
		bb.AppendStrings(r)
	}
	rec := bb.NewBatch()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	beforeCommit()
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, path string, opt ReadOptions) ([]string, [][]string, Meta, Format) {
	t.Helper()
	r, err := Open(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var cols []string
	for _, f := range r.Schema().Fields() {
		cols = append(cols, f.Name)
	}
	var rows [][]string
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]Values, rec.NumCols())
		for j := range vals {
			vals[j] = ValuesOf(rec.Column(j))
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]string, len(vals))
			for j := range vals {
				row[j] = strings.Clone(vals[j].String(i))
			}
			rows = append(rows, row)
		}
	}
	return cols, rows, r.Meta(), r.Format()
}

func TestRoundTripsKeepValuesOrderAndMetadata(t *testing.T) {
	dir := t.TempDir()
	meta := Meta{"n": "32561", "m": "2057", "fingerprint": "ab12", "codebook": `{"x":[1,2]}`}
	src := filepath.Join(dir, "src.csv")
	writeRows(t, src, trickyCols, tricky, meta, WriteOptions{})
	chain := []string{"a.parquet", "b.arrow", "c.csv", "d.parquet", "e.csv"}
	prev := src
	for _, name := range chain {
		cols, rows, m, _ := readAll(t, prev, ReadOptions{BatchSize: 3})
		next := filepath.Join(dir, name)
		writeRows(t, next, cols, rows, m, WriteOptions{})
		gotCols, gotRows, gotMeta, format := readAll(t, next, ReadOptions{BatchSize: 2})
		if format != FormatFromPath(name) {
			t.Errorf("%s: detected %v", name, format)
		}
		if !reflect.DeepEqual(gotCols, trickyCols) {
			t.Errorf("%s: columns %v, want %v", name, gotCols, trickyCols)
		}
		if !reflect.DeepEqual(gotRows, tricky) {
			t.Errorf("%s: rows %q, want %q", name, gotRows, tricky)
		}
		if !reflect.DeepEqual(gotMeta, meta) {
			t.Errorf("%s: metadata %v, want %v", name, gotMeta, meta)
		}
		prev = next
	}
}

func TestStreamsCarryMetadataThroughStdio(t *testing.T) {
	meta := Meta{"n": "10", "mechanism": "gamma-diagonal"}
	for _, f := range []Format{CSV, Parquet, Arrow} {
		var out bytes.Buffer
		writeRows(t, "-", trickyCols, tricky, meta, WriteOptions{Format: f, Stdout: &out})
		cols, rows, m, got := readAll(t, "-", ReadOptions{Stdin: bytes.NewReader(out.Bytes())})
		if got != f || !reflect.DeepEqual(cols, trickyCols) || !reflect.DeepEqual(rows, tricky) || !reflect.DeepEqual(m, meta) {
			t.Errorf("%v via stdio: format %v cols %v rows %q meta %v", f, got, cols, rows, m)
		}
	}
}

func TestCSVWithoutMetadataHasNoMetaLine(t *testing.T) {
	var out bytes.Buffer
	writeRows(t, "-", []string{"a"}, [][]string{{"1"}}, nil, WriteOptions{Format: CSV, Stdout: &out})
	if out.String() != "a\n1\n" {
		t.Errorf("got %q", out.String())
	}
}

func TestBadInputIsRefusedWithLocation(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, content, want string
	}{
		{"empty", "", "empty"},
		{"ragged", "a,b\n1,2\n3\n", "line 3 (row 2)"},
		{"bad quote", "a,b\n1,\"x\"y\n", "line 2"},
		{"duplicate column", "a,b,a\n1,2,3\n", `both named "a"`},
		{"unnamed column", "a,,c\n1,2,3\n", "column 2 of the header row has no name"},
		{"corrupt parquet", "PAR1 this is not parquet at all PAR1", "not a readable Parquet"},
		{"truncated arrow", "\xff\xff\xff\xff\x10\x00\x00\x00abc", "Arrow"},
		{"bad meta line", "#pramkit {nope\na\n1\n", "metadata line"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
			os.WriteFile(p, []byte(c.content), 0o644)
			r, err := Open(p, ReadOptions{})
			for err == nil {
				_, err = r.Next()
				if errors.Is(err, io.EOF) {
					t.Fatalf("read %q without error", c.content)
				}
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not name the file and %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func TestTruncatedParquetIsDetected(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.parquet")
	rows := make([][]string, 1000)
	for i := range rows {
		rows[i] = []string{strings.Repeat("x", i%7)}
	}
	writeRows(t, p, []string{"a"}, rows, nil, WriteOptions{})
	b, _ := os.ReadFile(p)
	os.WriteFile(p, b[:len(b)/2], 0o644)
	if _, err := Open(p, ReadOptions{}); err == nil {
		t.Fatal("opened a truncated Parquet file")
	}
}

func TestFailedWriteLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.csv")
	w, err := Create(p, StringSchema([]string{"a"}), Meta{"n": "1"}, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bb := NewBatchBuilder(StringSchema([]string{"a"}))
	bb.AppendStrings([]string{"x"})
	rec := bb.NewBatch()
	w.Write(rec)
	w.Abort()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("abort left %v", entries)
	}
}

func TestOutputThatIsAnInputIsRefused(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "in.csv")
	os.WriteFile(p, []byte("a\n1\n"), 0o644)
	_, err := Create(p, StringSchema([]string{"a"}), nil, WriteOptions{Inputs: []string{p}})
	if err == nil || !strings.Contains(err.Error(), "also an input") {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "a\n1\n" {
		t.Error("the input was changed")
	}
}

func TestNoClobberKeepsExistingFileAndPermsAreOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "k.parquet")
	writeRows(t, p, []string{"a"}, [][]string{{"1"}}, nil, WriteOptions{Perm: 0o600, NoClobber: true})
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	_, err := Create(p, StringSchema([]string{"a"}), nil, WriteOptions{NoClobber: true})
	if err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("err = %v", err)
	}
}

func TestStaleSidecarIsRemoved(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.csv")
	writeRows(t, p, []string{"a"}, [][]string{{"1"}}, Meta{"n": "1"}, WriteOptions{})
	if _, err := os.Stat(p + ".meta.json"); err != nil {
		t.Fatal("no sidecar written")
	}
	writeRows(t, p, []string{"a"}, [][]string{{"1"}}, nil, WriteOptions{})
	if _, err := os.Stat(p + ".meta.json"); !os.IsNotExist(err) {
		t.Error("stale sidecar kept")
	}
}

func TestValuesReadIntegersAndStrings(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int32}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	bb := NewBatchBuilder(schema)
	bb.Int32(0, 42)
	bb.String(1, "17")
	bb.EndRow()
	rec := bb.NewBatch()
	if v, ok := ValuesOf(rec.Column(0)).Int(0); !ok || v != 42 {
		t.Error("int32 column")
	}
	if v, ok := ValuesOf(rec.Column(1)).Int(0); !ok || v != 17 {
		t.Error("string column of digits")
	}
	if s := ValuesOf(rec.Column(0)).String(0); s != "42" {
		t.Error("int32 as string")
	}
}

func TestEmptyValueInASingleColumnSurvives(t *testing.T) {
	p := filepath.Join(t.TempDir(), "one.csv")
	rows := [][]string{{"a"}, {""}, {"b"}, {""}}
	writeRows(t, p, []string{"x"}, rows, nil, WriteOptions{})
	_, got, _, _ := readAll(t, p, ReadOptions{})
	if !reflect.DeepEqual(got, rows) {
		t.Fatalf("rows %q, want %q", got, rows)
	}
}
