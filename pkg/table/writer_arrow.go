package table

import (
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// arrowWriter writes the Arrow IPC stream format, the fastest way to pipe
// a table from one pramkit tool to the next.
//
// Like the Parquet writer's row groups, its record batches hold exactly
// batchRows rows (RowGroupRows, fewer for a wide table (RowsWithin),
// unless a test asks otherwise), the last one
// the rest: the rows are copied into a rowGroupBuf, once each, so the
// stream's bytes depend on its rows only, not on the batches the stage
// wrote (issue 11: a seeded run gives the same bytes at any core count and
// chunk size). A dictionary column's dictionary goes out once, before the
// first batch, and again only where it changes by value (ipc.Writer
// compares each batch's with the last sent): every group of a Labels
// column carries a copy of the same labels, so a stage's stream has one.
type arrowWriter struct {
	w         *ipc.Writer
	schema    *arrow.Schema
	batchRows int
	group     *rowGroupBuf
	memos     []dictMemo // the groups' dictionary copies (dictMemo)
}

func newArrowWriter(s sink, schema *arrow.Schema, meta Meta, batchRows int) (*arrowWriter, error) {
	if batchRows <= 0 {
		batchRows = RowsWithin(schema, GroupBytes, RowGroupRows)
	}
	full := withMeta(schema, meta)
	// The ipc.Writer is given the schema without its metadata (it compares
	// batches' schemas without it): the payloads write the message with it
	// (arrowPayloads).
	bare := arrow.NewSchemaWithEndian(full.Fields(), nil, full.Endianness())
	// Only the schema message holds the metadata, which is let go once
	// written: a release's codebook item is 20 MB at 2M labels.
	w := ipc.NewWriterWithPayloadWriter(&arrowPayloads{w: s, schema: full}, ipc.WithSchema(bare))
	return &arrowWriter{w: w, schema: bare, batchRows: batchRows, memos: dictMemos(bare)}, nil
}

// arrowPayloads writes an ipc.Writer's messages as its stream writer does,
// but for the schema message, which it writes itself, metadata included
// (writeSchemaMessage): arrow-go's would copy a large metadata several
// times.
type arrowPayloads struct {
	w      io.Writer
	schema *arrow.Schema
	sent   bool // the schema message
}

func (p *arrowPayloads) Start() error { return nil }

// WritePayload writes pl, except the first: ipc.Writer's first payload is
// always its schema's message, which is replaced with p.schema's.
func (p *arrowPayloads) WritePayload(pl ipc.Payload) error {
	if !p.sent {
		p.sent = true
		schema := p.schema
		p.schema = nil
		return writeSchemaMessage(p.w, schema)
	}
	_, err := pl.WritePayload(p.w)
	return err
}

// Close ends the stream with the end-of-stream marker: a continuation and
// a zero length.
func (p *arrowPayloads) Close() error {
	_, err := p.w.Write([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0})
	return err
}

// write copies rec's rows into the batch being gathered and writes each
// batch once full; the caller may reuse rec's memory once write returns.
func (a *arrowWriter) write(rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	for off := 0; off < n; {
		if a.group == nil {
			a.group = newRowGroupBuf(a.schema, a.batchRows, a.memos)
		}
		k := min(n-off, a.batchRows-a.group.rows)
		if err := a.group.appendRows(rec, off, k); err != nil {
			return err
		}
		off += k
		if a.group.rows == a.batchRows {
			if err := a.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush writes the gathered rows as one record batch.
func (a *arrowWriter) flush() error {
	g := a.group
	a.group = nil
	rb, err := g.batch()
	if err != nil {
		return err
	}
	defer rb.Release()
	return a.w.Write(rb)
}

func (a *arrowWriter) close() error {
	defer releaseMemos(a.memos)
	if a.group != nil && a.group.rows > 0 {
		if err := a.flush(); err != nil {
			a.w.Close()
			return err
		}
	}
	return a.w.Close()
}

// abort drops the rows not yet written, so a failed run does not write
// them after its error (to standard output, where nothing is undone).
func (a *arrowWriter) abort() {
	defer releaseMemos(a.memos)
	a.group = nil
	a.w.Close()
}
