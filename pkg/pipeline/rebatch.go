package pipeline

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BatchWriter is where a Rebatcher writes: a table.Writer.
type BatchWriter interface {
	Write(arrow.RecordBatch) error
}

// Rebatcher writes record batches of exactly Size rows (the last one
// shorter), whatever the sizes of the batches given to it. A Parquet or
// Arrow writer's bytes depend on its batch boundaries (pages, row groups,
// IPC messages), so writing a stage's chunks through a Rebatcher makes its
// output the same bytes at every chunk size.
//
// Write never keeps the caller's batch: rows that wait for the next
// output batch are copied, so the caller may reuse a chunk's buffers as
// soon as Write returns. A batch that is exactly one output batch, with
// nothing pending, is written as it is.
type Rebatcher struct {
	w       BatchWriter
	size    int
	pending []arrow.RecordBatch // owned copies, in order
	rows    int                 // rows in pending
}

// NewRebatcher returns a Rebatcher writing batches of size rows to w.
func NewRebatcher(w BatchWriter, size int) *Rebatcher {
	return &Rebatcher{w: w, size: size}
}

// Write adds rec's rows after those already given.
func (r *Rebatcher) Write(rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	if r.rows == 0 && n == r.size {
		return r.w.Write(rec)
	}
	off := 0
	for r.rows+(n-off) >= r.size {
		take := r.size - r.rows
		out, err := r.concat(rec, off, take)
		if err != nil {
			return err
		}
		r.releasePending()
		err = r.w.Write(out)
		out.Release()
		if err != nil {
			return err
		}
		off += take
	}
	if off < n {
		cp, err := copyRows(rec, off, n-off)
		if err != nil {
			return err
		}
		r.pending = append(r.pending, cp)
		r.rows += n - off
	}
	return nil
}

// Flush writes the rows still pending as one (short) batch.
func (r *Rebatcher) Flush() error {
	if r.rows == 0 {
		return nil
	}
	out, err := r.concat(nil, 0, 0)
	if err != nil {
		return err
	}
	r.releasePending()
	err = r.w.Write(out)
	out.Release()
	return err
}

// Release drops the rows pending (after an error).
func (r *Rebatcher) Release() { r.releasePending() }

func (r *Rebatcher) releasePending() {
	for _, p := range r.pending {
		p.Release()
	}
	r.pending, r.rows = r.pending[:0], 0
}

// concat returns the pending rows followed by rows [off, off+take) of rec
// (rec may be nil when take is 0) as one batch with its own memory; nil
// when there are no rows at all.
func (r *Rebatcher) concat(rec arrow.RecordBatch, off, take int) (arrow.RecordBatch, error) {
	parts := slicesOf(r.pending)
	if take > 0 {
		parts = append(parts, rec.NewSlice(int64(off), int64(off+take)))
	}
	defer func() {
		if take > 0 {
			parts[len(parts)-1].Release()
		}
	}()
	if len(parts) == 0 {
		return nil, nil
	}
	return concatBatches(parts)
}

func slicesOf(recs []arrow.RecordBatch) []arrow.RecordBatch {
	return append([]arrow.RecordBatch(nil), recs...)
}

// copyRows returns rows [off, off+n) of rec with their own memory.
func copyRows(rec arrow.RecordBatch, off, n int) (arrow.RecordBatch, error) {
	s := rec.NewSlice(int64(off), int64(off+n))
	defer s.Release()
	return concatBatches([]arrow.RecordBatch{s})
}

// concatBatches joins batches of one schema into a new batch that owns its
// memory (array.Concatenate copies, even a single array).
func concatBatches(parts []arrow.RecordBatch) (arrow.RecordBatch, error) {
	schema := parts[0].Schema()
	cols := make([]arrow.Array, schema.NumFields())
	rows := int64(0)
	for _, p := range parts {
		rows += p.NumRows()
	}
	arrs := make([]arrow.Array, len(parts))
	for j := range cols {
		for i, p := range parts {
			arrs[i] = p.Column(j)
		}
		c, err := array.Concatenate(arrs, memory.DefaultAllocator)
		if err != nil {
			for _, done := range cols[:j] {
				done.Release()
			}
			return nil, fmt.Errorf("pipeline: joining chunks of column %q: %w", schema.Field(j).Name, err)
		}
		cols[j] = c
	}
	out := array.NewRecordBatch(schema, cols, rows)
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}
