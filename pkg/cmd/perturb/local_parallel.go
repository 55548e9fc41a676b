package perturb

// firstBad keeps the first bad cell of a chunk in the order a row-by-row
// loop meets them: by row, then by column.
type firstBad struct {
	row, col int
	err      error
}

func (b *firstBad) add(row, col int, err error) {
	if b.err == nil || row < b.row || (row == b.row && col < b.col) {
		*b = firstBad{row, col, err}
	}
}
