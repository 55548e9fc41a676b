package table

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// keyKindByOpening is keyKind as it was before keypeek.go: every table at
// the path opened whole (peekMeta), every sidecar decoded whole.
func keyKindByOpening(path string) KeyKind {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return NotKey
	}
	if k := secretKind(path, st.Size()); k != NotKey {
		return k
	}
	if strings.HasSuffix(path, sidecarSuffix) {
		if b, err := os.ReadFile(path); err == nil {
			if s, err := decodeSidecarFull(b, false); err == nil && s.Meta["stage"] == StageKey {
				return KeySidecar
			}
		}
		return NotKey
	}
	if m, ok := peekMeta(path); ok && m["stage"] == StageKey {
		return KeyFile
	}
	return NotKey
}

// TestKeyKindReadsOnlyTheStage: judging a destination by its stage item
// alone (a Parquet footer walked, a sidecar decoded but for its stage)
// gives what opening the file whole gave, for tables of every format
// with and without pramkit metadata, large items, other stages, stages
// spelt oddly, sidecars with items that are not strings, and damaged
// files.
func TestKeyKindReadsOnlyTheStage(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("é<&\u2028x", 50_000)
	var paths []string
	for i, meta := range []Meta{
		{"stage": "key", "codebook": big},
		{"stage": "key"},
		{"codebook": big, "stage": "decrypt"},
		{"stage": "keys"},
		{"stage": "ke"},
		{"stage": big},
		{"n": "3"},
		{},
	} {
		for _, ext := range []string{"parquet", "csv", "arrow"} {
			p := filepath.Join(dir, "t"+string(rune('a'+i))+"."+ext)
			w, err := Create(p, StringSchema([]string{"a"}), meta, WriteOptions{RowGroupRows: 1})
			if err != nil {
				t.Fatal(err)
			}
			bb := NewBatchBuilder(StringSchema([]string{"a"}))
			for _, v := range []string{"x", "y", "z"} {
				bb.AppendStrings([]string{v})
			}
			if err := w.Write(bb.NewBatch()); err != nil {
				t.Fatal(err)
			}
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, p)
			if ext == "csv" && len(meta) > 0 {
				paths = append(paths, sidecarPath(p))
			}
			if ext == "parquet" && len(meta) > 0 {
				// The footer is walked, not left to Open.
				f, err := os.Open(p)
				if err != nil {
					t.Fatal(err)
				}
				stage, ours, err := parquetStage(f)
				f.Close()
				if want := meta["stage"]; err != nil || !ours || (stage != want && len(want) <= 64) {
					t.Errorf("%s: parquetStage = %q, %v, %v; want %q", filepath.Base(p), stage, ours, err, want)
				}
			}
			if ext == "arrow" && len(meta) > 0 {
				// The schema message is walked, and the same schema as
				// an Arrow IPC file's footer.
				fp := filepath.Join(dir, "f"+string(rune('a'+i))+".arrow")
				writeArrowFile(t, fp, metaSchema(StringSchema([]string{"a"}), meta))
				paths = append(paths, fp)
				for _, q := range []string{p, fp} {
					f, err := os.Open(q)
					if err != nil {
						t.Fatal(err)
					}
					stage, ours, err := arrowStage(f)
					f.Close()
					if want := meta["stage"]; err != nil || !ours || (stage != want && len(want) <= 64) {
						t.Errorf("%s: arrowStage = %q, %v, %v; want %q", filepath.Base(q), stage, ours, err, want)
					}
				}
			}
			if ext == "parquet" {
				// Damaged: cut in the footer, and with its end only.
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				for j, d := range [][]byte{b[:len(b)-20], b[len(b)-200:], append(b[:len(b)-9:len(b)-9], "XPAR1"...)} {
					q := filepath.Join(dir, "cut"+string(rune('a'+i))+string(rune('0'+j))+".parquet")
					if err := os.WriteFile(q, d, 0o600); err != nil {
						t.Fatal(err)
					}
					paths = append(paths, q)
				}
			}
		}
	}
	for i, side := range []string{
		`{"pramkit":1,"meta":{"stage":"key","n":3}}`,
		`{"pramkit":1,"meta":{"stage":"key","n":null}}`,
		`{"pramkit":1,"meta":{"stage":"\u006bey"}}`,
		`{"pramkit":1,"meta":{"Stage":"key"}}`,
		`{"pramkit":1,"meta":{"stage":"key","stage":"x"}}`,
		`{"pramkit":1,"meta":{"stage":"x","stage":"key"}}`,
		`{"pramkit":2,"meta":{"stage":"key"}}`,
		`{"pramkit":1,"meta":{"stage":"key"},"data":{"bytes":"x"}}`,
		`{"pramkit":1,"meta":{"stage":"key"}`,
		`{"pramkit":1,"meta":{"stage":"key","c":"` + strings.Repeat("a\\\"", 500) + `"}}`,
		`{"pramkit":1,"meta":null}`,
		`{"pramkit":1,"meta":{"c":"` + strings.Repeat("a\\\"\\u00e9", 700) + `","stage":"key"}}`,
		`{"pramkit":1,"meta":{"` + strings.Repeat("k", 5000) + `":"x","stage":"key"}}`,
		`{"pramkit":1,"meta":{"stage":"key","c":"` + strings.Repeat("a", 5000) + "\x01" + `"}}`,
		`{"pramkit":1,"meta":{"stage":"key","c":"` + strings.Repeat("a", 5000) + `\q"}}`,
		`{"pramkit":1,"meta":{"stage":"key","c":"` + strings.Repeat("a", 5000) + `\u12G4"}}`,
		`{"pramkit":1,"meta":{"stage":"key","c":"` + strings.Repeat("a", 5000) + `"}`,
	} {
		p := filepath.Join(dir, "s"+string(rune('a'+i))+".csv")
		if err := os.WriteFile(p, []byte("a\nx\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(sidecarPath(p), []byte(side), 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p, sidecarPath(p))
	}
	keys := 0
	for _, p := range paths {
		got, want := keyKind(p), keyKindByOpening(p)
		if got != want {
			t.Errorf("%s: %v, opened whole %v", filepath.Base(p), got, want)
		}
		if got != NotKey {
			keys++
		}
	}
	if keys < 8 {
		t.Errorf("only %d key files among the cases", keys)
	}
}

// FuzzSidecarStageOfIsUnmarshal: reading a sidecar's stage a piece at a
// time, its long strings stood in for (sidecarStageOf), gives what
// decoding it whole gives (sidecarStage), valid or not.
//
//	go test -fuzz FuzzSidecarStageOfIsUnmarshal ./pkg/table
func FuzzSidecarStageOfIsUnmarshal(f *testing.F) {
	long := strings.Repeat("ab\\\"\\u00e9\\n", 600)
	for _, s := range []string{
		`{"pramkit":1,"meta":{"stage":"key","codebook":"` + long + `"}}`,
		`{"pramkit":1,"meta":{"codebook":"` + long + `","stage":"decrypt"},"data":{"rows":3}}`,
		`{"pramkit":1,"meta":{"` + long + `":"x","stage":"key"}}`,
		`{"pramkit":1,"` + long + `":{"stage":"x"},"meta":{"stage":"key"}}`,
		`{"pramkit":"` + long + `","meta":{"stage":"key"}}`,
		`{"pramkit":1,"meta":{"stage":"` + long + `"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		gs, gok := sidecarStageOf(bytes.NewReader(b))
		ws, wok := sidecarStage(b)
		if gs != ws || gok != wok {
			t.Errorf("a piece at a time %q, %v; whole %q, %v", gs, gok, ws, wok)
		}
	})
}

// writeArrowFile writes an Arrow IPC file of schema s (arrow-go's file
// writer) with one row.
func writeArrowFile(t testing.TB, path string, s *arrow.Schema) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(s))
	if err != nil {
		t.Fatal(err)
	}
	bb := NewBatchBuilder(s)
	bb.AppendStrings([]string{"x"})
	rec := bb.NewBatch()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// metaSchema is s with meta stored as pramkit items.
func metaSchema(s *arrow.Schema, meta Meta) *arrow.Schema {
	var keys, values []string
	for k, v := range meta {
		keys, values = append(keys, MetaPrefix+k), append(values, v)
	}
	md := arrow.NewMetadata(keys, values)
	return arrow.NewSchema(s.Fields(), &md)
}

// FuzzArrowKeyKindIsOpeningWhole is FuzzKeyKindIsOpeningWhole for Arrow
// IPC streams (pramkit's writer) and files (arrow-go's): the schema's
// flatbuffers are walked by offsets read from the file, checked, never
// trusted.
//
//	go test -fuzz FuzzArrowKeyKindIsOpeningWhole ./pkg/table
func FuzzArrowKeyKindIsOpeningWhole(f *testing.F) {
	dir := f.TempDir()
	for i, meta := range []Meta{{"stage": "key", "codebook": "abc"}, {"stage": "decrypt", "n": "1"}, {}} {
		f.Add(writeOneRow(f, filepath.Join(dir, "seed"+string(rune('a'+i))+".arrow"), meta))
		fp := filepath.Join(dir, "file"+string(rune('a'+i))+".arrow")
		writeArrowFile(f, fp, metaSchema(StringSchema([]string{"a"}), meta))
		b, err := os.ReadFile(fp)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	fuzzKeyKind(f, "arrow")
}

// writeOneRow writes a table of column a, one row "x", and meta at p (its
// format from its name), and returns the file's bytes.
func writeOneRow(tb testing.TB, p string, meta Meta) []byte {
	tb.Helper()
	w, err := Create(p, StringSchema([]string{"a"}), meta, WriteOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	bb := NewBatchBuilder(StringSchema([]string{"a"}))
	bb.AppendStrings([]string{"x"})
	if err := w.Write(bb.NewBatch()); err != nil {
		tb.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// fuzzKeyKind checks that keyKind of the bytes at a destination named
// out.ext is what opening it whole gives.
func fuzzKeyKind(f *testing.F, ext string) {
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "out."+ext)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if got, want := keyKind(p), keyKindByOpening(p); got != want {
			t.Errorf("keyKind %v, opened whole %v", got, want)
		}
	})
}

// FuzzKeyKindIsOpeningWhole: whatever bytes are at a destination with a
// .parquet name, judging it by its footer's stage item alone gives what
// opening it whole gives (the walker never panics, loops or allocates by
// a length it read; when unsure it leaves the answer to Open).
func FuzzKeyKindIsOpeningWhole(f *testing.F) {
	dir := f.TempDir()
	for i, meta := range []Meta{{"stage": "key", "codebook": "abc"}, {"stage": "decrypt"}, {}} {
		f.Add(writeOneRow(f, filepath.Join(dir, "seed"+string(rune('a'+i))+".parquet"), meta))
	}
	fuzzKeyKind(f, "parquet")
}

// TestSidecarStageOfHoldsNoLongItem: the stage of a sidecar with an 8 MB
// item is read in a bounded amount of memory (its buffer, a string of
// longSidecarString bytes and the stood-in copy), not with the item.
func TestSidecarStageOfHoldsNoLongItem(t *testing.T) {
	side := []byte(`{"pramkit":1,"meta":{"codebook":"` + strings.Repeat("v1234567,", 8<<20/9) + `","stage":"key"}}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	stage, ok := sidecarStageOf(bytes.NewReader(side))
	runtime.ReadMemStats(&after)
	if stage != StageKey || !ok {
		t.Fatalf("stage %q, %v", stage, ok)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 512<<10 {
		t.Errorf("allocated %d bytes to read the stage of an 8 MB sidecar", n)
	}
}
