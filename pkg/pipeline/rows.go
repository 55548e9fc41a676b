package pipeline

import (
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/table"
)

// SelectRows returns a reader of rows [skip, skip+n) of r: the batches that
// overlap the range, sliced (no copy). It is how perturb and decrypt
// --first-row work on a part of a file that holds more rows; the rows
// before skip are read and passed over, and reading stops at skip+n. A
// file with fewer rows ends early: the caller's row count check sees it
// (RowsRead counts the selected rows only).
func SelectRows(r table.Reader, skip, n int64) table.Reader {
	return &rowSelect{Reader: r, skip: skip, n: n}
}

type rowSelect struct {
	table.Reader
	skip, n   int64
	pos, read int64
	cur       arrow.RecordBatch
}

func (s *rowSelect) Next() (arrow.RecordBatch, error) {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	for s.read < s.n {
		rec, err := s.Reader.Next()
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if err != nil {
			return nil, err
		}
		rows := rec.NumRows()
		start := s.pos
		s.pos += rows
		lo := max(s.skip-start, 0)
		hi := min(rows, s.skip+s.n-start)
		if lo >= hi {
			continue
		}
		s.cur = rec.NewSlice(lo, hi)
		s.read += hi - lo
		return s.cur, nil
	}
	return nil, io.EOF
}

func (s *rowSelect) RowsRead() int64 { return s.read }

// NumRows is the selected rows the file holds, when its format records a
// row count.
func (s *rowSelect) NumRows() int64 {
	u := s.Reader.NumRows()
	if u < 0 {
		return -1
	}
	return min(max(u-s.skip, 0), s.n)
}

func (s *rowSelect) Close() error {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	return s.Reader.Close()
}
