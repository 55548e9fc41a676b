package shuffle

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
)

// TestMemoryBound checks the package doc's bound through the Shuffler's
// accounting, with a small budget in place of a large table: at every N,
// from rows held in memory through spilled buckets emitted whole to
// buckets scattered again once and twice, the bytes allocated for rows
// never exceed the budget (plus one block of positions, refBlock·8, for
// the row codec), the spill-file write buffers never exceed B of them, and
// at most B files per level are open. Rows of the row codec are 2 bytes in
// a spill file and 10 in memory (their positions dominate, which a check
// on file size alone would miss); bit-mode rows are 3 bytes and 8.
func TestMemoryBound(t *testing.T) {
	const budget, buckets = 256 << 10, 4
	buf := int64(max(4<<10, min(spillBuffer, budget/buckets)))
	for _, bitMode := range []bool{false, true} {
		// N and the deepest level of re-scattering it must reach: 0 with
		// the rows in memory or in buckets that fit, then 1 and 2.
		cases := []struct{ n, depth int }{{10_000, 0}, {80_000, 0}, {300_000, 1}, {1_000_000, 2}}
		if bitMode {
			cases = []struct{ n, depth int }{{20_000, 0}, {100_000, 0}, {400_000, 1}, {1_200_000, 2}}
		}
		for _, tc := range cases {
			t.Run(fmt.Sprintf("bits=%v/N=%d", bitMode, tc.n), func(t *testing.T) {
				cols := 1
				if bitMode {
					cols = 17
				}
				sch := bitSchema(cols)
				s, err := New(sch, rng.NewSeeded(uint64(tc.n)), Options{Budget: budget, Buckets: buckets, Dir: t.TempDir(), Bits: bitMode})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				const size = 10_000
				block := table.Block(cols, size)
				for off := 0; off < tc.n; off += size {
					for i := range size {
						for j := range cols {
							block[j][i] = uint32((off+i)>>j) & 1
						}
					}
					rec := table.Int32Batch(sch, block, size)
					if err := s.Write(rec); err != nil {
						t.Fatal(err)
					}
					rec.Release()
				}
				if s.Spilled() != (tc.n > 20_000) {
					t.Fatalf("spilled = %v at N = %d", s.Spilled(), tc.n)
				}
				var got, sum int64
				err = s.Emit(func(rec arrow.RecordBatch) error {
					got += rec.NumRows()
					for _, c := range rec.Columns() {
						for _, v := range c.(*array.Int32).Int32Values() {
							sum += int64(v)
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				var want int64
				for i := range tc.n {
					for j := range cols {
						want += int64(i >> j & 1)
					}
				}
				if got != int64(tc.n) || sum != want {
					t.Fatalf("%d rows out with %d ones, want %d with %d", got, sum, tc.n, want)
				}
				a := s.acct
				limit := int64(budget)
				if !bitMode {
					limit += refBlock * 8
				}
				t.Logf("peak held %d B, write buffers %d B, open files %d, depth %d", a.peakHeld, a.peakBufs, a.peakOpen, a.depth)
				if a.peakHeld > limit {
					t.Errorf("held %d bytes of rows at the peak, over the bound %d", a.peakHeld, limit)
				}
				if a.peakHeld < budget/4 {
					t.Errorf("held only %d bytes at the peak: the accounting misses the rows", a.peakHeld)
				}
				if a.peakBufs > buckets*buf {
					t.Errorf("%d bytes of write buffers at the peak, over %d buffers of %d", a.peakBufs, buckets, buf)
				}
				if a.peakOpen > buckets*(a.depth+1) {
					t.Errorf("%d spill files open at once at depth %d, over %d per level", a.peakOpen, a.depth, buckets)
				}
				if a.depth != tc.depth {
					t.Errorf("re-scattered to depth %d, want %d: N does not span the regime it is meant to", a.depth, tc.depth)
				}
				if a.held != 0 || a.bufs != 0 || a.open != 0 {
					t.Errorf("after Emit: %d bytes held, %d of buffers, %d files open", a.held, a.bufs, a.open)
				}
				if len(s.files) > 0 {
					t.Errorf("%d spill files still referenced after Emit", len(s.files))
				}
			})
		}
	}
}

// TestHeldRowsAreOneFisherYates: rows held in memory past one block of
// positions (refBlock) come out in the order of one Fisher–Yates shuffle
// of 0..n−1 drawing r.IntN(i+1) for i = n−1 … 1 from the same source —
// the uniform shuffle of the package doc, exactly, whatever the blocks.
func TestHeldRowsAreOneFisherYates(t *testing.T) {
	const n = 3*refBlock + 17
	got, spilled, _ := run(t, n, 11, Options{})
	if spilled {
		t.Fatal("spilled")
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	r := rng.NewSeeded(11)
	for i := n - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		perm[i], perm[j] = perm[j], perm[i]
	}
	for k, row := range got {
		if idOf(row) != perm[k] {
			t.Fatalf("row %d is %d, want %d", k, idOf(row), perm[k])
		}
	}
}
