package table

import (
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"

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
	buf     []byte // the chunk being scanned: whole records, see csvSplitter
	pos     int
	last    bool // buf ends where the input ends (else at a record boundary)
	numLine int  // lines consumed so far
	// quoteAt is the index in buf of the first quote at or after pos, or
	// len(buf) if none; less than pos when not yet searched (readPlain).
	quoteAt int
	ends    []int // readPlain's scratch: where the record's fields end
	ncols   int
	keep    []bool    // per column: whether it is read (project)
	sel     []int     // the columns read, in order
	data    [][]byte  // per column: the batch's value bytes (a coded column's: the field being read)
	offs    [][]int32 // per column: the batch's value offsets
	// pool, when set, lends the batches' buffers and takes them back
	// once the caller has released the batch (ReadOptions.ReuseBuffers).
	pool *poolAllocator

	// Columns read as codes (ReadOptions.Labels): per column, the labels
	// (nil for text), the batch's codes, and the batch's cells that are
	// no label, numbered after the labels in order of first appearance.
	labels    []*Labels
	codes     [][]int32
	extra     []map[string]int32
	extraData [][]byte
	extraOffs [][]int32
}

// code reads the columns that labels names (per column, nil for text) as
// codes over those labels.
func (s *csvScanner) code(labels []*Labels) {
	if labels == nil {
		return
	}
	s.labels = labels
	s.codes = make([][]int32, s.ncols)
	s.extra = make([]map[string]int32, s.ncols)
	s.extraData = make([][]byte, s.ncols)
	s.extraOffs = make([][]int32, s.ncols)
	for j, l := range labels {
		if l != nil {
			s.extra[j] = map[string]int32{}
			s.extraOffs[j] = []int32{0}
		}
	}
}

func newCSVScanner(ncols int) *csvScanner {
	s := &csvScanner{ncols: ncols, data: make([][]byte, ncols), offs: make([][]int32, ncols)}
	for j := range s.offs {
		s.offs[j] = []int32{0}
	}
	s.project(nil)
	return s
}

// project makes batch build only the columns sel (nil: all). The other
// fields are still scanned — a record is checked whole — but their bytes
// are not copied.
func (s *csvScanner) project(sel []int) {
	s.keep = make([]bool, s.ncols)
	if sel == nil {
		sel = make([]int, s.ncols)
		for j := range sel {
			sel[j] = j
		}
	}
	s.sel = sel
	for _, j := range sel {
		s.keep[j] = true
	}
}

// setInput starts scanning chunk buf; line numbers restart at 1.
func (s *csvScanner) setInput(buf []byte, last bool) {
	s.buf, s.pos, s.last, s.numLine, s.quoteAt = buf, 0, last, 0, -1
}

// errChunkCut is readLine's error at the end of a chunk that is not the
// input's end, in the middle of a record; csvSplitter cuts chunks at record
// boundaries, so only a record longer than maxCSVRecord gets here.
var errChunkCut = fmt.Errorf("the record runs on for more than %d MiB: a quote is missing or misplaced (RFC 4180 wants a field that contains quotes wrapped in quotes, with inner quotes doubled), or this is not a table of categories", maxCSVRecord>>20)

// readLine is encoding/csv's readLine over the chunk: one line with its
// newline ("\r\n" is left as it is: lengthNL counts it as the newline, and
// values inside quotes get "\n" instead), or what is left before the end of
// the input, without a final "\r". It never writes to the chunk, which the
// sidecar check may be hashing at the same time.
func (s *csvScanner) readLine() ([]byte, error) {
	rest := s.buf[s.pos:]
	if len(rest) == 0 {
		if s.last {
			return nil, io.EOF
		}
		return nil, errChunkCut
	}
	line := rest
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		line = rest[:i+1]
		s.pos += i + 1
	} else {
		if !s.last {
			return nil, errChunkCut // a line cut by a forced chunk end
		}
		s.pos = len(s.buf)
		if n := len(line); line[n-1] == '\r' {
			line = line[:n-1]
		}
	}
	s.numLine++
	return line, nil
}

// lengthNL is the length of b's newline: 2 for "\r\n", 1 for "\n", else 0.
func lengthNL(b []byte) int {
	n := len(b)
	switch {
	case n >= 2 && b[n-2] == '\r' && b[n-1] == '\n':
		return 2
	case n > 0 && b[n-1] == '\n':
		return 1
	}
	return 0
}

// field appends bytes to column j of the current row (fields past the last
// column are counted but not kept).
func (s *csvScanner) field(j int, b []byte) {
	if j < s.ncols && s.keep[j] {
		s.data[j] = append(s.data[j], b...)
	}
}

// endField closes column j's value.
func (s *csvScanner) endField(j int) {
	if j < s.ncols && s.keep[j] {
		if s.labels != nil && s.labels[j] != nil {
			s.endCode(j)
			return
		}
		s.offs[j] = append(s.offs[j], int32(len(s.data[j])))
	}
}

// endCode turns column j's value, gathered in data[j], into its code.
func (s *csvScanner) endCode(j int) {
	v := s.data[j]
	s.data[j] = v[:0]
	s.codePlain(j, v)
}

// codePlain appends the code of value v to column j: the label's, or one
// past the labels for a value that is none.
func (s *csvScanner) codePlain(j int, v []byte) {
	l := s.labels[j]
	if c, ok := l.code(v); ok {
		s.codes[j] = append(s.codes[j], int32(c))
		return
	}
	m := s.extra[j]
	k, ok := m[string(v)]
	if !ok {
		k = int32(len(m))
		m[string(v)] = k
		s.extraData[j] = append(s.extraData[j], v...)
		s.extraOffs[j] = append(s.extraOffs[j], int32(len(s.extraData[j])))
	}
	s.codes[j] = append(s.codes[j], int32(l.Len())+k)
}

// splitPlain appends the fields of a line without quotes or newline —
// the pieces between its commas — to the row and returns their number.
// The commas are found 8 bytes at a time (commaMask): a field is a few
// bytes, too short for a bytes.IndexByte call each to pay.
func (s *csvScanner) splitPlain(line []byte) int {
	nf, start, i := 0, 0, 0
	for ; i+8 <= len(line); i += 8 {
		for m := commaMask(binary.LittleEndian.Uint64(line[i:])); m != 0; m &= m - 1 {
			k := i + bits.TrailingZeros64(m)/8
			s.field(nf, line[start:k])
			s.endField(nf)
			nf++
			start = k + 1
		}
	}
	for ; i < len(line); i++ {
		if line[i] == ',' {
			s.field(nf, line[start:i])
			s.endField(nf)
			nf++
			start = i + 1
		}
	}
	s.field(nf, line[start:])
	s.endField(nf)
	return nf + 1
}

// commaMask has the high bit of each byte of x that is a comma set, and
// no other bit: x's bytes XOR ',' are zero exactly at the commas, and a
// byte b is zero iff neither b's high bit nor (b&0x7f)+0x7f's is set (no
// carry crosses bytes).
func commaMask(x uint64) uint64 {
	const lo7 = 0x7f7f7f7f7f7f7f7f
	t := x ^ 0x2c2c2c2c2c2c2c2c
	return ^((t&lo7 + lo7) | t | lo7)
}

// newlineMask is commaMask for '\n'.
func newlineMask(x uint64) uint64 {
	const lo7 = 0x7f7f7f7f7f7f7f7f
	t := x ^ 0x0a0a0a0a0a0a0a0a
	return ^((t&lo7 + lo7) | t | lo7)
}

// readPlain reads the next record when no quote comes before its newline,
// as in nearly every record: it returns false, having consumed nothing,
// when one does (or the chunk ends without a newline before the input's
// end), and readRecord's general path takes the record. One sweep of
// 8-byte words finds the commas and the newline together — where the
// general path searches the line for its newline, then for a quote, then
// for its commas — and the fields are appended only once the record is
// known whole, so a column left out (project) costs nothing. Blank lines
// are skipped as encoding/csv skips them.
func (s *csvScanner) readPlain() (bool, error) {
	if s.quoteAt < s.pos {
		s.quoteAt = len(s.buf)
		if i := bytes.IndexByte(s.buf[s.pos:], '"'); i >= 0 {
			s.quoteAt = s.pos + i
		}
	}
	b := s.buf[:s.quoteAt]
	for {
		start := s.pos
		if start == len(s.buf) {
			return true, io.EOF // the end of the input, or of the chunk
		}
		ends := s.ends[:0]
		end := -1 // the newline's index
		i := start
	words:
		for ; i+8 <= len(b); i += 8 {
			x := binary.LittleEndian.Uint64(b[i:])
			c := commaMask(x)
			if nl := newlineMask(x); nl != 0 {
				c &= (nl & -nl) - 1 // the commas before the newline
				for ; c != 0; c &= c - 1 {
					ends = append(ends, i+bits.TrailingZeros64(c)/8)
				}
				end = i + bits.TrailingZeros64(nl)/8
				break words
			}
			for ; c != 0; c &= c - 1 {
				ends = append(ends, i+bits.TrailingZeros64(c)/8)
			}
		}
		if end < 0 {
			for ; i < len(b); i++ {
				if b[i] == ',' {
					ends = append(ends, i)
				} else if b[i] == '\n' {
					end = i
					break
				}
			}
		}
		if cap(ends) != cap(s.ends) {
			s.ends = ends // grown (stored once: a store of a pointer is a write barrier while the GC runs)
		}
		next := end + 1
		if end < 0 {
			if len(b) < len(s.buf) || !s.last {
				return false, nil // a quote on the line, or a cut chunk
			}
			end, next = len(b), len(b) // the input's last line, without a newline
		}
		if end > start && b[end-1] == '\r' {
			end-- // "\r\n" is the newline, or a final "\r" is dropped
		}
		s.pos = next
		s.numLine++
		if end == start && len(ends) == 0 {
			continue // blank line
		}
		if len(ends)+1 != s.ncols {
			return true, &csv.ParseError{StartLine: s.numLine, Line: s.numLine, Column: 1, Err: csv.ErrFieldCount}
		}
		for _, j := range s.sel {
			lo, hi := start, end
			if j > 0 {
				lo = ends[j-1] + 1
			}
			if j < len(ends) {
				hi = ends[j]
			}
			if s.labels != nil && s.labels[j] != nil {
				s.codePlain(j, b[lo:hi])
				continue
			}
			s.appendCell(j, lo, hi)
			s.offs[j] = append(s.offs[j], int32(len(s.data[j])))
		}
		return true, nil
	}
}

// appendCell appends buf[lo:hi] to column j's bytes. A cell is a few
// bytes: it is copied 8 at a time when buf has 8 bytes past it and the
// column's buffer room for 8 past its end (the bytes stored past the cell
// are then overwritten by the next), not by memmove, whose call costs
// more than the copy.
func (s *csvScanner) appendCell(j, lo, hi int) {
	d := s.data[j]
	n, m := len(d), hi-lo
	if n+m+8 > cap(d) || hi+8 > len(s.buf) {
		s.data[j] = append(d, s.buf[lo:hi]...)
		return
	}
	w := d[n : n+m+8]
	for k := 0; k < m; k += 8 {
		binary.LittleEndian.PutUint64(w[k:], binary.LittleEndian.Uint64(s.buf[lo+k:]))
	}
	s.data[j] = s.data[j][:n+m] // its length alone is stored
}

// readRecord appends one record to the column buffers. It returns io.EOF
// at the end, or a *csv.ParseError as encoding/csv would.
func (s *csvScanner) readRecord() error {
	if ok, err := s.readPlain(); ok {
		return err
	}
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
	if errRead == io.EOF || errRead == errChunkCut {
		return io.EOF // the end of the input, or of the chunk
	}
	recLine := s.numLine
	col := 1 // position for error messages, as encoding/csv counts it
	posLine := s.numLine
	nf := 0
	if errRead == nil && bytes.IndexByte(line, '"') < 0 {
		// No quote on the line, as in nearly every record: its fields are
		// the pieces between commas. One search for a quote a line, not
		// one a field (a field is a few bytes: the call cost most).
		nf = s.splitPlain(line[:len(line)-lengthNL(line)])
		if nf != s.ncols {
			return &csv.ParseError{StartLine: recLine, Line: recLine, Column: 1, Err: csv.ErrFieldCount}
		}
		return nil
	}
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
				if lengthNL(line) == 2 {
					s.field(nf, line[:len(line)-2])
					s.field(nf, line[len(line)-1:])
					col--
				} else {
					s.field(nf, line)
				}
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
	if err == errChunkCut {
		err = &csv.ParseError{StartLine: recLine, Line: s.numLine, Column: 1, Err: errChunkCut}
	}
	if err == nil && nf != s.ncols {
		err = &csv.ParseError{StartLine: recLine, Line: recLine, Column: 1, Err: csv.ErrFieldCount}
	}
	return err
}

// batch hands out the rows scanned so far as string arrays and starts new
// buffers (the arrays keep the old ones).
func (s *csvScanner) batch(rows int) ([]arrow.Array, error) {
	cols := make([]arrow.Array, len(s.sel))
	for i, j := range s.sel {
		if s.labels != nil && s.labels[j] != nil {
			cols[i] = s.codeColumn(j, rows)
			continue
		}
		if len(s.data[j]) > math.MaxInt32 {
			return nil, errors.New("a column holds more than 2 GiB of text in one batch; values this long are not categories")
		}
		offs := s.buffer(arrow.Int32Traits.CastToBytes(s.offs[j]))
		data := s.buffer(s.data[j])
		d := array.NewData(arrow.BinaryTypes.String, rows, []*memory.Buffer{nil, offs, data}, nil, 0, 0)
		cols[i] = array.NewStringData(d)
		d.Release()
		offs.Release() // d holds its own references
		data.Release()
		s.data[j] = s.bytes(cap(s.data[j]))
		s.offs[j] = append(s.int32s(cap(s.offs[j])), 0)
	}
	return cols, nil
}

// buffer wraps b for a batch. With a pool (ReadOptions.ReuseBuffers), b
// goes back to it when the last array holding it is released; the caller
// releases the returned reference once an array holds b.
func (s *csvScanner) buffer(b []byte) *memory.Buffer {
	if s.pool == nil {
		return memory.NewBufferBytes(b)
	}
	return memory.NewBufferWithAllocator(b, s.pool)
}

// bytes is an empty slice of capacity n for the next batch: fresh, or
// from the pool (a released batch's, not cleared: only what is appended
// is read).
func (s *csvScanner) bytes(n int) []byte {
	if s.pool == nil {
		return make([]byte, 0, n)
	}
	return s.pool.allocate(n, false)[:0]
}

// int32s is bytes for int32 values.
func (s *csvScanner) int32s(n int) []int32 {
	if s.pool == nil {
		return make([]int32, 0, n)
	}
	return arrow.Int32Traits.CastFromBytes(s.pool.allocate(4*n, false))[:0]
}

// codeColumn hands out coded column j's rows as a dictionary array over
// its labels — their own dictionary, shared, when every cell was a label;
// else the labels followed by the batch's other values — and starts anew.
func (s *csvScanner) codeColumn(j, rows int) arrow.Array {
	l := s.labels[j]
	dict := l.dict.Data()
	if len(s.extra[j]) > 0 {
		dict = withExtras(l.dict, s.extraData[j], s.extraOffs[j])
		defer dict.Release()
	}
	codes := s.codes[j]
	cb := s.buffer(arrow.Int32Traits.CastToBytes(codes))
	d := array.NewData(DictType, rows, []*memory.Buffer{nil, cb}, nil, 0, 0)
	cb.Release()
	d.SetDictionary(dict)
	a := array.NewDictionaryData(d)
	d.Release()
	s.codes[j] = s.int32s(cap(codes))
	s.resetExtras(j)
	return a
}

// withExtras is the labels of dict followed by the values whose bytes
// and offsets are data and offs (offs[0] = 0).
func withExtras(dict *array.String, data []byte, offs []int32) arrow.ArrayData {
	n := dict.Len()
	base := dict.ValueOffsets()
	lo, hi := base[0], base[n]
	vals := append(append(make([]byte, 0, int(hi-lo)+len(data)), dict.ValueBytes()[:hi-lo]...), data...)
	all := make([]int32, 0, n+len(offs))
	for _, o := range base[:n+1] {
		all = append(all, o-lo)
	}
	for _, o := range offs[1:] {
		all = append(all, hi-lo+o)
	}
	return array.NewData(arrow.BinaryTypes.String, n+len(offs)-1, []*memory.Buffer{nil,
		memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(all)), memory.NewBufferBytes(vals)}, nil, 0, 0)
}

func (s *csvScanner) resetExtras(j int) {
	clear(s.extra[j])
	s.extraData[j] = s.extraData[j][:0]
	s.extraOffs[j] = s.extraOffs[j][:1]
}

// reset drops a partly scanned batch.
func (s *csvScanner) reset() {
	for j := range s.data {
		s.data[j] = s.data[j][:0]
		s.offs[j] = s.offs[j][:1]
		if s.labels != nil && s.labels[j] != nil {
			s.codes[j] = s.codes[j][:0]
			s.resetExtras(j)
		}
	}
}
