package stage

import (
	"fmt"
	"reflect"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/pramkit/pramkit/pkg/table"
)

// The source splits the input by file and a Parquet file further by row
// group (table.ReadOptions.RowGroups), so that one large Parquet file is
// read by many workers at once, each row group in batches: Beam's own Go
// parquetio reads a whole file into memory, which a census file outgrows.

func init() {
	beam.RegisterType(reflect.TypeOf((*fileSplit)(nil)).Elem())
	register.Function2x1(splitFile)
	register.Emitter1[fileSplit]()
}

// fileSplit is one unit of reading: a whole file (Group < 0) or one row
// group of a Parquet file, whose first row is the file's row FirstRow + 1.
type fileSplit struct {
	Path     string
	Group    int
	FirstRow int64
}

func (s fileSplit) String() string {
	if s.Group < 0 {
		return s.Path
	}
	return fmt.Sprintf("%s (row group %d)", s.Path, s.Group)
}

func (s fileSplit) open() (table.Reader, error) {
	opt := table.ReadOptions{}
	if s.Group >= 0 {
		opt.RowGroups = []int{s.Group}
	}
	return openTable(s.Path, opt)
}

// splitFile emits a Parquet file's row groups, or the whole file.
func splitFile(path string, emit func(fileSplit)) error {
	if table.FormatFromPath(path) != table.Parquet {
		emit(fileSplit{Path: path, Group: -1})
		return nil
	}
	r, err := openTable(path, table.ReadOptions{})
	if err != nil {
		return err
	}
	groups := rowGroups(r)
	r.Close()
	if len(groups) <= 1 {
		emit(fileSplit{Path: path, Group: -1})
		return nil
	}
	var first int64
	for g, n := range groups {
		emit(fileSplit{Path: path, Group: g, FirstRow: first})
		first += n
	}
	return nil
}

// readSplits adds the source to s: the files' splits, redistributed so
// that workers share them.
func readSplits(s beam.Scope, files []string) beam.PCollection {
	return beam.Reshuffle(s, beam.ParDo(s, splitFile, beam.CreateList(s, files)))
}

// eachValuesBatch reads r to its end (table.EachBatch): fn gets each
// batch's columns idx (column indexes in r's schema), valid only during
// the call, and its number of rows.
func eachValuesBatch(r table.Reader, idx []int, fn func(vals []table.Values, rows int) error) error {
	return table.EachBatch(r, func(rec arrow.RecordBatch, _ int64) error {
		vals := make([]table.Values, len(idx))
		for j, c := range idx {
			vals[j] = table.ValuesOf(rec.Column(c))
		}
		return fn(vals, int(rec.NumRows()))
	})
}
