package table

import (
	"bufio"
	"bytes"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// decodeDigested decodes sidecar bytes b as Open does with
// ReadOptions.DigestMeta keys: through the digester (on, when it is sure)
// or whole, then digestItems.
func decodeDigested(b []byte, keys []string, on bool) (sidecar, error) {
	digested := false
	if on {
		d := &sidecarDigester{r: bufio.NewReader(bytes.NewReader(b)), keys: keys}
		if out, err := d.run(); err == nil {
			b, digested = out, true
		}
	}
	s, err := decodeSidecarFull(b, false)
	if err == nil {
		digestItems(s.Meta, keys, digested)
	}
	return s, err
}

// longItem is a codebook-like item of more than 64 KiB with escapes and
// multi-byte UTF-8, as JSON string content.
var longItem = strings.Repeat(`{\"name\": \"é\u00e9<&\\/x\", \"n\": [1, 2]}\n`, 2000)

// FuzzSidecarDigestingIsDecodingWhole: a sidecar read through the
// digester gives the metadata (the named items as digests) and the data
// digest that decoding it whole and digesting those items gives, or the
// same error, whatever the bytes.
//
//	go test -fuzz FuzzSidecarDigestingIsDecodingWhole ./pkg/table
func FuzzSidecarDigestingIsDecodingWhole(f *testing.F) {
	for _, s := range []string{
		`{"pramkit":1,"meta":{"codebook":"` + longItem + `","stage":"decrypt"},"data":{"bytes":3,"sha256":"ab"}}`,
		`{"pramkit":1,"meta":{"stage":"x","codebook":"{\"a\":1}"}}`,
		`{"pramkit":1,"meta":{"codebook":"` + longItem + `\ud800"}}`,
		`{"pramkit":1,"meta":{"codebook":"` + longItem + "\xff" + `"}}`,
		`{"pramkit":1,"META":{"codebook":"abc"}}`,
		`{"pramkit":1,"m\u0065ta":{"codebook":"abc"}}`,
		`{"pramkit":1,"meta":{"c\u006fdebook":"abc"}}`,
		`{"pramkit":1,"meta":{"codebook":"a"},"meta":{"codebook":"b"}}`,
		`{"pramkit":1,"meta":{"codebook":"a","codebook":"b"}}`,
		`{"pramkit":1,"meta":{"codebook":null}}`,
		`{"pramkit":1,"meta":{"codebook":["x"]}}`,
		`{"pramkit":1,"data":{"bytes":1},"meta":{"x":{"codebook":"y"},"codebook":"z"}}`,
		// Long items with no ASCII byte but escapes, and no escape.
		`{"pramkit":1,"meta":{"codebook":"` + strings.Repeat(`
"é`, 8000) + `"}}`,
		`{"pramkit":1,"meta":{"codebook":"` + strings.Repeat("é漢", 14000) + `"}}`,
	} {
		f.Add([]byte(s))
	}
	keys := []string{"codebook"}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gerr := decodeDigested(b, keys, true)
		want, werr := decodeDigested(b, keys, false)
		if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
			t.Fatalf("through the digester: %v; whole: %v", gerr, werr)
		}
		if gerr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("through the digester: %+v; whole: %+v", got, want)
		}
	})
}

// TestDigestMetaReadsTheItemAPieceAtATime: Open with DigestMeta gives a
// CSV release's codebook item as its digest, the same as MetaDigest of the
// text a plain Open gives, for CSV, Parquet and Arrow; for a CSV file the
// sidecar's 8 MB item is never held (what Open allocates stays far below
// it).
func TestDigestMetaReadsTheItemAPieceAtATime(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("é<&\u2028\"x\\", 1<<20) // ~9 MB once escaped
	for _, ext := range []string{"csv", "parquet", "arrow"} {
		p := filepath.Join(dir, "t."+ext)
		writeRows(t, p, []string{"a"}, [][]string{{"x"}}, Meta{"codebook": big, "stage": "decrypt"}, WriteOptions{})
		plain, err := Open(p, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := MetaDigest(plain.Meta()["codebook"])
		plain.Close()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r, err := Open(p, ReadOptions{DigestMeta: []string{"codebook", "absent"}})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Meta()["codebook"]; got != want || r.Meta()["stage"] != "decrypt" {
			t.Errorf("%s: codebook %q, stage %q; want %q, decrypt", ext, got, r.Meta()["stage"], want)
		}
		if _, ok := r.Meta()["absent"]; ok {
			t.Errorf("%s: an absent item appears", ext)
		}
		if n, err := drainErr(r); err != nil || n != 1 {
			t.Errorf("%s: reading the rows: %d, %v", ext, n, err)
		}
		r.Close()
		if alloc := after.TotalAlloc - before.TotalAlloc; ext == "csv" && alloc > 4<<20 {
			t.Errorf("csv: Open allocated %d bytes for a sidecar of %d", alloc, len(big))
		}
	}
}

// TestDigestMetaOfAReusedSidecar: a reader that reuses another's sidecar
// (SidecarOf) gives a DigestMeta item as its digest whether or not the
// first reader had read it as one — an item whose text reads like a
// digest (an edit that writes the digest of the codebook it should hold)
// is hashed, not taken for what it claims — and does not hash a digest
// twice.
func TestDigestMetaOfAReusedSidecar(t *testing.T) {
	p := filepath.Join(t.TempDir(), "g.csv")
	claim := MetaDigest(`{"columns": []}`)
	writeRows(t, p, []string{"x"}, [][]string{{"1"}}, Meta{"codebook": claim, "stage": "s"}, WriteOptions{})
	digest := []string{"codebook"}
	for _, first := range []ReadOptions{{}, {DigestMeta: digest}} {
		r1, err := Open(p, first)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := Open(p, ReadOptions{SidecarOf: r1, DigestMeta: digest})
		if err != nil {
			t.Fatal(err)
		}
		r3, err := Open(p, ReadOptions{SidecarOf: r2, DigestMeta: digest})
		if err != nil {
			t.Fatal(err)
		}
		want := MetaDigest(claim)
		for i, r := range []Reader{r2, r3} {
			if got := r.Meta()["codebook"]; got != want {
				t.Errorf("first read with %v, reader %d: item %q, want the digest of the text %q", first.DigestMeta, i+2, got, want)
			}
		}
		r1.Close()
		r2.Close()
		r3.Close()
	}
}

// TestDigesterHoldsAPieceOfAnyItem: the digester hashes a long item a
// piece at a time whatever its bytes — escapes only, non-ASCII text only —
// holding at most 64 KiB and a token of it, and gives the digest of the
// decoded text. It had cut only before an ASCII byte, searching the whole
// buffer again after every byte: a string of 512 KiB of "\n" escapes
// took 27 s (a crafted sidecar hung estimate --query and report).
func TestDigesterHoldsAPieceOfAnyItem(t *testing.T) {
	for _, tc := range []struct{ name, raw, text string }{
		{"escapes", `\n`, "\n"},
		{"quote escapes", `\"`, `"`},
		{"unicode escapes", `\u00e9`, "é"},
		{"two-byte UTF-8", "é", "é"},
		{"three-byte UTF-8", "漢", "漢"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := (256 << 10) / len(tc.raw)
			b := []byte(`{"pramkit":1,"meta":{"codebook":"` + strings.Repeat(tc.raw, n) + `"}}`)
			d := &sidecarDigester{r: bufio.NewReader(bytes.NewReader(b)), keys: []string{"codebook"}}
			out, err := d.run()
			if err != nil {
				t.Fatal(err)
			}
			want := `{"pramkit":1,"meta":{"codebook":"` + MetaDigest(strings.Repeat(tc.text, n)) + `"}}`
			if string(out) != want {
				t.Errorf("gave %.120s, want %.120s", out, want)
			}
			if c := cap(d.raw); c > 128<<10 {
				t.Errorf("held %d bytes of a %d-byte item", c, len(tc.raw)*n)
			}
		})
	}
}
