package table

import "github.com/apache/arrow-go/v18/arrow"

// RowWriter fills rows in a BatchBuilder and writes them to a Writer a
// batch at a time: every Size rows, and the rest at Flush. It replaces the
// "append, and write a batch when full or at the last row" loop that every
// command writing rows one by one would otherwise repeat. Memory: one batch.
type RowWriter struct {
	*BatchBuilder
	w    Writer
	size int
	// OnBatch, when set, is called with the number of rows of each batch
	// written (a progress meter's Add).
	OnBatch func(rows int)
}

// NewRowWriter starts writing rows of schema to w in batches of size rows
// (DefaultBatchSize when size ≤ 0). The caller Releases it.
func NewRowWriter(w Writer, schema *arrow.Schema, size int) *RowWriter {
	if size <= 0 {
		size = DefaultBatchSize
	}
	return &RowWriter{BatchBuilder: NewBatchBuilder(schema), w: w, size: size}
}

// EndRow ends a row whose cells were all appended, and writes the batch
// once it holds Size rows.
func (r *RowWriter) EndRow() error {
	r.BatchBuilder.EndRow()
	return r.flushIfFull()
}

// AppendStrings appends one row of a utf8-only schema, as EndRow.
func (r *RowWriter) AppendStrings(row []string) error {
	r.BatchBuilder.AppendStrings(row)
	return r.flushIfFull()
}

func (r *RowWriter) flushIfFull() error {
	if r.Rows() >= r.size {
		return r.Flush()
	}
	return nil
}

// Flush writes the rows appended since the last batch, if any: call it
// once after the last row, before committing the Writer.
func (r *RowWriter) Flush() error {
	rows := r.Rows()
	if rows == 0 {
		return nil
	}
	rec := r.NewBatch()
	defer rec.Release()
	if err := r.w.Write(rec); err != nil {
		return err
	}
	if r.OnBatch != nil {
		r.OnBatch(rows)
	}
	return nil
}
