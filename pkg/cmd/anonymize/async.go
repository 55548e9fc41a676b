package anonymize

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/cli"
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
				err = a.write(rec)
			}
			rec.Release()
		}
		a.done <- err
	}()
	return a
}

// write writes one batch, turning a panic (a bug) into an error that
// Commit returns, as the command's own goroutine would report it.
func (a *asyncWriter) write(rec arrow.RecordBatch) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error: %v; please report this bug", p)
		}
	}()
	return a.w.Write(rec)
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

// createLate creates the output with the metadata meta returns, at once
// when rows are written as they come (--keep-order) or to standard
// output, else only when lateWriter.open is called or the first row is
// written: a release's metadata holds its codebook (10 MB of JSON at 1M
// labels, and as much again while it is encoded), which the writer keeps
// to its Commit, and A′'s shuffle writes nothing before its input ends,
// when the Dealers are gone. That was the 10 MB between 66 MB of live
// heap at 1M sensitive values and 56. The destination is still checked
// now, so that a bad -o fails before pass 2 as before: a writer is
// created there with empty metadata and aborted (a partial file made and
// removed; Create writes nothing to the destination before Commit).
func (o *Options) createLate(schema *arrow.Schema, meta func() (table.Meta, error), inFormat table.Format) (table.Writer, error) {
	return o.createLateAt(o.Output, schema, meta, inFormat, o.inputs())
}

// createLateAt is createLate for the output out, which must not
// overwrite inputs (Anatomy's two tables, each checked against the other).
func (o *Options) createLateAt(out cli.Output, schema *arrow.Schema, meta func() (table.Meta, error), inFormat table.Format, inputs []string) (table.Writer, error) {
	create := func(m table.Meta) (table.Writer, error) {
		return o.Streams.Create(out, schema, m, inFormat, inputs, o.codebookItem...)
	}
	if o.Order.Keep || table.IsStdio(out.Path) {
		m, err := meta()
		if err != nil {
			return nil, err
		}
		return create(m)
	}
	probe, err := o.Streams.Create(out, schema, table.Meta{}, inFormat, inputs)
	if err != nil {
		return nil, err
	}
	format := probe.Format()
	probe.Abort()
	return &lateWriter{format: format, create: func() (table.Writer, error) {
		m, err := meta()
		if err != nil {
			return nil, err
		}
		return create(m)
	}}, nil
}

// lateWriter is a table.Writer whose table is created when open is called
// or it is first written to or committed (createLate).
type lateWriter struct {
	create func() (table.Writer, error)
	format table.Format
	w      table.Writer
}

func (l *lateWriter) open() error {
	if l.w != nil {
		return nil
	}
	w, err := l.create()
	if err != nil {
		return err
	}
	l.w, l.create = w, nil
	return nil
}

func (l *lateWriter) Write(rec arrow.RecordBatch) error {
	if err := l.open(); err != nil {
		return err
	}
	return l.w.Write(rec)
}

// Commit commits the table and lets the writer go: a committed writer
// still holds its metadata, and Anatomy's sensitive table is committed
// before its row table is made (runAnatomy).
func (l *lateWriter) Commit() error {
	if err := l.open(); err != nil {
		return err
	}
	if err := l.w.Commit(); err != nil {
		return err
	}
	l.format, l.w = l.w.Format(), nil
	l.create = func() (table.Writer, error) { return nil, errors.New("internal error: a write after Commit") }
	return nil
}

// Prepare makes the table complete without publishing it (table.Staged):
// Commit publishes it later.
func (l *lateWriter) Prepare() error {
	if err := l.open(); err != nil {
		return err
	}
	return table.Prepare(l.w)
}

// CheckDestination is table.Staged's, of the table once created.
func (l *lateWriter) CheckDestination() error {
	if s, ok := l.w.(table.Staged); ok {
		return s.CheckDestination()
	}
	return nil
}

func (l *lateWriter) Abort() {
	if l.w != nil {
		l.w.Abort()
	}
}

func (l *lateWriter) Format() table.Format {
	if l.w != nil {
		return l.w.Format()
	}
	return l.format
}
