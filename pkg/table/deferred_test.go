package table

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// TestDeferredItemsWriteTheSameFiles: a table written with items deferred
// is, byte for byte, the table written with them in Create's Meta — CSV
// (file and sidecar, and on standard output), Parquet and Arrow; small
// and large items (past storedSchemaMeta, where Parquet's stored schema
// drops the metadata), keys sorting before, between and after the other
// items, and a deferred item replacing meta's of its key; each given in
// pieces that cut its runes. Each is made when the format's metadata is
// written: never before Commit for a CSV file, and for a large Parquet
// item only measured at Create, then written for the footer.
func TestDeferredItemsWriteTheSameFiles(t *testing.T) {
	big := strings.Repeat(`{"é\"<x>`, storedSchemaMeta/6)
	base := Meta{"m": "1", "stage": "perturb", "codebook": "stale"}
	for _, tc := range []struct {
		name  string
		items map[string]string
	}{
		{"small", map[string]string{"codebook": `{"columns":[]}`}},
		{"large", map[string]string{"codebook": big}},
		{"large first, small last", map[string]string{"a": big, "z": "last"}},
		{"two large", map[string]string{"codebook": big, "n": big + "n"}},
	} {
		for _, ext := range []string{"csv", "parquet", "arrow", "stdout"} {
			t.Run(tc.name+"/"+ext, func(t *testing.T) {
				dir := t.TempDir()
				whole := base.Clone()
				for k, v := range tc.items {
					whole[k] = v
				}
				want := writeDeferred(t, dir, "want", ext, whole, nil)

				calls, early := map[string]int{}, map[string]int{}
				committed := false
				var d []Deferred
				for k, v := range tc.items {
					d = append(d, Deferred{Key: k, Write: func(emit func([]byte) error) error {
						calls[k]++
						if !committed {
							early[k]++
						}
						return emitInPieces(v, emit)
					}})
				}
				got := writeDeferredWith(t, dir, "got", ext, base, d, func() { committed = true })
				if len(got) != len(want) {
					t.Fatalf("%d files, want %d", len(got), len(want))
				}
				for i := range want {
					if !bytes.Equal(got[i], want[i]) {
						t.Errorf("file %d: %d bytes, with the items in Meta %d: not the same", i, len(got[i]), len(want[i]))
					}
				}
				for k, v := range tc.items {
					// Calls before Commit, and in all: measured and made at
					// Create for a format whose metadata comes first, or for
					// a small Parquet item; a large one measured there, then
					// written for the footer; a CSV file's written once for
					// its sidecar.
					wantEarly, wantAll := 2, 2
					switch {
					case ext == "csv":
						wantEarly, wantAll = 0, 1
					case ext == "parquet" && len(MetaPrefix)+len(k)+len(v) > storedSchemaMeta:
						wantEarly, wantAll = 1, 2
					}
					if early[k] != wantEarly || calls[k] != wantAll {
						t.Errorf("%s given %d times before Commit, %d in all; want %d, %d", k, early[k], calls[k], wantEarly, wantAll)
					}
				}
				if ext == "parquet" || ext == "csv" {
					r, err := Open(filepath.Join(dir, "got."+ext), ReadOptions{})
					if err != nil {
						t.Fatal(err)
					}
					defer r.Close()
					for k, v := range whole {
						if r.Meta()[k] != v {
							t.Errorf("read back %s = %.20q…, want %.20q…", k, r.Meta()[k], v)
						}
					}
				}
			})
		}
	}
}

func writeDeferred(t *testing.T, dir, name, ext string, meta Meta, d []Deferred) [][]byte {
	return writeDeferredWith(t, dir, name, ext, meta, d, func() {})
}

// writeDeferredWith writes two rows to dir/name.ext (to a buffer for
// "stdout"), calling beforeCommit just before Commit, and returns the
// files' bytes: the table, and a CSV file's sidecar.
func writeDeferredWith(t *testing.T, dir, name, ext string, meta Meta, d []Deferred, beforeCommit func()) [][]byte {
	t.Helper()
	path := filepath.Join(dir, name+"."+ext)
	var out bytes.Buffer
	opt := WriteOptions{Deferred: d}
	if ext == "stdout" {
		path, opt.Stdout, opt.Format = "-", &out, CSV
	}
	writeRowsThen(t, path, []string{"x", "y"}, [][]string{{"a", "1"}, {"b", "2"}}, meta, opt, beforeCommit)
	if ext == "stdout" {
		return [][]byte{out.Bytes()}
	}
	var files [][]byte
	for _, p := range []string{path, path + sidecarSuffix} {
		b, err := os.ReadFile(p)
		if err != nil {
			if ext == "csv" || p == path {
				t.Fatal(err)
			}
			continue
		}
		files = append(files, b)
	}
	return files
}

// TestKeyValuesWithPutsItemsInOrder: deferred items go where
// fileKeyValues would have put them: among the pramkit items in key
// order, after other tools' items, before ARROW:schema, each made from
// its Deferred.
func TestKeyValuesWithPutsItemsInOrder(t *testing.T) {
	for _, tc := range []struct {
		kv   []string
		d    []string
		want string
	}{
		{[]string{"ARROW:schema"}, []string{"b", "a"}, "pramkit.a pramkit.b ARROW:schema"},
		{[]string{"pandas", "ARROW:schema"}, []string{"a"}, "pandas pramkit.a ARROW:schema"},
		{[]string{"pandas", "pramkit.b", "pramkit.d", "ARROW:schema"}, []string{"e", "a", "c"}, "pandas pramkit.a pramkit.b pramkit.c pramkit.d pramkit.e ARROW:schema"},
		{[]string{"pramkit.b", "ARROW:schema"}, nil, "pramkit.b ARROW:schema"},
	} {
		in := metadataOf(tc.kv)
		var d []Deferred
		for _, k := range tc.d {
			d = append(d, Deferred{Key: k, Write: func(emit func([]byte) error) error { return emit([]byte("v" + k)) }})
		}
		var keys []string
		kv, later := keyValuesWith(in, lateItems{d: d, sizes: make([]int, len(d))})
		for _, e := range kv {
			keys = append(keys, e.GetKey())
		}
		for _, k := range tc.d {
			if later[MetaPrefix+k].Key != k {
				t.Errorf("%s: not made from its Deferred", k)
			}
		}
		if got := strings.Join(keys, " "); got != tc.want {
			t.Errorf("%v + %v: %s, want %s", tc.kv, tc.d, got, tc.want)
		}
	}
}

func metadataOf(keys []string) (kv metadata.KeyValueMetadata) {
	for _, k := range keys {
		kv.Append(k, fmt.Sprint("value of ", k))
	}
	return kv
}

// emitInPieces gives v to emit in pieces of 1 to 5 bytes, then of 4 KiB,
// cutting multi-byte runes.
func emitInPieces(v string, emit func([]byte) error) error {
	return writeInPieces(v, func(i int) int {
		if i > 40 {
			return 4 << 10
		}
		return 1 + i%5
	})(emit)
}

// writeInPieces is a Deferred's Write that gives v in pieces, the i-th
// of size(i) bytes (fewer at the end); size(0) starts each call.
func writeInPieces(v string, size func(i int) int) func(func([]byte) error) error {
	return func(emit func([]byte) error) error {
		b := []byte(v)
		for i := 0; len(b) > 0; i++ {
			n := min(size(i), len(b))
			if err := emit(b[:n]); err != nil {
				return err
			}
			b = b[n:]
		}
		return nil
	}
}

// cutsOf is a size for writeInPieces drawn from seed: 1 to mod bytes,
// the seed divided by mod and shifted by add after each piece.
func cutsOf(seed, mod, add uint64) func(i int) int {
	var c uint64
	return func(i int) int {
		if i == 0 {
			c = seed
		}
		n := 1 + int(c%mod)
		c = c/mod + add
		return n
	}
}
