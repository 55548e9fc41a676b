package table

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// csvScanner parses RFC 4180 records straight into the value and offset
// buffers of Arrow string columns. It follows encoding/csv's rules exactly
// (comma separator, no comments, strict quotes, \r\n read as \n, blank lines
// skipped, one fixed field count) — FuzzCSVScannerMatchesEncodingCSV checks
// it against encoding/csv — but skips encoding/csv's per-record string and
// Arrow's per-value builder calls, which together cost ~2/3 of the time of
// reading a categorical CSV.
type csvScanner struct {
	br      *bufio.Reader
	raw     []byte // a line longer than br's buffer
	numLine int    // lines consumed so far
	ncols   int
	data    [][]byte  // per column: the batch's value bytes
	offs    [][]int32 // per column: the batch's value offsets
}

func newCSVScanner(br *bufio.Reader, ncols, firstLine int) *csvScanner {
	s := &csvScanner{br: br, ncols: ncols, numLine: firstLine,
		data: make([][]byte, ncols), offs: make([][]int32, ncols)}
	for j := range s.offs {
		s.offs[j] = []int32{0}
	}
	return s
}

// readLine is encoding/csv's readLine: one line with its newline (\r\n
// normalised to \n), or what is left before EOF.
func (s *csvScanner) readLine() ([]byte, error) {
	line, err := s.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.raw = append(s.raw[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = s.br.ReadSlice('\n')
			s.raw = append(s.raw, line...)
		}
		line = s.raw
	}
	if n := len(line); n > 0 && err == io.EOF {
		err = nil
		if line[n-1] == '\r' {
			line = line[:n-1]
		}
	}
	s.numLine++
	if n := len(line); n >= 2 && line[n-2] == '\r' && line[n-1] == '\n' {
		line[n-2] = '\n'
		line = line[:n-1]
	}
	return line, err
}

func lengthNL(b []byte) int {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		return 1
	}
	return 0
}

// field appends bytes to column j of the current row (fields past the last
// column are counted but not kept).
func (s *csvScanner) field(j int, b []byte) {
	if j < s.ncols {
		s.data[j] = append(s.data[j], b...)
	}
}

// endField closes column j's value.
func (s *csvScanner) endField(j int) {
	if j < s.ncols {
		s.offs[j] = append(s.offs[j], int32(len(s.data[j])))
	}
}

// readRecord appends one record to the column buffers. It returns io.EOF
// at the end, or a *csv.ParseError as encoding/csv would.
func (s *csvScanner) readRecord() error {
	var (
		line    []byte
		errRead error
	)
	for errRead == nil {
		line, errRead = s.readLine()
		if errRead == nil && len(line) == lengthNL(line) {
			line = nil
			continue // blank line
		}
		break
	}
	if errRead == io.EOF {
		return io.EOF
	}
	recLine := s.numLine
	col := 1 // position for error messages, as encoding/csv counts it
	posLine := s.numLine
	nf := 0
	var err error
parseField:
	for {
		if len(line) == 0 || line[0] != '"' {
			i := bytes.IndexByte(line, ',')
			f := line
			if i >= 0 {
				f = f[:i]
			} else {
				f = f[:len(f)-lengthNL(f)]
			}
			if j := bytes.IndexByte(f, '"'); j >= 0 {
				err = &csv.ParseError{StartLine: recLine, Line: s.numLine, Column: col + j, Err: csv.ErrBareQuote}
				break parseField
			}
			s.field(nf, f)
			s.endField(nf)
			nf++
			if i >= 0 {
				line = line[i+1:]
				col += i + 1
				continue parseField
			}
			break parseField
		}
		// Quoted field.
		line = line[1:]
		col++
		for {
			i := bytes.IndexByte(line, '"')
			switch {
			case i >= 0:
				s.field(nf, line[:i])
				line = line[i+1:]
				col += i + 1
				switch {
				case len(line) > 0 && line[0] == '"':
					s.field(nf, line[:1])
					line = line[1:]
					col++
				case len(line) > 0 && line[0] == ',':
					line = line[1:]
					col++
					s.endField(nf)
					nf++
					continue parseField
				case lengthNL(line) == len(line):
					s.endField(nf)
					nf++
					break parseField
				default:
					err = &csv.ParseError{StartLine: recLine, Line: s.numLine, Column: col - 1, Err: csv.ErrQuote}
					break parseField
				}
			case len(line) > 0:
				s.field(nf, line)
				if errRead != nil {
					break parseField
				}
				col += len(line)
				line, errRead = s.readLine()
				if len(line) > 0 {
					posLine++
					col = 1
				}
				if errRead == io.EOF {
					errRead = nil
				}
			default:
				if errRead == nil {
					err = &csv.ParseError{StartLine: recLine, Line: posLine, Column: col, Err: csv.ErrQuote}
					break parseField
				}
				s.endField(nf)
				nf++
				break parseField
			}
		}
	}
	if err == nil {
		err = errRead
	}
	if err == nil && nf != s.ncols {
		err = &csv.ParseError{StartLine: recLine, Line: recLine, Column: 1, Err: csv.ErrFieldCount}
	}
	return err
}

// batch hands out the rows scanned so far as string arrays and starts new
// buffers (the arrays keep the old ones).
func (s *csvScanner) batch(rows int) ([]arrow.Array, error) {
	cols := make([]arrow.Array, s.ncols)
	for j := range cols {
		if len(s.data[j]) > math.MaxInt32 {
			return nil, errors.New("a column holds more than 2 GiB of text in one batch; values this long are not categories")
		}
		offs := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(s.offs[j]))
		data := memory.NewBufferBytes(s.data[j])
		d := array.NewData(arrow.BinaryTypes.String, rows, []*memory.Buffer{nil, offs, data}, nil, 0, 0)
		cols[j] = array.NewStringData(d)
		d.Release()
		s.data[j] = make([]byte, 0, cap(s.data[j]))
		s.offs[j] = make([]int32, 1, cap(s.offs[j]))
	}
	return cols, nil
}

// reset drops a partly scanned batch.
func (s *csvScanner) reset() {
	for j := range s.data {
		s.data[j] = s.data[j][:0]
		s.offs[j] = s.offs[j][:1]
	}
}
