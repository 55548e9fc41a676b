package anonymize

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/table"
)

// recWriter records the rows of each batch; fail makes the n-th Write
// fail, panic makes it panic.
type recWriter struct {
	rows          []int64
	fail, panicAt int
	committed     bool
	aborted       bool
}

func (w *recWriter) Write(rec arrow.RecordBatch) error {
	w.rows = append(w.rows, rec.NumRows())
	switch len(w.rows) {
	case w.fail:
		return errors.New("disk full")
	case w.panicAt:
		panic("boom")
	}
	return nil
}
func (w *recWriter) Commit() error        { w.committed = true; return nil }
func (w *recWriter) Abort()               { w.aborted = true }
func (w *recWriter) Format() table.Format { return table.CSV }

func batchOf(t *testing.T, n int) arrow.RecordBatch {
	t.Helper()
	bb := table.NewBatchBuilder(table.StringSchema([]string{"a"}))
	defer bb.Release()
	for range n {
		bb.String(0, "x")
		bb.EndRow()
	}
	return bb.NewBatch()
}

// TestAsyncWriterKeepsOrderAndErrors: batches reach the writer in order;
// a write error or a panic comes back from Commit, which then does not
// commit.
func TestAsyncWriterKeepsOrderAndErrors(t *testing.T) {
	for _, c := range []struct {
		fail, panicAt int
		want          string
	}{{0, 0, ""}, {3, 0, "disk full"}, {0, 2, "internal error: boom"}} {
		w := &recWriter{fail: c.fail, panicAt: c.panicAt}
		a := newAsyncWriter(w)
		for n := 1; n <= 5; n++ {
			rec := batchOf(t, n)
			if err := a.Write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
		err := a.Commit()
		a.Abort()
		switch {
		case c.want == "" && (err != nil || !w.committed || len(w.rows) != 5 || w.rows[4] != 5):
			t.Errorf("rows %v, committed %v, %v", w.rows, w.committed, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || w.committed):
			t.Errorf("fail %d, panic %d: err %v, committed %v", c.fail, c.panicAt, err, w.committed)
		}
		for i, n := range w.rows {
			if n != int64(i+1) {
				t.Fatalf("batches out of order: %v", w.rows)
			}
		}
	}
}
