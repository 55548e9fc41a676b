package table

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// RowText is the text of the records behind one batch of a CSV reader in
// row-text mode (LendRowText): each row's cells can be read from it, once
// the caller knows it wants them. A stage that keeps few of the rows it
// reads — sample keeps m of n — then builds only the columns it decides
// with (none when sampling by position), which was most of its reading
// time, and reads the cells of the rows it keeps from the text.
//
// A RowText holds the chunk of input its records are in (about 1 MiB);
// Release gives it back.
type RowText struct {
	buf    *chunkBuf // data's memory, nil when not pooled
	data   []byte
	starts []int32 // per row of the batch: where its record starts in data
	end    int32   // where the last one ends
	cols   []int   // the file column of each column of the reader's schema
	ncols  int     // the file's columns
	s      *csvScanner
}

// Len is the number of rows.
func (t *RowText) Len() int { return len(t.starts) }

// Row returns row i's cells in the reader schema's columns cols, in that
// order. They share one allocation of their own, which outlives t.
func (t *RowText) Row(i int, cols []int) ([]string, error) {
	if t.s == nil {
		t.s = newCSVScanner(t.ncols)
	}
	s := t.s
	defer s.reset()
	end := t.end
	if i+1 < len(t.starts) {
		end = t.starts[i+1]
	}
	// The record alone: readPlain looks for a quote as far as the input
	// goes, and a chunk is ~1 MiB.
	s.setInput(t.data[t.starts[i]:end], true)
	if err := s.readRecord(); err != nil {
		// The record was read once already, whole: this does not happen.
		return nil, fmt.Errorf("re-reading row %d of a batch: %w", i, err)
	}
	n := 0
	for _, c := range cols {
		n += len(s.data[t.cols[c]])
	}
	var b strings.Builder
	b.Grow(n)
	for _, c := range cols {
		b.Write(s.data[t.cols[c]])
	}
	all, off := b.String(), 0
	out := make([]string, len(cols), len(cols)+1)
	for k, c := range cols {
		m := len(s.data[t.cols[c]])
		out[k] = all[off : off+m]
		off += m
	}
	return out, nil
}

// Release gives the text's memory back to its reader; t is not used again.
func (t *RowText) Release() {
	if t.buf != nil {
		t.buf.release()
		t.buf = nil
	}
	t.data, t.starts = nil, nil
}

// textMode is a CSV reader's row-text mode (LendRowText).
type textMode struct {
	sel    []int         // the file columns batches build
	schema *arrow.Schema // the batches' schema: those columns
	cols   []int         // the file column of each column of the reader's schema
	last   *RowText      // the text of the batch Next returned last, unclaimed
}

// LendRowText puts r, when it is a CSV reader that has not started
// reading, in row-text mode, and reports whether it did: from then on the
// batches Next returns hold only the columns build names (none for an
// empty list; their schema is not r.Schema()), and RowTextOf lends the
// text of each batch's records, from which every column of r.Schema() can
// be read, row by row. Records are checked whole as before: a record with
// the wrong number of fields fails in Next, built or not.
func LendRowText(r Reader, build []string) bool {
	c, ok := r.(*csvReader)
	if !ok || c.pipe != nil || c.done || c.err != nil {
		return false
	}
	t := &textMode{cols: make([]int, c.schema.NumFields())}
	for i := range t.cols {
		t.cols[i] = c.fileCol(i)
	}
	var fields []arrow.Field
	for _, name := range build {
		i := c.schema.FieldIndices(name)
		if len(i) == 0 {
			return false
		}
		t.sel = append(t.sel, c.fileCol(i[0]))
		fields = append(fields, c.schema.Field(i[0]))
	}
	if t.sel == nil {
		t.sel = []int{} // none (nil would be all)
	}
	t.schema = arrow.NewSchema(fields, nil)
	c.text = t
	return true
}

// RowTextOf hands the caller the text of the records of the batch r's
// Next returned last (LendRowText), nil if there is none. The caller owns
// it: it outlives the batch, until its Release.
func RowTextOf(r Reader) *RowText {
	c, ok := r.(*csvReader)
	if !ok || c.text == nil {
		return nil
	}
	t := c.text.last
	c.text.last = nil
	return t
}
