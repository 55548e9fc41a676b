package table

import "github.com/apache/arrow-go/v18/arrow"

// GroupBytes is how many bytes of cells an Arrow output's record batch
// may hold before it is cut short of RowGroupRows rows (a shuffle's
// emitted batches take half). A wide table — bitflip's one-hot reports,
// an int32 column per category — would otherwise be held as RowGroupRows
// · 4 bytes a column, twice over while written: 0.5 MB a column, 105 MB
// at L = 200 bits. Tables of up to 32 four-byte columns or 8 strings
// (every stage's output on the bench, bitflip's L = 17 included) keep
// RowGroupRows rows.
//
// Parquet row groups keep RowGroupRows rows whatever the width: the
// footer holds ~300 bytes of metadata per column chunk until the file is
// closed, so shorter groups trade the groups' memory for the footer's,
// which grows with the rows (L = 200, 5M rows: 358 → 173 MB peak RSS, but
// 29 → 81 s, the heap at its limit).
const GroupBytes = 8 << 20

// minGroupRows is the fewest rows a group is cut to, however wide.
const minGroupRows = 64

// RowsWithin is the number of rows of schema that fit in bytes, at most
// most and at least 64 (minGroupRows), reckoning a row's cells at their
// width in a batch: 4 bytes an int32 or dictionary code, 8 an int64 or
// float64, 16 a string (its offset and ~12 bytes of text). It depends on
// the schema only, so a file's group boundaries, and thus its bytes,
// still depend on its rows only.
func RowsWithin(schema *arrow.Schema, bytes, most int) int {
	row := 0
	for _, f := range schema.Fields() {
		switch f.Type.ID() {
		case arrow.INT32, arrow.DICTIONARY, arrow.FLOAT32, arrow.UINT32:
			row += 4
		case arrow.INT64, arrow.FLOAT64, arrow.UINT64:
			row += 8
		default:
			row += 16
		}
	}
	if row == 0 {
		return most
	}
	return max(min(most, bytes/row), min(most, minGroupRows))
}
