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
)

// project is rows reduced to the columns idx.
func project(rows [][]string, idx ...int) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		for _, j := range idx {
			out[i] = append(out[i], r[j])
		}
	}
	return out
}

// TestColumnsReadOnlyTheSelectedColumns: ReadOptions.Columns gives exactly
// the selected columns' values, in the file's order, in every format (CSV
// with quotes, commas and embedded newlines, at several chunk sizes;
// Parquet; Arrow file and stream).
func TestColumnsReadOnlyTheSelectedColumns(t *testing.T) {
	dir := t.TempDir()
	meta := Meta{"n": "4"}
	files := map[string]string{}
	for _, name := range []string{"t.csv", "t.parquet", "t.arrow"} {
		files[name] = filepath.Join(dir, name)
		writeRows(t, files[name], trickyCols, tricky, meta, WriteOptions{})
	}
	var stream bytes.Buffer
	writeRows(t, "-", trickyCols, tricky, meta, WriteOptions{Format: Arrow, Stdout: &stream})
	cases := []struct {
		sel      []string
		wantCols []string
		wantRows [][]string
	}{
		{[]string{"sex"}, []string{"sex"}, project(tricky, 2)},
		{[]string{"text"}, []string{"text"}, project(tricky, 1)},
		{[]string{"sex", "id"}, []string{"id", "sex"}, project(tricky, 0, 2)},
		{[]string{"sex", "sex", "text"}, []string{"text", "sex"}, project(tricky, 1, 2)},
		{[]string{"sex", "text", "id"}, trickyCols, tricky},
		{nil, trickyCols, tricky},
	}
	for _, c := range cases {
		for name, path := range files {
			for _, cb := range []int{1, 13, 0} {
				withChunkBytes(t, cb, func() {
					cols, rows, m, _ := readAll(t, path, ReadOptions{Columns: c.sel, BatchSize: 3})
					if !reflect.DeepEqual(cols, c.wantCols) || !reflect.DeepEqual(rows, c.wantRows) || !reflect.DeepEqual(m, meta) {
						t.Errorf("%s %v (chunks %d): cols %v rows %q meta %v; want %v %q", name, c.sel, cb, cols, rows, m, c.wantCols, c.wantRows)
					}
				})
			}
		}
		cols, rows, _, _ := readAll(t, "-", ReadOptions{Columns: c.sel, Stdin: bytes.NewReader(stream.Bytes())})
		if !reflect.DeepEqual(cols, c.wantCols) || !reflect.DeepEqual(rows, c.wantRows) {
			t.Errorf("arrow stream %v: cols %v rows %q", c.sel, cols, rows)
		}
	}
}

// TestColumnsUnknownNameIsRefused: a name the table lacks is the one-line
// error the stages give for an unknown column.
func TestColumnsUnknownNameIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"t.csv", "t.parquet", "t.arrow"} {
		p := filepath.Join(dir, name)
		writeRows(t, p, trickyCols, tricky, nil, WriteOptions{})
		_, err := Open(p, ReadOptions{Columns: []string{"sex", "nope"}})
		want := p + ` has no column "nope" (columns: id, text, sex)`
		var ce *ColumnError
		if err == nil || err.Error() != want || !errors.As(err, &ce) || ce.Column != "nope" {
			t.Errorf("%s: err = %v, want %s", name, err, want)
		}
	}
}

// readProjected reads path whole with columns sel and returns the error.
func readProjected(path string, sel []string) error {
	r, err := Open(path, ReadOptions{Columns: sel})
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// TestColumnsStillRefuseMalformedCSV: the fields of unselected columns are
// checked as before: a bad quote or a wrong field count there is refused
// with the same error as without a projection.
func TestColumnsStillRefuseMalformedCSV(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"bare quote":    "a,b,c\n1,2,3\n4,x\"y,6\n",
		"quote":         "a,b,c\n1,2,3\n4,\"x\"y,6\n",
		"short row":     "a,b,c\n1,2,3\n4,5\n",
		"long row":      "a,b,c\n1,2,3\n4,5,6,7\n",
		"open quote":    "a,b,c\n1,2,3\n4,\"5,6\n",
		"quoted inside": "a,b,c\n1,\"2\n2\",3\n4,5\"\",6\n",
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".csv")
		os.WriteFile(p, []byte(content), 0o644)
		whole := readProjected(p, nil)
		if whole == nil {
			t.Fatalf("%s: read whole without error", name)
		}
		for _, sel := range [][]string{{"a"}, {"c"}, {"a", "c"}} {
			if err := readProjected(p, sel); err == nil || err.Error() != whole.Error() {
				t.Errorf("%s, columns %v: err = %v, want %v", name, sel, err, whole)
			}
		}
	}
}

// TestColumnsKeepTheSidecarBinding: a projected read of a CSV file still
// checks the whole file against its sidecar's digest: the pair reads, and
// an edit confined to an unselected column is refused.
func TestColumnsKeepTheSidecarBinding(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.csv")
	writeRows(t, p, []string{"a", "b"}, [][]string{{"x", "1"}, {"y", "2"}}, Meta{"run": "r"}, WriteOptions{})
	side, _ := os.ReadFile(p + ".meta.json")
	if err := readProjected(p, []string{"a"}); err != nil {
		t.Fatalf("the pair: %v", err)
	}
	data, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(data, []byte("2"), []byte("3"), 1), 0o644)
	if err := readProjected(p, []string{"a"}); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("edited column b, reading a: err = %v", err)
	}
	if after, _ := os.ReadFile(p + ".meta.json"); !bytes.Equal(after, side) {
		t.Errorf("reading changed the sidecar")
	}
}
