package table

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// metaLinePrefix starts the optional first line of a CSV stream that carries
// pramkit metadata when there is no file for a sidecar.
const metaLinePrefix = "#pramkit "

// csvReader reads RFC 4180 CSV with a header row. Every column is read as
// utf8: the data is categorical, and type inference from the first rows
// goes wrong on values like "007" (see DEPENDENCIES.md). Empty fields are
// empty strings, not nulls.
type csvReader struct {
	name   string
	file   *os.File
	s      *csvScanner
	schema *arrow.Schema
	meta   Meta
	batch  int
	cur    arrow.RecordBatch
	rows   int64
	done   bool
}

func openCSV(name, path string, file *os.File, br *bufio.Reader, opt ReadOptions) (rd Reader, err error) {
	defer func() {
		if err != nil && file != nil {
			file.Close()
		}
	}()
	meta := Meta{}
	skipped := 0 // lines before the header, for line numbers in errors
	// A "#pramkit {…}" first line carries the metadata of a CSV stream.
	if head, _ := br.Peek(len(metaLinePrefix)); string(head) == metaLinePrefix {
		line, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		m, err := decodeSidecar([]byte(strings.TrimSpace(line[len(metaLinePrefix):])))
		if err != nil {
			return nil, &DataError{File: name, Line: 1, Err: fmt.Errorf("the #pramkit metadata line is not valid: %v; remove the line or rewrite the file with the stage that made it", err)}
		}
		meta = m
		skipped = 1
	} else if !IsStdio(path) {
		b, err := os.ReadFile(sidecarPath(path))
		switch {
		case err == nil:
			m, err := decodeSidecar(b)
			if err != nil {
				return nil, fmt.Errorf("%s: metadata sidecar is not valid: %v; delete it or rewrite the file with the stage that made it", sidecarPath(path), err)
			}
			meta = m
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("%s: %w", sidecarPath(path), unwrapPathError(err))
		}
	}
	// Skip a UTF-8 byte-order mark, which spreadsheet exports add.
	if bom, _ := br.Peek(3); bytes.Equal(bom, []byte{0xef, 0xbb, 0xbf}) {
		br.Discard(3)
	}
	// encoding/csv reads the header (it consumes exactly its lines from br);
	// the scanner reads the records.
	r := csv.NewReader(br)
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, errorf(name, "the file is empty: a table needs at least a header row")
	}
	if err != nil {
		return nil, csvError(name, err, 0, skipped)
	}
	fields := make([]arrow.Field, len(header))
	seen := make(map[string]int, len(header))
	for i, h := range header {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, &DataError{File: name, Line: skipped + 1, Err: fmt.Errorf("column %d of the header row has no name; name every column", i+1)}
		}
		if j, dup := seen[h]; dup {
			return nil, &DataError{File: name, Line: skipped + 1, Err: fmt.Errorf("columns %d and %d are both named %s; give every column a distinct name", j+1, i+1, QuoteCell(h))}
		}
		seen[h] = i
		fields[i] = arrow.Field{Name: h, Type: arrow.BinaryTypes.String}
	}
	line, _ := r.FieldPos(len(header) - 1)
	line += strings.Count(header[len(header)-1], "\n")
	c := &csvReader{
		name:   name,
		file:   file,
		s:      newCSVScanner(br, len(header), skipped+line),
		schema: arrow.NewSchema(fields, nil),
		meta:   meta,
		batch:  opt.BatchSize,
	}
	return c, nil
}

// csvError turns encoding/csv's errors into one-line DataErrors with a fix.
func csvError(name string, err error, row int64, lineOffset int) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		var why string
		switch {
		case errors.Is(pe.Err, csv.ErrFieldCount):
			why = "the row has a different number of fields than the header; every row needs one value per column (quote values that contain commas)"
		case errors.Is(pe.Err, csv.ErrQuote), errors.Is(pe.Err, csv.ErrBareQuote):
			why = "a quote is misplaced; RFC 4180 wants a field that contains quotes wrapped in quotes, with inner quotes doubled"
		default:
			why = pe.Err.Error()
		}
		return &DataError{File: name, Line: pe.StartLine + lineOffset, Row: row, Err: errors.New(why)}
	}
	return fmt.Errorf("%s: %w", name, err)
}

func (c *csvReader) Name() string          { return c.name }
func (c *csvReader) Format() Format        { return CSV }
func (c *csvReader) Schema() *arrow.Schema { return c.schema }
func (c *csvReader) Meta() Meta            { return c.meta }
func (c *csvReader) RowsRead() int64       { return c.rows }
func (c *csvReader) NumRows() int64        { return -1 }

func (c *csvReader) Next() (arrow.RecordBatch, error) {
	if c.cur != nil {
		c.cur.Release()
		c.cur = nil
	}
	if c.done {
		return nil, io.EOF
	}
	n := 0
	for n < c.batch {
		err := c.s.readRecord()
		if errors.Is(err, io.EOF) {
			c.done = true
			break
		}
		if err != nil {
			c.s.reset()
			return nil, csvError(c.name, err, c.rows+int64(n)+1, 0)
		}
		n++
	}
	if n == 0 {
		return nil, io.EOF
	}
	cols, err := c.s.batch(n)
	if err != nil {
		return nil, &DataError{File: c.name, Row: c.rows + 1, Err: err}
	}
	c.cur = array.NewRecordBatch(c.schema, cols, int64(n))
	for _, a := range cols {
		a.Release()
	}
	c.rows += int64(n)
	return c.cur, nil
}

func (c *csvReader) Close() error {
	if c.cur != nil {
		c.cur.Release()
		c.cur = nil
	}
	if c.file != nil {
		return c.file.Close()
	}
	return nil
}
