package table

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestCSVFileWriterMatchesEncodingCSV: written to a file, a CSV's rows go
// to the sink in blocks the writer formats into (writeBlocks), in pieces
// sized from the previous batch's rows and formatted on several
// goroutines. Whatever the batch sizes (one row, under minParallelRows,
// batches of more pieces than handBlocks/2, rows of very different widths)
// and GOMAXPROCS, the file is byte for byte encoding/csv's, and the
// sidecar's digest is the file's (Open checks it).
func TestCSVFileWriterMatchesEncodingCSV(t *testing.T) {
	const n = 200_000
	long := strings.Repeat("wide, quoted \"label\" ", 40) // ~900 bytes a cell
	labels := append([]string{long}, csvAwkward...)
	lab := NewLabels(labels)
	schema := arrow.NewSchema([]arrow.Field{DictField("a"), DictField("b")}, nil)
	a, b := make([]uint32, n), make([]uint32, n)
	var want bytes.Buffer
	cw := csv.NewWriter(&want)
	cw.Write([]string{"a", "b"})
	for i := range n {
		a[i] = uint32(i*7) % uint32(len(labels))
		// Rows 69000..69739 are wide: they overflow the block of the
		// piece sized for narrow rows that holds them, and the next large
		// batch, sized from them, is cut into more than handBlocks/2 pieces.
		b[i] = uint32(1 + i%len(csvAwkward))
		if i >= 69_000 && i < 69_740 {
			b[i] = 0
		}
		cw.Write([]string{labels[a[i]], labels[b[i]]})
	}
	cw.Flush()
	sizes := []int{1, 100, minParallelRows, 64 << 10, 3, 120_000}
	dir := t.TempDir()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		path := filepath.Join(dir, "out.csv")
		w, err := Create(path, schema, Meta{"k": "v"}, WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for off, k := 0, 0; off < n; k++ {
			m := min(sizes[k%len(sizes)], n-off)
			rec := CodesBatch(schema, [][]uint32{a[off : off+m], b[off : off+m]}, []*Labels{lab, lab}, m)
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
			off += m
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			i := 0
			for i < min(len(got), want.Len()) && got[i] == want.Bytes()[i] {
				i++
			}
			t.Fatalf("GOMAXPROCS %d: the file differs from encoding/csv at byte %d of %d (want %d)", procs, i, len(got), want.Len())
		}
		r, err := Open(path, ReadOptions{})
		if err != nil {
			t.Fatalf("GOMAXPROCS %d: reading the file back: %v", procs, err)
		}
		r.Close()
	}
}

// recordingFile keeps the slices it is given, to show they were not copied.
type recordingFile struct {
	mu    sync.Mutex
	bytes bytes.Buffer
	ptrs  map[*byte]bool
}

func (f *recordingFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(p) > 0 {
		f.ptrs[unsafe.SliceData(p)] = true
	}
	return f.bytes.Write(p)
}

// TestFileSinkHandsBlocksOver: blocks filled by the caller (takeBlock, on
// several goroutines at once, grown past their size) and handed over in
// order reach the file as they are, not copied, in order with the bytes of
// Write calls around them, and the digest is of all the bytes.
func TestFileSinkHandsBlocksOver(t *testing.T) {
	f := &recordingFile{ptrs: map[*byte]bool{}}
	sum := &digester{h: sha256.New()}
	s := newFileSink(f, sum)
	var want bytes.Buffer
	var handed []*byte
	for round := range 50 {
		head := []byte(strings.Repeat("h", round*1000))
		s.Write(head)
		want.Write(head)
		blocks := make([][]byte, handBlocks/2)
		var wg sync.WaitGroup
		for k := range blocks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b := s.takeBlock()
				for i := range (k + round) * 40_000 {
					b = append(b, byte('a'+(i+k)%26))
				}
				blocks[k] = b
			}()
		}
		wg.Wait()
		for _, b := range blocks {
			want.Write(b)
			if len(b) > 0 {
				handed = append(handed, unsafe.SliceData(b))
			}
			if err := s.handBlock(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.bytes.Bytes(), want.Bytes()) {
		t.Fatalf("the file has %d bytes, not the %d given in order", f.bytes.Len(), want.Len())
	}
	for i, p := range handed {
		if !f.ptrs[p] {
			t.Fatalf("handed block %d was copied before it was written", i)
		}
	}
	h := sha256.Sum256(want.Bytes())
	if d := sum.digest(); d.Bytes != int64(want.Len()) || d.SHA256 != hex.EncodeToString(h[:]) {
		t.Fatalf("digest %+v, want %d bytes %x", d, want.Len(), h)
	}
	if m := s.made.Load(); m > handBlocks {
		t.Errorf("%d blocks were made, more than handBlocks = %d", m, handBlocks)
	}
}

// TestFileSinkHandBlockAfterAnError: once the file failed, handBlock
// returns its error and takes the block back, so that a writer handing
// over every block of a batch never runs out of blocks; after flush it
// refuses blocks.
func TestFileSinkHandBlockAfterAnError(t *testing.T) {
	bad := errors.New("disk full")
	g := &gate{release: make(chan struct{}), err: bad}
	close(g.release)
	s := newFileSink(g, nil)
	var err error
	for range 10 * handBlocks {
		b := append(s.takeBlock(), 'x')
		if err = s.handBlock(b); err != nil {
			break
		}
	}
	if !errors.Is(err, bad) {
		t.Fatalf("handBlock returned %v, want the file's error", err)
	}
	for range 2 * handBlocks {
		if err := s.handBlock(s.takeBlock()); !errors.Is(err, bad) {
			t.Fatalf("handBlock returned %v, want the file's error", err)
		}
	}
	if err := s.flush(); !errors.Is(err, bad) {
		t.Errorf("flush returned %v", err)
	}
	s = newFileSink(&bytes.Buffer{}, nil)
	b := s.takeBlock()
	s.flush()
	if err := s.handBlock(b); !errors.Is(err, errSinkClosed) {
		t.Errorf("handBlock after flush returned %v, want errSinkClosed", err)
	}
}

// a compile-time check that file outputs take blocks.
var _ blockSink = (*atomicFile)(nil)
