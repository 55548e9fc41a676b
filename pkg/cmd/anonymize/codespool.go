package anonymize

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/pramkit/pramkit/pkg/table"
)

// codeSpoolLabels is the sensitive labels (all columns) past which A′ and
// Anatomy spool pass 1's value indexes for pass 2 (codeSpool) rather than
// look every label up again. Below it the label table is small and its
// lookups hit the cache, so the file would cost more than it saves.
const codeSpoolLabels = 1 << 16

// spoolEnd marks a row --missing drop removed (no value index is this
// large: a column has at most 2^32 − 1 labels).
const spoolEnd = ^uint32(0)

// codeSpool holds pass 1's value indexes of the sensitive columns, row by
// input row (4 bytes a cell; a row --missing drop removed has spoolEnd in
// its first), in a private temporary file, for pass 2 to read back in the
// same order. Pass 2 then needs no label table: at 2M labels that table
// is 12 MB of anonymize's peak, which pass 2 (the dealers, the labels,
// the batches) reaches, and a lookup per row into it (a cache miss or
// more each) is replaced by 4 bytes read in sequence. The file is the
// sensitive column in codes, as private as the input: unlinked at once
// (table.Scratch).
type codeSpool struct {
	f    *os.File
	done func()
	w    *bufio.Writer
	r    *bufio.Reader
	cols int
	buf  []byte
	rows int64 // rows written by pass 1
	read int64 // rows read back by pass 2
}

func newCodeSpool(cols int) (*codeSpool, error) {
	f, done, err := table.Scratch("pramkit-anonymize-codes-*")
	if err != nil {
		return nil, spoolError(err)
	}
	return &codeSpool{f: f, done: done, w: bufio.NewWriterSize(f, 64<<10), cols: cols}, nil
}

func spoolError(err error) error {
	return fmt.Errorf("cannot keep the sensitive values' codes between the passes in a temporary file (in %s; set TMPDIR to a folder with room): %w", os.TempDir(), err)
}

// write appends a batch of n input rows: kept lists the rows --missing
// drop keeps, and idx[k][m] is column k's value index of the m-th of them
// (globalRun.keptRows).
func (s *codeSpool) write(n int, kept []int, idx [][]uint32) error {
	s.buf = s.buf[:0]
	m := 0
	for i := range n {
		if m < len(kept) && kept[m] == i {
			for k := range s.cols {
				s.buf = binary.LittleEndian.AppendUint32(s.buf, idx[k][m])
			}
			m++
			continue
		}
		for range s.cols {
			s.buf = binary.LittleEndian.AppendUint32(s.buf, spoolEnd)
		}
	}
	s.rows += int64(n)
	if _, err := s.w.Write(s.buf); err != nil {
		return spoolError(err)
	}
	return nil
}

// rewind ends pass 1's writing and starts pass 2's reading.
func (s *codeSpool) rewind() error {
	if err := s.w.Flush(); err != nil {
		return spoolError(err)
	}
	s.w = nil
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return spoolError(err)
	}
	s.r = bufio.NewReaderSize(s.f, 64<<10)
	return nil
}

// errInputChanged is the error of a pass 2 whose input has other rows than
// pass 1's.
var errInputChanged = errors.New("the second pass read more rows than the first (did the input change between the passes?)")

// readRows reads back the next n rows, as globalRun.keptRows would make
// them: the kept rows' list (into kept) and their value indexes (into
// idx), and how many rows --missing drop removed.
func (s *codeSpool) readRows(n int, kept []int, idx [][]uint32) ([]int, int64, error) {
	if s.read+int64(n) > s.rows {
		return nil, 0, errInputChanged
	}
	s.buf = slices.Grow(s.buf[:0], 4*s.cols*n)[:4*s.cols*n]
	if _, err := io.ReadFull(s.r, s.buf); err != nil {
		return nil, 0, spoolError(err)
	}
	s.read += int64(n)
	for k := range idx {
		idx[k] = idx[k][:0]
	}
	var missing int64
	b := s.buf
	for i := range n {
		if binary.LittleEndian.Uint32(b) == spoolEnd {
			missing++
			b = b[4*s.cols:]
			continue
		}
		for k := range s.cols {
			idx[k] = append(idx[k], binary.LittleEndian.Uint32(b[4*k:]))
		}
		b = b[4*s.cols:]
		kept = append(kept, i)
	}
	return kept, missing, nil
}

// finish checks that pass 2 read every row pass 1 wrote.
func (s *codeSpool) finish() error {
	if s.read != s.rows {
		return fmt.Errorf("the second pass read %d rows, the first %d (did the input change between the passes?)", s.read, s.rows)
	}
	return nil
}

// close removes the file; safe on nil.
func (s *codeSpool) close() {
	if s != nil && s.done != nil {
		s.done()
		s.done = nil
	}
}
