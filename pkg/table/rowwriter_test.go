package table

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// batchRecorder is a Writer that keeps the row counts of the batches it
// is given.
type batchRecorder struct{ batches []int64 }

func (b *batchRecorder) Write(rec arrow.RecordBatch) error {
	b.batches = append(b.batches, rec.NumRows())
	return nil
}
func (b *batchRecorder) Commit() error  { return nil }
func (b *batchRecorder) Abort()         {}
func (b *batchRecorder) Format() Format { return CSV }

func TestRowWriterBatches(t *testing.T) {
	for _, c := range []struct {
		rows int
		want []int64
	}{
		{0, nil},
		{1, []int64{1}},
		{3, []int64{3}},
		{7, []int64{3, 3, 1}},
		{6, []int64{3, 3}},
	} {
		rec := &batchRecorder{}
		rw := NewRowWriter(rec, StringSchema([]string{"a"}), 3)
		var meter []int
		rw.OnBatch = func(n int) { meter = append(meter, n) }
		for i := 0; i < c.rows; i++ {
			if err := rw.AppendStrings([]string{"x"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := rw.Flush(); err != nil {
			t.Fatal(err)
		}
		rw.Release()
		if len(rec.batches) != len(c.want) || len(meter) != len(c.want) {
			t.Fatalf("%d rows: batches %v (meter %v), want %v", c.rows, rec.batches, meter, c.want)
		}
		for i := range c.want {
			if rec.batches[i] != c.want[i] || int64(meter[i]) != c.want[i] {
				t.Errorf("%d rows: batches %v (meter %v), want %v", c.rows, rec.batches, meter, c.want)
			}
		}
	}
}
