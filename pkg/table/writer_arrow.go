package table

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

type arrowWriter struct {
	w      *ipc.Writer
	schema *arrow.Schema
}

// newArrowWriter writes the Arrow IPC stream format, the fastest way to pipe
// a table from one pramkit tool to the next.
func newArrowWriter(s sink, schema *arrow.Schema, meta Meta) (*arrowWriter, error) {
	full := withMeta(schema, meta)
	return &arrowWriter{w: ipc.NewWriter(s, ipc.WithSchema(full)), schema: full}, nil
}

func (a *arrowWriter) write(rec arrow.RecordBatch) error {
	rb := rebatch(a.schema, rec)
	defer rb.Release()
	return a.w.Write(rb)
}

func (a *arrowWriter) close() error { return a.w.Close() }
