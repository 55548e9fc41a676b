package table

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// validateBatch checks that every cell of a decoded batch can be read
// without going out of bounds. The Arrow IPC and Parquet decoders trust the
// lengths and offsets they find in the file, and Arrow's accessors do not
// bounds-check, so a corrupt file would otherwise panic (or read the wrong
// bytes) wherever a tool reads a value. It checks, per column: the length
// matches the batch's row count; buffers are long enough for the length
// (array.Validate, recursively); string and binary offsets are
// non-decreasing and within the data; dictionary indices are below the
// dictionary's length. O(rows): one pass over offsets and indices, none over
// string bytes.
//
// Unlike array.ValidateFull it does not require utf8 columns to be valid
// UTF-8: the CSV reader takes bytes as they come, so a Latin-1 CSV turned
// into Arrow by an earlier tool must read back, and a wrong byte in a value
// is no memory-safety risk.
func validateBatch(rec arrow.RecordBatch) error { return validateChecked(rec, nil) }

// validateChecked is validateBatch where arrErrs, when not nil, holds
// validateArray's result for each column, computed beforehand (the Parquet
// reader checks each column on its decoding goroutine, so that the
// O(rows) checks run on all cores); the error is validateBatch's.
func validateChecked(rec arrow.RecordBatch, arrErrs []error) error {
	s := rec.Schema()
	if rec.NumRows() < 0 || rec.NumRows() > math.MaxInt32 {
		return fmt.Errorf("the batch claims %d rows", rec.NumRows())
	}
	if int(rec.NumCols()) != s.NumFields() {
		return fmt.Errorf("the batch has %d columns but the schema %d", rec.NumCols(), s.NumFields())
	}
	for j, col := range rec.Columns() {
		if int64(col.Len()) != rec.NumRows() {
			return fmt.Errorf("column %s has %d values in a batch of %d rows", QuoteCell(s.Field(j).Name), col.Len(), rec.NumRows())
		}
		if !arrow.TypeEqual(col.DataType(), s.Field(j).Type) {
			return fmt.Errorf("column %s is %s but the schema says %s", QuoteCell(s.Field(j).Name), col.DataType(), s.Field(j).Type)
		}
		var err error
		if arrErrs != nil {
			err = arrErrs[j]
		} else {
			err = validateArray(col)
		}
		if err != nil {
			return fmt.Errorf("column %s: %v", QuoteCell(s.Field(j).Name), err)
		}
	}
	return nil
}

func validateArray(a arrow.Array) error {
	if err := array.Validate(a); err != nil {
		return err
	}
	switch c := a.(type) {
	case *array.String:
		return checkOffsets(c.ValueOffsets(), len(c.ValueBytes()))
	case *array.LargeString:
		return checkOffsets(c.ValueOffsets(), len(c.ValueBytes()))
	case *array.Dictionary:
		dict := c.Dictionary()
		n := dict.Len()
		if idx, ok := c.Indices().(*array.Int32); ok && c.NullN() == 0 {
			// What pqarrow returns: one compare per row.
			for i, k := range idx.Int32Values() {
				if uint32(k) >= uint32(n) {
					return fmt.Errorf("value %d points to dictionary entry %d of %d", i+1, k, n)
				}
			}
			return validateArray(dict)
		}
		for i := range c.Len() {
			if c.IsNull(i) {
				continue
			}
			if k := c.GetValueIndex(i); k < 0 || k >= n {
				return fmt.Errorf("value %d points to dictionary entry %d of %d", i+1, k, n)
			}
		}
		return validateArray(dict)
	}
	// Other types (numbers, binary, nested): Arrow's full check, which for
	// utf8 nested in a list or struct also checks UTF-8.
	return array.ValidateFull(a)
}

// checkOffsets checks the offsets of a variable-width column (already
// checked by array.Validate to cover length+1 entries whose first and last
// lie within the data): every offset lies in [0, size] and none decreases.
func checkOffsets[T int32 | int64](offs []T, size int) error {
	for i, o := range offs {
		if o < 0 || int64(o) > int64(size) {
			return fmt.Errorf("value offset %d at index %d is outside the %d bytes of data", o, i, size)
		}
		if i > 0 && o < offs[i-1] {
			return fmt.Errorf("value offsets decrease at index %d (%d < %d)", i, o, offs[i-1])
		}
	}
	return nil
}

// maxDecodeAlloc caps one allocation by the Arrow IPC and Parquet decoders.
// They size buffers from lengths read from the file before reading the
// bytes, so a corrupt length asks for gigabytes and kills the process with
// an out-of-memory error no recover can catch. 256 MiB matches arrow-go's
// own default limit on an IPC message body (WithBodySizeLimit, which its
// stream reader forgets to apply), about 4 million rows of a text column.
const maxDecodeAlloc = 256 << 20

// cappedAllocator is memory.DefaultAllocator refusing allocations over max.
type cappedAllocator struct {
	memory.Allocator
	max int
}

// tooLarge is the panic value of a refused allocation; the readers'
// recover turns it into an error.
type tooLarge struct{ size, max int }

func (e tooLarge) Error() string {
	return fmt.Sprintf("a buffer of %d bytes is declared, more than the %d-byte limit", e.size, e.max)
}

func (c cappedAllocator) Allocate(size int) []byte {
	if size > c.max || size < 0 {
		panic(tooLarge{size, c.max})
	}
	return c.Allocator.Allocate(size)
}

func (c cappedAllocator) Reallocate(size int, b []byte) []byte {
	if size > c.max || size < 0 {
		panic(tooLarge{size, c.max})
	}
	return c.Allocator.Reallocate(size, b)
}

var decodeAllocator memory.Allocator = cappedAllocator{memory.DefaultAllocator, maxDecodeAlloc}
