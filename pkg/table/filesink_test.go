package table

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// TestFileSinkWritesAndHashesInOrder: whatever the sizes of the writes
// (empty, small, several blocks), the file gets exactly the bytes written,
// in order, and the digest is theirs.
func TestFileSinkWritesAndHashesInOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 20 {
		var file, want bytes.Buffer
		sum := &digester{h: sha256.New()}
		s := newFileSink(&file, sum)
		for range r.IntN(40) {
			p := make([]byte, r.IntN(3*sinkBlockSize/(1+r.IntN(100))))
			for i := range p {
				p[i] = byte(r.Uint32())
			}
			want.Write(p)
			if n, err := s.Write(p); n != len(p) || err != nil {
				t.Fatalf("Write: %d, %v", n, err)
			}
		}
		if err := s.flush(); err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(want.Bytes())
		if d := sum.digest(); !bytes.Equal(file.Bytes(), want.Bytes()) || d.Bytes != int64(want.Len()) || d.SHA256 != hex.EncodeToString(h[:]) {
			t.Fatalf("trial %d: file of %d bytes (want %d), digest %+v", trial, file.Len(), want.Len(), d)
		}
	}
}

// gate is a file whose writes wait for release, or fail with err.
type gate struct {
	release chan struct{}
	err     error
	n       int
}

func (g *gate) Write(p []byte) (int, error) {
	<-g.release
	if g.err != nil {
		return 0, g.err
	}
	g.n += len(p)
	return len(p), nil
}

// TestFileSinkWritesOffTheCallersGoroutine: a slow file does not hold up
// Write until the sink's blocks are all taken; a file's error comes back
// from a later Write and from flush.
func TestFileSinkWritesOffTheCallersGoroutine(t *testing.T) {
	g := &gate{release: make(chan struct{})}
	s := newFileSink(g, nil)
	returned := make(chan struct{})
	go func() {
		// sinkBlocks-1 full blocks go to the writer, which is stuck on
		// the first; the last block is still being filled.
		s.Write(make([]byte, (sinkBlocks-1)*sinkBlockSize+1))
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("Write waited for the file")
	}
	close(g.release)
	if err := s.flush(); err != nil || g.n != (sinkBlocks-1)*sinkBlockSize+1 {
		t.Fatalf("flush: %v, %d bytes written", err, g.n)
	}

	bad := errors.New("disk full")
	g = &gate{release: make(chan struct{}), err: bad}
	close(g.release)
	s = newFileSink(g, nil)
	s.Write(make([]byte, sinkBlockSize))
	var err error
	for range 1000 {
		if _, err = s.Write([]byte("x")); err != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(err, bad) {
		t.Errorf("a later Write returned %v, want the file's error", err)
	}
	if err := s.flush(); !errors.Is(err, bad) {
		t.Errorf("flush returned %v, want the file's error", err)
	}
	if err := s.flush(); !errors.Is(err, bad) {
		t.Errorf("a second flush returned %v, want the file's error", err)
	}

	// After flush (a discarded file, say), Write fails instead of panicking.
	s = newFileSink(&bytes.Buffer{}, nil)
	s.flush()
	if _, err := s.Write([]byte("late")); !errors.Is(err, errSinkClosed) {
		t.Errorf("Write after flush returned %v, want errSinkClosed", err)
	}
}
