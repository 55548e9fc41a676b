package table

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestFileSinkStartsWritebackAsItWrites: the writer goroutine starts the
// disk write of each stretch of about writebackBytes once it is written,
// in order and without gaps, whether the bytes came through Write or
// handBlock, so that the fsync before publishing finds little left to do.
func TestFileSinkStartsWritebackAsItWrites(t *testing.T) {
	var mu sync.Mutex
	var ranges [][2]int64
	var file bytes.Buffer
	s := newFileSinkWriteback(&file, nil, func(off, n int64) {
		mu.Lock()
		ranges = append(ranges, [2]int64{off, n})
		mu.Unlock()
	})
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 10_000)
	for i := range 3 * writebackBytes / len(chunk) {
		if i%2 == 0 {
			s.Write(chunk)
			continue
		}
		if err := s.handBlock(append(s.takeBlock(), chunk...)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	total := int64(file.Len())
	if len(ranges) < 2 {
		t.Fatalf("%d writebacks for %d bytes, want one per %d", len(ranges), total, writebackBytes)
	}
	var next int64
	for _, r := range ranges {
		if r[0] != next || r[1] < writebackBytes {
			t.Fatalf("writeback of [%d, +%d) after [0, %d): want contiguous ranges of at least %d bytes", r[0], r[1], next, writebackBytes)
		}
		next = r[0] + r[1]
	}
	if next > total || total-next >= writebackBytes+int64(len(chunk))+sinkBlockSize {
		t.Errorf("writeback covered %d of %d bytes", next, total)
	}
}

// TestStartWritebackOnAFile: the hint is taken for a regular file (on
// Linux, sync_file_range(2); elsewhere nothing), and the file reads back.
func TestStartWritebackOnAFile(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := bytes.Repeat([]byte{7}, 3<<20)
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := startWriteback(f, 0, int64(len(data))); err != nil {
		t.Fatalf("startWriteback: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the file reads back %d bytes, %v", len(got), err)
	}
}
