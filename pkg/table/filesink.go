package table

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// fileSink buffers an output file's bytes and hands full blocks to a
// goroutine that writes them to the file, and then to one that hashes
// them for a CSV's sidecar, so that neither the write(2) calls nor SHA-256
// run on the goroutine that formats the rows. Before, both ran inside the
// format writer's Write, in the stage's ordered emit step: writing and
// hashing a 10M-row CSV was about half of decrypt → CSV on one core, and
// with them serial the second core sat idle while they ran.
//
// Blocks go through in order, the writer and the hasher each taking them
// in turn, so the file and the digest are exactly those of the bytes given
// to Write. At most sinkBlocks blocks exist (allocated as needed), or
// handBlocks when a format writer fills them itself (takeBlock): memory
// stays bounded when the disk is slower than the stage, Write then waits.
// An error of the file's Write is returned by a later Write and by flush;
// the blocks after it are not written.
type fileSink struct {
	file io.Writer
	sum  *digester // nil: no digest
	// writeback, when not nil, is called by the writer goroutine with
	// each range of about writebackBytes it wrote (startWriteback).
	writeback func(off, n int64)

	cur   []byte       // the block being filled
	made  atomic.Int64 // blocks allocated
	free  chan []byte  // blocks written and hashed
	write chan []byte  // to the writer, in order
	hash  chan []byte  // from the writer to the hasher, in order
	done  chan struct{}
	once  sync.Once
	shut  bool // flush was called: Write refuses more bytes

	failed atomic.Pointer[error]
	err    error // the file's first error; read after done
}

// errSinkClosed is Write's error after flush (the file is complete, or
// was discarded).
var errSinkClosed = errors.New("internal error: write to an output file after it was closed")

const (
	// writebackBytes is how much of a file is written before its disk
	// write is started (startWriteback).
	writebackBytes = 8 << 20
	sinkBlockSize  = 512 << 10
	sinkBlocks     = 4
	// handBlocks bounds the blocks when a format writer fills them itself
	// (takeBlock, handBlock): the CSV writer formats up to handBlocks/2
	// pieces of a batch side by side while the previous batch's are still
	// being written and hashed.
	handBlocks = 16
)

// newFileSink starts the sink's goroutines. When file is an *os.File, the
// writer starts each 8 MiB's write to the disk as soon as it has written
// them (startWriteback), so that the disk writes while the stage goes on:
// the fsync before a file is published then waits for the last few MiB
// only. Without it, fsync wrote a 10M-row CSV (336 MB) after the rows were
// all formatted, 0.10-0.15 s during which the stage did nothing else —
// most of what kept decrypt -> CSV on 2 cores from being 1.7 times as fast
// as on one.
func newFileSink(file io.Writer, sum *digester) *fileSink {
	var wb func(off, n int64)
	if f, ok := file.(*os.File); ok {
		wb = func(off, n int64) { startWriteback(f, off, n) }
	}
	return newFileSinkWriteback(file, sum, wb)
}

// newFileSinkWriteback is newFileSink with the writeback hook given.
func newFileSinkWriteback(file io.Writer, sum *digester, writeback func(off, n int64)) *fileSink {
	s := &fileSink{
		file:      file,
		sum:       sum,
		writeback: writeback,
		free:      make(chan []byte, handBlocks),
		write:     make(chan []byte, handBlocks),
		done:      make(chan struct{}),
	}
	if sum == nil {
		go s.writer(s.free)
		return s
	}
	s.hash = make(chan []byte, handBlocks)
	go s.writer(s.hash)
	go func() {
		for b := range s.hash {
			s.sum.Write(b)
			s.free <- b
		}
		close(s.done)
	}()
	return s
}

// writer writes the blocks and passes them on: to the hasher, or back to
// the free list.
func (s *fileSink) writer(next chan []byte) {
	var synced, written int64 // bytes whose writeback was started; written
	for b := range s.write {
		if s.err == nil {
			if _, err := s.file.Write(b); err != nil {
				s.err = err
				s.failed.Store(&err)
			}
			written += int64(len(b))
			if s.writeback != nil && s.err == nil && written-synced >= writebackBytes {
				s.writeback(synced, written-synced)
				synced = written
			}
		}
		next <- b
	}
	if s.hash != nil {
		close(s.hash)
	} else {
		close(s.done)
	}
}

func (s *fileSink) Write(p []byte) (int, error) {
	if err := s.failed.Load(); err != nil {
		return 0, *err
	}
	if s.shut {
		return 0, errSinkClosed
	}
	n := len(p)
	for len(p) > 0 {
		if s.cur == nil {
			s.cur = s.block(sinkBlocks)
		}
		k := copy(s.cur[len(s.cur):cap(s.cur)], p)
		s.cur = s.cur[:len(s.cur)+k]
		p = p[k:]
		if len(s.cur) == cap(s.cur) {
			s.write <- s.cur
			s.cur = nil
		}
	}
	return n, nil
}

// block returns an empty block: a free one, a new one while fewer than
// limit exist, else the next one freed.
func (s *fileSink) block(limit int) []byte {
	select {
	case b := <-s.free:
		return b[:0]
	default:
	}
	if s.made.Load() < int64(limit) {
		s.made.Add(1)
		return make([]byte, 0, sinkBlockSize)
	}
	return (<-s.free)[:0]
}

// takeBlock returns an empty block for the caller to fill (it may grow it)
// and give back with handBlock; it waits while handBlocks are in use. A
// caller holds at most handBlocks/2 of them at once, so that the others,
// on their way to the file, come back.
//
// Safe for concurrent use, unlike Write and handBlock: the CSV writer's
// goroutines each take the blocks they format rows into.
func (s *fileSink) takeBlock() []byte {
	select {
	case b := <-s.free:
		return b[:0]
	default:
	}
	if s.made.Add(1) <= handBlocks {
		return make([]byte, 0, sinkBlockSize)
	}
	s.made.Add(-1)
	return (<-s.free)[:0]
}

// handBlock passes a block from takeBlock, filled, to be written after
// every byte given before it; the sink owns it from then on. No copy is
// made: at 10M rows copying a CSV's bytes into the sink's blocks (and
// first into a bufio.Writer) was a tenth of the ordered emit step.
func (s *fileSink) handBlock(b []byte) error {
	if err := s.failed.Load(); err != nil {
		s.free <- b
		return *err
	}
	if s.shut {
		s.free <- b
		return errSinkClosed
	}
	if len(s.cur) > 0 {
		s.write <- s.cur
		s.cur = nil
	}
	s.write <- b
	return nil
}

// flush writes what is buffered, waits until every byte is written and
// hashed, and returns the file's first error. The sink takes no more
// bytes; flush may be called again (it returns the same error).
func (s *fileSink) flush() error {
	s.once.Do(func() {
		s.shut = true
		if len(s.cur) > 0 {
			s.write <- s.cur
		}
		s.cur = nil
		close(s.write)
	})
	<-s.done
	return s.err
}

// streamSink is a CSV output to a stream (standard output) through a
// fileSink, as a file's is: the CSV writer formats rows into the sink's
// blocks (no copy into a bufio.Writer) and the sink writes them on its
// own goroutine while the next batch is formatted. A write error (a
// closed pipe: EPIPE) comes back from a later Write, handBlock or Close.
type streamSink struct{ out *fileSink }

func newStreamSink(w io.Writer) *streamSink {
	return &streamSink{newFileSinkWriteback(w, nil, nil)}
}

func (s *streamSink) Write(p []byte) (int, error) { return s.out.Write(p) }
func (s *streamSink) takeBlock() []byte           { return s.out.takeBlock() }
func (s *streamSink) handBlock(b []byte) error    { return s.out.handBlock(b) }

// Close writes what is buffered and waits until the stream has every
// byte; it returns the stream's first error.
func (s *streamSink) Close() error { return s.out.flush() }
