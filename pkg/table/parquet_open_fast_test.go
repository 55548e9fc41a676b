package table

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Open reads a regular Parquet file through a buffer of bufio's least
// size (it reads the file at offsets, never through the buffer), other
// files through 1 MiB: sniffBuffer tells them apart by the magic.
func TestSniffBufferIsSmallForParquetOnly(t *testing.T) {
	cols, rows := dictRows(50)
	pq := writeParquetRows(t, cols, rows, 20)
	csv := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(csv, []byte("PAR,x\n1,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want int
	}{{pq, 16}, {csv, 1 << 20}} {
		f, err := os.Open(c.path)
		if err != nil {
			t.Fatal(err)
		}
		got := sniffBuffer(&sidecarInput{}, f)
		f.Close()
		if got != c.want {
			t.Errorf("%s: buffer %d, want %d", c.path, got, c.want)
		}
	}
	if got := sniffBuffer(nil, nil); got != 1<<20 {
		t.Errorf("standard input: buffer %d, want %d", got, 1<<20)
	}
	// And the file still reads whole.
	r, err := Open(pq, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.NumRows() != 50 {
		t.Fatalf("%d rows, want 50", r.NumRows())
	}
}

// ParquetDictGroupsOf reads the utf8 columns of a reader opened without
// DictColumns exactly as ParquetDictGroups reads them from one opened
// with them (pramkit's files of several row groups); it refuses a column
// that is not utf8, a chunk that is not dictionary-encoded in some row
// group (arrow-go's files with many values), a reader already read.
func TestParquetDictGroupsOfMatchesReopened(t *testing.T) {
	dump := func(dg *DictGroups, cols []int) []string {
		var out []string
		var s DictScratch
		defer s.Close()
		for i := range dg.Len() {
			for _, j := range cols {
				labels, idx, err := dg.Read(i, j, &s)
				out = append(out, fmt.Sprintf("%d %d %q %v %v", i, j, labels, idx, err))
			}
		}
		return out
	}
	cols, rows := dictRows(3000)
	p := writeParquetRows(t, cols, rows, 700)
	plain, err := Open(p, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	dict, err := Open(p, ReadOptions{DictColumns: cols})
	if err != nil {
		t.Fatal(err)
	}
	defer dict.Close()
	want := ParquetDictGroups(dict)
	got := ParquetDictGroupsOf(plain, []int{2, 0})
	if want == nil || got == nil {
		t.Fatalf("not read by DictGroups: %v, %v", want, got)
	}
	if g, w := dump(got, []int{2, 0}), dump(want, []int{2, 0}); !slices.Equal(g, w) {
		t.Fatalf("reads differ:\n%q\n%q", g, w)
	}
	if ParquetDictGroupsOf(plain, []int{3}) != nil || ParquetDictGroupsOf(plain, nil) != nil {
		t.Error("a column past the schema, or none, was accepted")
	}
	if _, err := plain.Next(); err != nil {
		t.Fatal(err)
	}
	if ParquetDictGroupsOf(plain, []int{0}) != nil {
		t.Error("a reader already read was accepted")
	}
	// arrow-go's files: "code" is INT32; "many" falls back to PLAIN
	// pages in some files, which must then be refused.
	refused := 0
	for seed := range uint64(40) {
		p, _ := randomParquet(t, seed)
		r, err := Open(p, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ParquetDictGroupsOf(r, []int{0}) != nil {
			t.Errorf("seed %d: an INT32 column was accepted", seed)
		}
		many := ParquetDictGroupsOf(r, []int{3}) != nil
		r.Close()
		d, err := Open(p, ReadOptions{DictColumns: []string{"many"}, Columns: []string{"many"}})
		if err != nil {
			t.Fatal(err)
		}
		if reopened := ParquetDictGroups(d) != nil; many != reopened {
			t.Errorf("seed %d: column many read by DictGroupsOf %v, by a reopened reader %v", seed, many, reopened)
		}
		d.Close()
		if !many {
			refused++
		}
	}
	if refused == 0 {
		t.Error("no random file had a column DictGroupsOf refused")
	}
}
