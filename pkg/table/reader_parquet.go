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
	pf, err := file.NewParquetReader(sf, file.WithReadProps(parquet.NewReaderProperties(decodeAllocator)))
	if err != nil {
		return nil, errorf(name, "not a readable Parquet file (%v); check that it was copied whole", err)
	}
	if err := checkStoredArrowSchema(pf); err != nil {
		return nil, errorf(name, "cannot read the Parquet schema (%v)", err)
	}
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
	if err := validateBatch(rec); err != nil {
		return nil, corruptBatch(p.name, p.rows, err)
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
