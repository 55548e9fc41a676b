package table

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DataError locates a problem in an input table: the file, the data row
// (1-based, header not counted; 0 when not about one row), the CSV line
// (0 when not known) and the column ("" when not about one column).
// Err says what is wrong and how to fix it.
type DataError struct {
	File   string
	Row    int64
	Line   int
	Column string
	Err    error
}

func (e *DataError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	switch {
	case e.Line > 0 && e.Row > 0:
		fmt.Fprintf(&b, ": line %d (row %d)", e.Line, e.Row)
	case e.Line > 0:
		fmt.Fprintf(&b, ": line %d", e.Line)
	case e.Row > 0:
		fmt.Fprintf(&b, ": row %d", e.Row)
	}
	if e.Column != "" {
		fmt.Fprintf(&b, ", column %s", QuoteCell(e.Column))
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *DataError) Unwrap() error { return e.Err }

// errorf makes a DataError about a whole file.
func errorf(file string, format string, args ...any) error {
	return &DataError{File: file, Err: fmt.Errorf(format, args...)}
}

// MaxQuotedCell is how many characters of a cell QuoteCell and ShortCell
// show.
const MaxQuotedCell = 80

// QuoteCell quotes a cell value for an error message (like %q), showing at
// most MaxQuotedCell characters: a message must stay one readable line even
// when the cell is a 10 MB blob. A cut value ends in "… (N bytes)". The cut
// falls between characters, never inside a UTF-8 sequence.
func QuoteCell(s string) string {
	head, cut := cutCell(s)
	if !cut {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(head), len(s))
}

// ShortCell is QuoteCell without the quotes, for lists of values.
func ShortCell(s string) string {
	head, cut := cutCell(s)
	if !cut {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", head, len(s))
}

// cutCell returns the first MaxQuotedCell characters of s (an invalid
// UTF-8 byte counts as one) and whether that is less than s.
func cutCell(s string) (string, bool) {
	end, n := 0, 0
	for end < len(s) && n < MaxQuotedCell {
		_, size := utf8.DecodeRuneInString(s[end:])
		end += size
		n++
	}
	return s[:end], end < len(s)
}
