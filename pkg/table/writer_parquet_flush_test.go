package table

import (
	"bytes"
	"testing"
)

// TestParquetEarlyPageFlushGivesTheSameBytes: encoding a dictionary
// column's page on its own goroutine (flushDictPage) writes the file Close
// would have written, byte for byte, for every kind of column the writer
// meets (rowGroupTestBatch: codes, large ints, categorical and unique
// strings, nullable columns, codebook labels…) — for row groups of one
// row, of a few batches, and large enough that other columns flush pages
// in the middle of a write (1<<18 int32 cells: exactly one 1 MiB page,
// nothing left to flush).
func TestParquetEarlyPageFlushGivesTheSameBytes(t *testing.T) {
	write := func(early bool, sizes []int) []byte {
		defer func(old bool) { earlyPageFlush = old }(earlyPageFlush)
		earlyPageFlush = early
		n := 0
		for _, s := range sizes {
			n += s
		}
		rec := rowGroupTestBatch(n)
		defer rec.Release()
		// One row group of all the rows.
		p, data := writeInBatches(t, rec, sizes, n)
		readBackEquals(t, p, rec)
		return data
	}
	for _, sizes := range [][]int{{1}, {1000, 3, 5000}, {300_000}, {1 << 18}} {
		on, off := write(true, sizes), write(false, sizes)
		if !bytes.Equal(on, off) {
			t.Errorf("batches %v: %d bytes with the early flush, %d without, not the same", sizes, len(on), len(off))
		}
	}
}
