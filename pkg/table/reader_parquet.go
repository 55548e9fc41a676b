package table

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// parquetReader streams a Parquet file row group by row group through
// pqarrow, so memory is bounded by a row group, not by the file. A
// goroutine decodes (and validates) the next batches while the caller
// works on the current one: at most parquetAhead batches wait.
type parquetReader struct {
	name   string
	f      *os.File
	pf     *file.Reader
	rr     pqarrow.RecordReader
	schema *arrow.Schema
	meta   Meta
	total  int64
	rows   int64
	cur    arrow.RecordBatch
	err    error // the error Next returned, returned again

	ahead   chan parquetResult // nil until the first Next
	quit    chan struct{}
	stopped chan struct{} // closed when the decoding goroutine has returned
}

// parquetAhead is the number of decoded batches that may wait for Next.
const parquetAhead = 2

type parquetResult struct {
	rec arrow.RecordBatch
	err error // io.EOF at the end
}

func openParquet(name string, f *os.File, br *bufio.Reader, opt ReadOptions) (rd Reader, err error) {
	defer recovered(name, &err)
	sf, err := seekable(name, f, br, opt)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			sf.Close()
		}
	}()
	pf, err := file.NewParquetReader(sf, file.WithReadProps(parquet.NewReaderProperties(decodeAllocator)))
	if err != nil {
		return nil, errorf(name, "not a readable Parquet file (%v); check that it was copied whole", err)
	}
	if err := checkStoredArrowSchema(pf); err != nil {
		return nil, errorf(name, "cannot read the Parquet schema (%v)", err)
	}
	// Not Parallel: pqarrow would decode columns on goroutines of its own,
	// where a panic on a corrupt file escapes recovered and kills the
	// process (the corrupt-file tests do exactly that).
	props := pqarrow.ArrowReadProperties{BatchSize: int64(opt.BatchSize)}
	for _, c := range opt.DictColumns {
		if i := pf.MetaData().Schema.ColumnIndexByName(c); i >= 0 {
			props.SetReadDict(i, true)
		}
	}
	fr, err := pqarrow.NewFileReader(pf, props, decodeAllocator)
	if err != nil {
		return nil, errorf(name, "cannot read the Parquet schema (%v)", err)
	}
	schema, err := fr.Schema()
	if err != nil {
		return nil, errorf(name, "cannot read the Parquet schema (%v)", err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return nil, errorf(name, "cannot read the Parquet data (%v)", err)
	}
	return &parquetReader{
		name:   name,
		f:      sf,
		pf:     pf,
		rr:     rr,
		schema: withMeta(schema, nil),
		meta:   metaFromSchema(schema),
		total:  pf.NumRows(),
	}, nil
}

func (p *parquetReader) Name() string          { return p.name }
func (p *parquetReader) Format() Format        { return Parquet }
func (p *parquetReader) Schema() *arrow.Schema { return p.schema }
func (p *parquetReader) Meta() Meta            { return p.meta }
func (p *parquetReader) RowsRead() int64       { return p.rows }
func (p *parquetReader) NumRows() int64        { return p.total }

func (p *parquetReader) Next() (arrow.RecordBatch, error) {
	if p.cur != nil {
		p.cur.Release()
		p.cur = nil
	}
	if p.err != nil {
		return nil, p.err
	}
	if p.ahead == nil {
		p.ahead = make(chan parquetResult, parquetAhead)
		p.quit = make(chan struct{})
		p.stopped = make(chan struct{})
		go p.decode()
	}
	r, ok := <-p.ahead
	if !ok {
		r.err = io.EOF
	}
	if r.err != nil {
		p.err = r.err
		return nil, r.err
	}
	p.rows += r.rec.NumRows()
	p.cur = r.rec
	return p.cur, nil
}

// decode reads batches ahead of Next, until the end, an error or Close.
func (p *parquetReader) decode() {
	defer close(p.stopped)
	defer close(p.ahead)
	var rows int64
	for {
		rec, err := p.read(rows)
		if rec != nil {
			rows += rec.NumRows()
		}
		select {
		case p.ahead <- parquetResult{rec, err}:
		case <-p.quit:
			if rec != nil {
				rec.Release()
			}
			return
		}
		if err != nil {
			return
		}
	}
}

// read decodes and checks the batch after row rows; the batch is the
// caller's to release.
func (p *parquetReader) read(rows int64) (out arrow.RecordBatch, err error) {
	defer recovered(p.name, &err)
	rec, err := p.rr.Read()
	if err == io.EOF || (err == nil && rec == nil) {
		if rows != p.total {
			return nil, errorf(p.name, "the file ended after %d of its %d rows; it is truncated", rows, p.total)
		}
		return nil, io.EOF
	}
	if err != nil {
		return nil, errorf(p.name, "reading row %d: %v; the file is corrupt or truncated", rows+1, err)
	}
	if err := validateBatch(rec); err != nil {
		return nil, corruptBatch(p.name, rows, err)
	}
	// Drop the schema metadata so callers see the same schema as Schema().
	return rebatch(p.schema, rec), nil
}

func (p *parquetReader) Close() error {
	if p.cur != nil {
		p.cur.Release()
		p.cur = nil
	}
	if p.ahead != nil {
		close(p.quit)
		<-p.stopped
		for r := range p.ahead {
			if r.rec != nil {
				r.rec.Release()
			}
		}
		p.ahead = nil
	}
	p.rr.Release()
	return p.f.Close()
}

// checkStoredArrowSchema checks the Arrow schema that Parquet writers such
// as ours store (base64 IPC) under ARROW:schema, which pqarrow decodes with
// arrow-go's IPC reader and its unchecked sizes (see checkedStream).
func checkStoredArrowSchema(pf *file.Reader) error {
	v := pf.MetaData().KeyValueMetadata().FindValue("ARROW:schema")
	if v == nil {
		return nil
	}
	var b []byte
	err := errors.New("")
	if len(*v)%4 == 0 {
		b, err = base64.StdEncoding.DecodeString(*v)
	}
	if len(b) == 0 || err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(*v); err != nil {
			return nil // pqarrow reports it
		}
	}
	if _, err := io.Copy(io.Discard, &checkedStream{r: bytes.NewReader(b)}); err != nil {
		return fmt.Errorf("the stored Arrow schema is corrupt: %v", err)
	}
	return nil
}
