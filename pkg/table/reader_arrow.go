package table

import (
	"bufio"
	"errors"
	"io"
	"os"
	"runtime"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// arrowStreamReader reads the Arrow IPC stream format, batch by batch.
type arrowStreamReader struct {
	name string
	fileSource
	f      *os.File
	r      *ipc.Reader
	schema *arrow.Schema
	sel    []int // ReadOptions.Columns' indices, nil for all
	meta   Meta
	rows   int64
	cur    arrow.RecordBatch
}

func openArrowStream(name string, f *os.File, br *bufio.Reader, opt ReadOptions) (rd Reader, err error) {
	defer recovered(name, &err)
	var src io.Reader = br
	if pr := newParallelReader(f, runtime.GOMAXPROCS(0)); pr != nil {
		// What br holds, then the file itself: a record batch's body is
		// read straight into its buffer (through br it was read into br's
		// buffer and copied: two copies of every byte, on the goroutine
		// that every chunk of perturb and decrypt waits on), in pieces
		// read at once (parallelReader).
		src = io.MultiReader(io.LimitReader(br, int64(br.Buffered())), pr)
	}
	r, err := ipc.NewReader(&checkedStream{r: src}, ipc.WithAllocator(readAllocator(opt)))
	if err != nil {
		if f != nil {
			f.Close()
		}
		if errors.Is(err, errFlatbuffer) {
			return nil, errorf(name, "not a readable Arrow IPC stream: its schema message is corrupt; the file was damaged or cut short: copy or write it again")
		}
		return nil, errorf(name, "not a readable Arrow IPC stream (%v)", err)
	}
	s := r.Schema()
	sel, err := projection(name, s, opt.Columns)
	if err != nil {
		r.Release()
		if f != nil {
			f.Close()
		}
		return nil, err
	}
	meta := metaFromSchema(s)
	forgetSchemaMeta(s)
	return &arrowStreamReader{name: name, f: f, r: r, schema: withMeta(projectSchema(s, sel), nil), sel: sel, meta: meta}, nil
}

func (a *arrowStreamReader) Name() string          { return a.name }
func (a *arrowStreamReader) Format() Format        { return Arrow }
func (a *arrowStreamReader) Schema() *arrow.Schema { return a.schema }
func (a *arrowStreamReader) Meta() Meta            { return a.meta }
func (a *arrowStreamReader) RowsRead() int64       { return a.rows }
func (a *arrowStreamReader) NumRows() int64        { return -1 }

func (a *arrowStreamReader) Next() (rec arrow.RecordBatch, err error) {
	defer recovered(a.name, &err)
	if a.cur != nil {
		a.cur.Release()
		a.cur = nil
	}
	if !a.r.Next() {
		if err := a.r.Err(); err != nil && !errors.Is(err, io.EOF) {
			return nil, errorf(a.name, "reading after row %d: %v; the stream is corrupt or truncated", a.rows, err)
		}
		return nil, io.EOF
	}
	rb := a.r.RecordBatch()
	if err := validateBatch(rb); err != nil {
		return nil, corruptBatch(a.name, a.rows, err)
	}
	a.cur = rebatchProjected(a.schema, rb, a.sel)
	a.rows += a.cur.NumRows()
	return a.cur, nil
}

func (a *arrowStreamReader) Close() error {
	if a.cur != nil {
		a.cur.Release()
	}
	a.r.Release()
	if a.f != nil {
		return a.f.Close()
	}
	return nil
}

// arrowFileReader reads the Arrow IPC file format (random access).
type arrowFileReader struct {
	name string
	fileSource
	f      *os.File
	r      *ipc.FileReader
	schema *arrow.Schema
	sel    []int // ReadOptions.Columns' indices, nil for all
	meta   Meta
	next   int
	rows   int64
	cur    arrow.RecordBatch
}

func openArrowFile(name string, f *os.File, br *bufio.Reader, opt ReadOptions) (rd Reader, err error) {
	defer recovered(name, &err)
	sf, err := seekable(name, f, br, opt)
	if err != nil {
		return nil, err
	}
	if err := checkArrowFile(sf); err != nil {
		sf.Close()
		return nil, errorf(name, "not a readable Arrow file (%v)", err)
	}
	r, err := ipc.NewFileReader(parallelFile{sf}, ipc.WithAllocator(readAllocator(opt)))
	if err != nil {
		sf.Close()
		return nil, errorf(name, "not a readable Arrow file (%v)", err)
	}
	s := r.Schema()
	sel, err := projection(name, s, opt.Columns)
	if err != nil {
		r.Close()
		sf.Close()
		return nil, err
	}
	meta := metaFromSchema(s)
	forgetSchemaMeta(s)
	return &arrowFileReader{name: name, f: sf, r: r, schema: withMeta(projectSchema(s, sel), nil), sel: sel, meta: meta}, nil
}

func (a *arrowFileReader) Name() string          { return a.name }
func (a *arrowFileReader) Format() Format        { return Arrow }
func (a *arrowFileReader) Schema() *arrow.Schema { return a.schema }
func (a *arrowFileReader) Meta() Meta            { return a.meta }
func (a *arrowFileReader) RowsRead() int64       { return a.rows }
func (a *arrowFileReader) NumRows() int64        { return -1 }

func (a *arrowFileReader) Next() (rec arrow.RecordBatch, err error) {
	defer recovered(a.name, &err)
	if a.cur != nil {
		a.cur.Release()
		a.cur = nil
	}
	if a.next >= a.r.NumRecords() {
		return nil, io.EOF
	}
	r, err := a.r.RecordBatch(a.next)
	if err != nil {
		return nil, errorf(a.name, "reading batch %d: %v", a.next+1, err)
	}
	a.next++
	if err := validateBatch(r); err != nil {
		return nil, corruptBatch(a.name, a.rows, err)
	}
	a.cur = rebatchProjected(a.schema, r, a.sel)
	a.rows += a.cur.NumRows()
	return a.cur, nil
}

func (a *arrowFileReader) Close() error {
	if a.cur != nil {
		a.cur.Release()
	}
	a.r.Close()
	return a.f.Close()
}

// forgetSchemaMeta empties the pramkit items of the schema an ipc reader
// decoded, once they are in the reader's Meta, as forgetFooterMeta does
// for a Parquet footer: the ipc reader keeps its schema as long as it
// lives, and a decrypted release's codebook is 10 MB of it at 1M labels.
// With the reader's Meta the only reference, a caller that has decoded an
// item deletes it to free it (Reader.Meta). The items are emptied in
// place (Metadata.Values is the schema's own slice): nothing reads the
// ipc reader's schema metadata after the open.
func forgetSchemaMeta(s *arrow.Schema) {
	md := s.Metadata()
	vals := md.Values()
	for i, k := range md.Keys() {
		if _, ok := metaKey(k); ok {
			vals[i] = ""
		}
	}
}

// rebatch returns rec's columns under schema s (same fields, different
// metadata) as a new batch holding its own references; rec stays owned by
// the decoder that returned it.
func rebatch(s *arrow.Schema, rec arrow.RecordBatch) arrow.RecordBatch {
	return array.NewRecordBatch(s, rec.Columns(), rec.NumRows())
}

// rebatchProjected is rebatch keeping only the columns sel (nil: all).
func rebatchProjected(s *arrow.Schema, rec arrow.RecordBatch, sel []int) arrow.RecordBatch {
	if sel == nil {
		return rebatch(s, rec)
	}
	cols := make([]arrow.Array, len(sel))
	for i, j := range sel {
		cols[i] = rec.Column(j)
	}
	return array.NewRecordBatch(s, cols, rec.NumRows())
}

// parallelFile is a file whose large ReadAt calls are cut into pieces
// read at once (parallelReader): an Arrow file's record batch bodies.
type parallelFile struct{ *os.File }

func (f parallelFile) ReadAt(b []byte, off int64) (int, error) {
	r := parallelReader{f: f.File, pos: off, pieces: runtime.GOMAXPROCS(0)}
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
		if m == 0 {
			return n, io.ErrUnexpectedEOF
		}
	}
	return n, nil
}
