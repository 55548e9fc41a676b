package table

import (
	"bytes"
	"encoding/csv"
	"errors"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// failAfter accepts n bytes, then fails every write with EPIPE, as a pipe
// whose reader went away.
type failAfter struct {
	n   int
	got bytes.Buffer
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.got.Len()+len(p) > f.n {
		return 0, syscall.EPIPE
	}
	return f.got.Write(p)
}

// TestCSVToStreamGoesThroughBlocks: a CSV written to a stream (standard
// output) is formatted into the sink's blocks and written on its
// goroutine: the bytes are encoding/csv's; a stream that fails (EPIPE)
// fails a later Write or the Commit with that error; and Abort ends the
// sink's goroutine.
func TestCSVToStreamGoesThroughBlocks(t *testing.T) {
	const n = 50_000
	lab := NewLabels(csvAwkward)
	schema := arrow.NewSchema([]arrow.Field{DictField("a"), DictField("b")}, nil)
	a, b := make([]uint32, n), make([]uint32, n)
	var want bytes.Buffer
	cw := csv.NewWriter(&want)
	cw.Write([]string{"a", "b"})
	for i := range n {
		a[i], b[i] = uint32(i%len(csvAwkward)), uint32(i/5%len(csvAwkward))
		cw.Write([]string{csvAwkward[a[i]], csvAwkward[b[i]]})
	}
	cw.Flush()
	write := func(out *failAfter) (w Writer, err error) {
		w, err = Create("-", schema, nil, WriteOptions{Format: CSV, Stdout: out})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := w.(*writer).sink.(*streamSink); !ok {
			t.Fatalf("a CSV stream's sink is %T, not a streamSink", w.(*writer).sink)
		}
		for off := 0; off < n && err == nil; off += 10_000 {
			rec := CodesBatch(schema, [][]uint32{a[off : off+10_000], b[off : off+10_000]}, []*Labels{lab, lab}, 10_000)
			err = w.Write(rec)
			rec.Release()
		}
		return w, err
	}
	out := &failAfter{n: 1 << 40}
	w, err := write(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.got.Bytes(), want.Bytes()) {
		t.Fatalf("stream differs from encoding/csv (%d bytes, want %d)", out.got.Len(), want.Len())
	}

	w, err = write(&failAfter{n: 1000})
	if err == nil {
		err = w.Commit()
	}
	if !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("a stream that fails: error %v, want EPIPE", err)
	}
	w.Abort()

	before := runtime.NumGoroutine()
	w, err = write(&failAfter{n: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	w.Abort()
	for i := 0; runtime.NumGoroutine() > before && i < 100; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Errorf("%d goroutines after Abort, %d before the writer", g, before)
	}
}
