package pipeline

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

type recorder struct {
	sizes []int64
	vals  []int32
	strs  []string
}

func (r *recorder) Write(rec arrow.RecordBatch) error {
	r.sizes = append(r.sizes, rec.NumRows())
	r.vals = append(r.vals, rec.Column(0).(*array.Int32).Int32Values()...)
	s := rec.Column(1).(*array.String)
	for i := range s.Len() {
		r.strs = append(r.strs, s.Value(i))
	}
	return nil
}

var testSchema = arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)

// batch returns rows [from, from+n) of the test table, in buffers the test
// then overwrites, to show that Write keeps none of them.
func batch(from, n int) (arrow.RecordBatch, func()) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, testSchema)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int32Builder).Append(int32(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("s", i))
	}
	rec := b.NewRecordBatch()
	scribble := func() {
		v := rec.Column(0).(*array.Int32).Int32Values()
		for i := range v {
			v[i] = -1
		}
	}
	return rec, scribble
}

func TestRebatcherWritesFixedBatchesWhateverTheChunks(t *testing.T) {
	for _, chunks := range [][]int{{10}, {3, 3, 3, 1}, {4, 4, 2}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {9, 1}, {0, 10, 0}} {
		rec := &recorder{}
		rb := NewRebatcher(rec, 4)
		row := 0
		for _, n := range chunks {
			b, scribble := batch(row, n)
			if err := rb.Write(b); err != nil {
				t.Fatal(err)
			}
			scribble()
			b.Release()
			row += n
		}
		if err := rb.Flush(); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(rec.sizes) != "[4 4 2]" {
			t.Errorf("chunks %v: batches %v, want [4 4 2]", chunks, rec.sizes)
		}
		for i, v := range rec.vals {
			if v != int32(i) || rec.strs[i] != fmt.Sprint("s", i) {
				t.Fatalf("chunks %v: row %d is (%d, %s)", chunks, i, v, rec.strs[i])
			}
		}
	}
}
