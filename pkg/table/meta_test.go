package table

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// spacedJSON is a json.Marshaler whose output has layout and characters
// that json.Marshal rewrites.
type spacedJSON string

func (s spacedJSON) MarshalJSON() ([]byte, error) { return []byte(s), nil }

// TestSetJSONOfAMarshalerIsJSONMarshal: SetJSON stores a Marshaler's
// output exactly as json.Marshal writes it — compacted, with '<', '>',
// '&', U+2028 and U+2029 escaped — though it copies it once.
func TestSetJSONOfAMarshalerIsJSONMarshal(t *testing.T) {
	for _, src := range []string{
		`{"columns": [` + "\n  " + `{"name": "age", "labels": ["<25", "25-34", ">=65"]}` + "\n]}",
		`{"a": "x & y", "b": ["\u2028", "\u2029", "\"q\""], "c": 1.5e3}`,
		`["plain", "ascii"]`,
		`""`,
	} {
		want, err := json.Marshal(spacedJSON(src))
		if err != nil {
			t.Fatal(err)
		}
		m := Meta{}
		if err := m.SetJSON("k", spacedJSON(src)); err != nil {
			t.Fatal(err)
		}
		if m["k"] != string(want) {
			t.Errorf("SetJSON of %q:\n got %s\nwant %s", src, m["k"], want)
		}
	}
	if err := (Meta{}).SetJSON("k", spacedJSON(`{"a": }`)); err == nil {
		t.Error("SetJSON accepted a Marshaler's invalid JSON")
	}
}

// TestParquetMetaIsTheReadersOnly: once a Parquet file is open, its
// pramkit items live in the reader's Meta alone, not also in the parsed
// footer that the reader keeps (forgetFooterMeta), so a caller that
// deletes a decoded item (decrypt, a key file's codebook) frees it; other
// tools' items stay in the footer, and a reopened reader still has every
// item.
func TestParquetMetaIsTheReadersOnly(t *testing.T) {
	cols, rows := []string{"a"}, [][]string{{"x"}, {"y"}}
	p := filepath.Join(t.TempDir(), "m.parquet")
	meta := Meta{"n": "2", "codebook": strings.Repeat("c", 1000)}
	w, err := Create(p, StringSchema(cols), meta, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bb := NewBatchBuilder(StringSchema(cols))
	for _, r := range rows {
		bb.AppendStrings(r)
	}
	if err := w.Write(bb.NewBatch()); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(p, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !reflect.DeepEqual(r.Meta(), meta) {
		t.Fatalf("Meta = %v, want %v", r.Meta(), meta)
	}
	var others int
	for _, e := range r.(*parquetReader).pf.MetaData().KeyValueMetadata() {
		if _, ours := metaKey(e.GetKey()); ours && e.Value != nil {
			t.Errorf("the footer still holds %s", e.GetKey())
		} else if !ours && e.Value != nil {
			others++ // ARROW:schema
		}
	}
	if others == 0 {
		t.Error("the footer lost the other tools' items")
	}
	q, err := ParquetReopen(r, ReadOptions{})
	if err != nil || q == nil {
		t.Fatalf("reopen: %v, %v", q, err)
	}
	defer q.Close()
	if !reflect.DeepEqual(q.Meta(), meta) {
		t.Errorf("reopened Meta = %v, want %v", q.Meta(), meta)
	}
}
