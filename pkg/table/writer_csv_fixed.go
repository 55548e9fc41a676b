package table

import "slices"

// cellWidth bounds the formatted cells, separator included, that
// formatFixedRows copies as one fixed-size move.
const cellWidth = 32

// fixedCells prepares formatFixedRows for a batch whose columns are all
// dictionary indices (CodesBatch, Parquet dictionaries) with every entry
// at most cellWidth bytes formatted and followed by its separator: each
// column gets its entries padded to cellWidth bytes, the separator (a
// comma, a newline after the last column) included. It tells whether it
// did. A lone column is left to formatCSVRows (its empty cells are
// quoted).
//
// Why: copying a cell of a few bytes with append costs a call of memmove
// and a capacity check per cell; at 10M rows of 4 columns that was a
// third of decrypt → CSV on one core (csvColumn.append, memmove and
// formatCSVRows: 0.43 s of 1.3 s).
func fixedCells(cols []csvColumn) bool {
	if len(cols) < 2 {
		return false
	}
	for j := range cols {
		if cols[j].idx == nil || cols[j].enc == nil {
			return false
		}
		for _, e := range cols[j].enc {
			if len(e)+1 > cellWidth {
				return false
			}
		}
	}
	for j := range cols {
		c := &cols[j]
		sep := byte(',')
		if j == len(cols)-1 {
			sep = '\n'
		}
		c.cells = make([][cellWidth]byte, len(c.enc))
		c.cellLen = make([]uint8, len(c.enc))
		for k, e := range c.enc {
			copy(c.cells[k][:], e)
			c.cells[k][len(e)] = sep
			c.cellLen[k] = uint8(len(e) + 1)
		}
	}
	return true
}

// formatFixedRows is formatCSVRows for columns prepared by fixedCells:
// a row is one fixed-size copy per cell into spare capacity, the bytes
// past the cell overwritten by the next one.
func formatFixedRows(dst []byte, cols []csvColumn, from, to int) []byte {
	rowMax := len(cols) * cellWidth
	n := len(dst)
	buf := dst[:cap(dst)]
	for i := from; i < to; i++ {
		if len(buf)-n < rowMax {
			buf = slices.Grow(buf[:n], rowMax)
			buf = buf[:cap(buf)]
		}
		for j := range cols {
			c := &cols[j]
			k := c.idx[i]
			*(*[cellWidth]byte)(buf[n:]) = c.cells[k]
			n += int(c.cellLen[k])
		}
	}
	return buf[:n]
}
