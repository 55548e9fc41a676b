package anonymize

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/table"
)

// asyncWriter writes batches to w on a goroutine of its own, in the order
// given, so that a stage runs alongside the one that feeds it: the shuffle
// encodes the rows while pass 2 reads and deals the next batch, and the
// output encodes a batch while the shuffle decodes the next. Whatever w
// draws at random it draws in the same order as a direct writer would, so
// a seeded run is unchanged. Memory: at most asyncDepth batches waiting.
type asyncWriter struct {
	w      table.Writer
	ch     chan arrow.RecordBatch
	done   chan error
	closed bool
}

// asyncDepth is the number of batches that may wait for the writer.
const asyncDepth = 2

func newAsyncWriter(w table.Writer) *asyncWriter {
	a := &asyncWriter{w: w, ch: make(chan arrow.RecordBatch, asyncDepth), done: make(chan error, 1)}
	go func() {
		var err error
		for rec := range a.ch {
			if err == nil {
				err = w.Write(rec)
			}
			rec.Release()
		}
		a.done <- err
	}()
	return a
}

// Write queues rec (retained until written). A write error is returned
// by Commit; the batches after it are dropped.
func (a *asyncWriter) Write(rec arrow.RecordBatch) error {
	rec.Retain()
	a.ch <- rec
	return nil
}

// wait closes the queue and returns the first write error.
func (a *asyncWriter) wait() error {
	if a.closed {
		return nil
	}
	a.closed = true
	close(a.ch)
	return <-a.done
}

// Commit writes the queued batches, then commits w.
func (a *asyncWriter) Commit() error {
	if err := a.wait(); err != nil {
		return err
	}
	return a.w.Commit()
}

// Abort drops what is queued and aborts w.
func (a *asyncWriter) Abort() {
	a.wait()
	a.w.Abort()
}

func (a *asyncWriter) Format() table.Format { return a.w.Format() }
