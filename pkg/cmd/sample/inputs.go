package sample

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/table"
)

// multiReader reads several files in order as one table: the same columns
// in each, rows numbered on across files, so that sampling by position
// draws what one run on the concatenated file draws. Every file is opened
// (and its header checked) before any row is read, so a mismatched file
// fails the run before any output.
type multiReader struct {
	rs   []table.Reader
	cur  int
	base int64 // rows of the files before cur
}

// openInputs opens paths as one table (one path: that file's reader).
func openInputs(open func(string) (table.Reader, error), paths []string) (table.Reader, error) {
	if len(paths) <= 1 {
		return open(firstPath(paths))
	}
	m := &multiReader{}
	for _, p := range paths {
		r, err := open(p)
		if err != nil {
			m.Close()
			return nil, err
		}
		m.rs = append(m.rs, r)
		if err := sameTable(m.rs[0], r); err != nil {
			m.Close()
			return nil, err
		}
	}
	return m, nil
}

func firstPath(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	return paths[0]
}

// sameTable checks that r has first's columns and metadata.
func sameTable(first, r table.Reader) error {
	a, b := columnNames(first.Schema()), columnNames(r.Schema())
	if !slices.Equal(a, b) {
		return fmt.Errorf("%s has columns %s but %s has %s; files read as one table need the same columns in the same order", r.Name(), strings.Join(b, ", "), first.Name(), strings.Join(a, ", "))
	}
	ma, mb := first.Meta(), r.Meta()
	if !maps.Equal(ma, mb) {
		keys := slices.Sorted(maps.Keys(ma))
		for k := range mb {
			if _, ok := ma[k]; !ok {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			if ma[k] != mb[k] {
				return fmt.Errorf("%s: metadata item %q is %q but %q in %s; files read as one table need the same metadata", r.Name(), k, mb[k], ma[k], first.Name())
			}
		}
	}
	return nil
}

func columnNames(s *arrow.Schema) []string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return names
}

// Name is the file being read (the last one once all are read).
func (m *multiReader) Name() string          { return m.rs[min(m.cur, len(m.rs)-1)].Name() }
func (m *multiReader) Format() table.Format  { return m.rs[0].Format() }
func (m *multiReader) Schema() *arrow.Schema { return m.rs[0].Schema() }
func (m *multiReader) Meta() table.Meta      { return m.rs[0].Meta() }
func (m *multiReader) NumRows() int64        { return -1 }

// RowsRead counts rows over all files read so far.
func (m *multiReader) RowsRead() int64 {
	if m.cur >= len(m.rs) {
		return m.base
	}
	return m.base + m.rs[m.cur].RowsRead()
}

// fileRow is the 1-based row within the current file of the 0-based
// position pos over all files.
func (m *multiReader) fileRow(pos int64) int64 { return pos - m.base + 1 }

func (m *multiReader) Next() (arrow.RecordBatch, error) {
	for m.cur < len(m.rs) {
		rec, err := m.rs[m.cur].Next()
		if errors.Is(err, io.EOF) {
			m.base += m.rs[m.cur].RowsRead()
			m.cur++
			continue
		}
		return rec, err
	}
	return nil, io.EOF
}

func (m *multiReader) Close() error {
	var errs []error
	for _, r := range m.rs {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}

// names is the input's name for messages about the whole table.
func names(in table.Reader) string {
	if m, ok := in.(*multiReader); ok {
		ns := make([]string, len(m.rs))
		for i, r := range m.rs {
			ns[i] = r.Name()
		}
		return strings.Join(ns, " + ")
	}
	return in.Name()
}

// rowOf is the 1-based row in in's current file of 0-based position pos.
func rowOf(in table.Reader, pos int64) int64 {
	if m, ok := in.(*multiReader); ok {
		return m.fileRow(pos)
	}
	return pos + 1
}
