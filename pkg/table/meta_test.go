package table

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
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

// TestWriteBoundSidecarIsJSONMarshal: the sidecar written a piece at a
// time is json.Marshal's bytes and a newline, whatever the strings hold
// (invalid UTF-8, runes of two to four bytes, '<', '>', '&', U+2028,
// U+2029, quotes, control bytes) and wherever the pieces' cuts fall —
// also with items deferred, given in pieces of their own (stringPieces).
func TestWriteBoundSidecarIsJSONMarshal(t *testing.T) {
	defer func(n int) { sidecarPiece = n }(sidecarPiece)
	r := rand.New(rand.NewPCG(5, 6))
	atoms := []string{"a", "é", "€", "😀", "\u2028", "\u2029", "<", ">", "&", `"`, `\`, "\n", "\x01", "\xff", "\xe2\x82", "\xf0\x9f\x98", "\x80", " "}
	str := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(atoms[r.IntN(len(atoms))])
		}
		return b.String()
	}
	d := dataDigest{Bytes: 123, SHA256: strings.Repeat("ab", 32)}
	for _, piece := range []int{utf8.UTFMax, 5, 7, 16, 64 << 10} {
		sidecarPiece = piece
		for range 50 {
			m := Meta{}
			for range 1 + r.IntN(4) {
				m[str(r.IntN(4))] = str(r.IntN(200))
			}
			for _, meta := range []Meta{m, nil} {
				want, err := json.Marshal(sidecar{Pramkit: 1, Meta: meta, Data: &d})
				if err != nil {
					t.Fatal(err)
				}
				var got bytes.Buffer
				if err := writeBoundSidecar(&got, meta, nil, d); err != nil {
					t.Fatal(err)
				}
				if got.String() != string(want)+"\n" {
					t.Fatalf("piece %d, meta %q:\n got %q\nwant %q", piece, meta, got.String(), want)
				}
				if meta == nil {
					continue
				}
				// The same items, some deferred and given in pieces of 1
				// to 13 bytes (cutting runes).
				rest, later := Meta{}, []Deferred(nil)
				for k, v := range meta {
					if r.IntN(2) == 0 {
						rest[k] = v
						continue
					}
					later = append(later, Deferred{Key: k, Write: writeInPieces(v, cutsOf(r.Uint64(), 13, 7))})
				}
				got.Reset()
				if err := writeBoundSidecar(&got, rest, later, d); err != nil {
					t.Fatal(err)
				}
				if got.String() != string(want)+"\n" {
					t.Fatalf("piece %d, meta %q, %d items deferred:\n got %q\nwant %q", piece, meta, len(later), got.String(), want)
				}
			}
		}
	}
}

// FuzzSidecarPiecesAreJSONMarshal: an item deferred and given in pieces
// of any sizes (cut from the seed) is written into a sidecar as
// json.Marshal writes it, at small and usual sidecar pieces.
func FuzzSidecarPiecesAreJSONMarshal(f *testing.F) {
	f.Add("a\u00e9\u2028<\"\\\xff\xe2\x82x", uint64(12345), uint8(0))
	f.Add(strings.Repeat("\U0001F600\x80", 40), uint64(7), uint8(1))
	f.Fuzz(func(t *testing.T, v string, cuts uint64, small uint8) {
		defer func(n int) { sidecarPiece = n }(sidecarPiece)
		sidecarPiece = []int{utf8.UTFMax, 5, 64 << 10}[int(small)%3]
		d := dataDigest{Bytes: 1, SHA256: "ab"}
		meta := Meta{"a": "x", "codebook": v, "z": "y"}
		want, err := json.Marshal(sidecar{Pramkit: 1, Meta: meta, Data: &d})
		if err != nil {
			t.Fatal(err)
		}
		item := Deferred{Key: "codebook", Write: writeInPieces(v, cutsOf(cuts, 17, 3))}
		var got bytes.Buffer
		if err := writeBoundSidecar(&got, Meta{"a": "x", "z": "y"}, []Deferred{item}, d); err != nil {
			t.Fatal(err)
		}
		if got.String() != string(want)+"\n" {
			t.Fatalf("piece %d:\n got %q\nwant %q", sidecarPiece, got.String(), want)
		}
	})
}
