package table

import (
	"bufio"
	"context"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// parquetReader streams a Parquet file row group by row group through
// pqarrow, so memory is bounded by a row group, not by the file.
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
	pf, err := file.NewParquetReader(sf)
	if err != nil {
		return nil, errorf(name, "not a readable Parquet file (%v); check that it was copied whole", err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(opt.BatchSize)}, memory.DefaultAllocator)
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

func (p *parquetReader) Next() (rec arrow.RecordBatch, err error) {
	defer recovered(p.name, &err)
	if p.cur != nil {
		p.cur.Release()
		p.cur = nil
	}
	rec, err = p.rr.Read()
	if err == io.EOF || (err == nil && rec == nil) {
		if p.rows != p.total {
			return nil, errorf(p.name, "the file ended after %d of its %d rows; it is truncated", p.rows, p.total)
		}
		return nil, io.EOF
	}
	if err != nil {
		return nil, errorf(p.name, "reading row %d: %v; the file is corrupt or truncated", p.rows+1, err)
	}
	p.rows += rec.NumRows()
	// Drop the schema metadata so callers see the same schema as Schema().
	p.cur = rebatch(p.schema, rec)
	return p.cur, nil
}

func (p *parquetReader) Close() error {
	if p.cur != nil {
		p.cur.Release()
	}
	p.rr.Release()
	return p.f.Close()
}
