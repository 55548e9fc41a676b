package pipeline

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// int32Batch is table.Int32Batch (pipeline does not import table).
func int32Batch(schema *arrow.Schema) func([][]uint32, int) arrow.RecordBatch {
	return func(cols [][]uint32, n int) arrow.RecordBatch {
		arrs := make([]arrow.Array, len(cols))
		for j, c := range cols {
			buf := memory.NewBufferBytes(arrow.Uint32Traits.CastToBytes(c[:n]))
			d := array.NewData(arrow.PrimitiveTypes.Int32, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
			arrs[j] = array.NewInt32Data(d)
			d.Release()
		}
		rec := array.NewRecordBatch(schema, arrs, int64(n))
		for _, a := range arrs {
			a.Release()
		}
		return rec
	}
}

// batches records copies of the batches written.
type batches struct{ got [][][]int32 }

func (b *batches) Write(rec arrow.RecordBatch) error {
	cols := make([][]int32, rec.NumCols())
	for j := range cols {
		cols[j] = slices.Clone(rec.Column(j).(*array.Int32).Int32Values())
	}
	b.got = append(b.got, cols)
	return nil
}

// TestBlocksWritesWhatARebatcherWrites: for chunks of random sizes (empty
// ones, whole batches and ones longer than a batch included) and parts
// [lo, hi) of them,
// Blocks writes the batches a Rebatcher writes from the same rows, and
// keeps no reference to the chunks (they are overwritten after Write).
func TestBlocksWritesWhatARebatcherWrites(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32}, {Name: "b", Type: arrow.PrimitiveTypes.Int32}}, nil)
	mk := int32Batch(schema)
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		size := 1 + r.IntN(20)
		want, got := &batches{}, &batches{}
		rb := NewRebatcher(want, size)
		bl := NewBlocks(got, 2, size, mk)
		next := uint32(0)
		for range r.IntN(12) {
			n := r.IntN(3 * size)
			lo := r.IntN(n + 1)
			hi := lo + r.IntN(n-lo+1)
			if r.IntN(3) == 0 {
				// A whole batch, which Blocks writes from cols itself
				// when no rows are pending.
				n, lo, hi = size+2, 1, size+1
			}
			cols := [][]uint32{make([]uint32, n), make([]uint32, n)}
			for i := range n {
				cols[0][i], cols[1][i] = next, next*7
				next++
			}
			rec := mk(cols, n)
			part := rec.NewSlice(int64(lo), int64(hi))
			if err := rb.Write(part); err != nil {
				t.Fatal(err)
			}
			part.Release()
			rec.Release()
			if err := bl.Write(cols, lo, hi); err != nil {
				t.Fatal(err)
			}
			for j := range cols {
				for i := range cols[j] {
					cols[j][i] = 1 << 30
				}
			}
		}
		if err := rb.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := bl.Flush(); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got.got) != fmt.Sprint(want.got) {
			t.Fatalf("trial %d, size %d: Blocks wrote %v, the Rebatcher %v", trial, size, got.got, want.got)
		}
	}
}
