package table

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestCraftedFilesAreRefusedQuickly: files built to make a reader hang,
// crash or allocate without bound are refused, each within seconds and
// with little memory — found by review (the files are in
// testdata/crafted):
//   - dag60.arrows: an Arrow stream whose schema lists the same child
//     field twice at each of 60 levels (1.3 KB, 2^60 visits);
//   - dag_schema.parquet: the same schema as a Parquet file's ARROW:schema;
//   - negrows.parquet, groups_neg.parquet: a row group of a negative row
//     count (estimate sliced with it and crashed);
//   - hugerows.parquet: a row group of 2^31 − 1 rows in 509 bytes, which
//     the dictionary decoder sized an 8 GB buffer from;
//   - an Arrow file whose record batch blocks all point at one 4 MB
//     region (each was read and checked: quadratic).
func TestCraftedFilesAreRefusedQuickly(t *testing.T) {
	dir := t.TempDir()
	blocks := filepath.Join(dir, "blocks.arrow")
	if err := os.WriteFile(blocks, arrowFileOfRepeatedBlocks(4<<20, 4000), 0o644); err != nil {
		t.Fatal(err)
	}
	files := []string{blocks}
	for _, n := range []string{"dag60.arrows", "dag_schema.parquet", "negrows.parquet", "groups_neg.parquet", "hugerows.parquet"} {
		files = append(files, filepath.Join("testdata", "crafted", n))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			done := make(chan error, 1)
			go func() { done <- openAndDrain(path) }()
			select {
			case err := <-done:
				if err == nil {
					t.Errorf("read without an error")
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("still reading after 20 s")
			}
			runtime.ReadMemStats(&after)
			if a := after.TotalAlloc - before.TotalAlloc; a > 512<<20 {
				t.Errorf("allocated %d MB", a>>20)
			}
		})
	}
}

// openAndDrain opens path, with every column read as a dictionary where
// it can be, and reads it to its end.
func openAndDrain(path string) error {
	r, err := Open(path, ReadOptions{})
	if err != nil {
		return err
	}
	var cols []string
	for _, f := range r.Schema().Fields() {
		cols = append(cols, f.Name)
	}
	r.Close()
	if r, err = Open(path, ReadOptions{DictColumns: cols}); err != nil {
		return err
	}
	defer r.Close()
	_, err = drainErr(r)
	return err
}

// arrowFileOfRepeatedBlocks is an Arrow IPC file of a region of size
// bytes (one small schema message, then zeros) and a footer of k record
// batch blocks that all point at the region.
func arrowFileOfRepeatedBlocks(size, k int) []byte {
	le := binary.LittleEndian
	var msg []byte
	msg = le.AppendUint32(msg, 0xFFFFFFFF)
	msg = le.AppendUint32(msg, 16)
	msg = le.AppendUint32(msg, 4)
	neg := int32(4 - 8)
	msg = le.AppendUint32(msg, uint32(neg))
	msg = le.AppendUint16(msg, 4)
	msg = le.AppendUint16(msg, 4)
	msg = append(msg, 0, 0, 0, 0)
	region := append(msg, make([]byte, size-len(msg))...)
	var foot []byte
	foot = le.AppendUint32(foot, 16)
	for _, v := range []uint16{12, 8, 0, 0, 0, 4} {
		foot = le.AppendUint16(foot, v)
	}
	foot = le.AppendUint32(foot, uint32(16-4))
	foot = le.AppendUint32(foot, 4)
	foot = le.AppendUint32(foot, uint32(k))
	for range k {
		foot = le.AppendUint64(foot, 8)
		foot = le.AppendUint32(foot, uint32(size))
		foot = le.AppendUint32(foot, 0)
		foot = le.AppendUint64(foot, 0)
	}
	var out bytes.Buffer
	out.WriteString("ARROW1\x00\x00")
	out.Write(region)
	out.Write(foot)
	out.Write(le.AppendUint32(nil, uint32(len(foot))))
	out.WriteString("ARROW1")
	return out.Bytes()
}

// TestReopenRefusesAnotherFile: a Parquet, Arrow or sidecar-less CSV file
// opened again with
// SidecarOf its first reader (a stage's later pass: report's scans,
// estimate's reopening of a release) is refused when it is no longer the
// file the first reader read — replaced, or rewritten in place — so that
// no result mixes two files; the same file, or a first reader of another
// path, is fine.
func TestReopenRefusesAnotherFile(t *testing.T) {
	for _, ext := range []string{".parquet", ".arrow", ".csv"} {
		dir := t.TempDir()
		p, other := filepath.Join(dir, "r"+ext), filepath.Join(dir, "o"+ext)
		write := func(path, v string) {
			if ext == ".csv" {
				// A CSV without a sidecar (its metadata in a #pramkit
				// line): no digest checks it.
				// (Written anew and renamed, as writers replace files.)
				if err := os.WriteFile(path+".new", []byte("#pramkit {\"pramkit\":1,\"meta\":{\"stage\":\"x\"}}\na\n"+v+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(path+".new", path); err != nil {
					t.Fatal(err)
				}
				return
			}
			writeRows(t, path, []string{"a"}, [][]string{{v}}, Meta{"stage": "x"}, WriteOptions{})
		}
		write(p, "1")
		write(other, "1")
		for _, tc := range []struct {
			name   string
			change func()
			ok     bool
		}{
			{"unchanged", func() {}, true},
			{"replaced", func() { write(p, "2") }, false},
			{"rewritten in place", func() {
				later := time.Now().Add(time.Hour)
				if err := os.Chtimes(p, later, later); err != nil {
					t.Fatal(err)
				}
			}, false},
		} {
			t.Run(ext+" "+tc.name, func(t *testing.T) {
				first, err := Open(p, ReadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer first.Close()
				tc.change()
				again, err := Open(p, ReadOptions{SidecarOf: first})
				if err == nil {
					again.Close()
				}
				if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), "changed since this run first read it") {
					t.Errorf("reopened: %v", err)
				}
				if r, err := Open(other, ReadOptions{SidecarOf: first}); err != nil {
					t.Errorf("another path with SidecarOf: %v", err)
				} else {
					r.Close()
				}
			})
		}
	}
}
