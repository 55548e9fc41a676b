package table

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

type parquetWriter struct {
	fw     *pqarrow.FileWriter
	schema *arrow.Schema
}

// newParquetWriter writes one row group per batch (pqarrow's Write), which
// keeps memory at one batch; Snappy, dictionary encoding on (categorical
// strings shrink to their codes). The Arrow schema is stored in the file
// (WithStoreSchema) so the pramkit metadata round-trips.
func newParquetWriter(s sink, schema *arrow.Schema, meta Meta) (*parquetWriter, error) {
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithDictionaryDefault(true),
		parquet.WithMaxRowGroupLength(1<<20),
		parquet.WithCreatedBy("pramkit"),
	)
	full := withMeta(schema, meta)
	fw, err := pqarrow.NewFileWriter(full, s, props,
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, err
	}
	return &parquetWriter{fw: fw, schema: full}, nil
}

func (p *parquetWriter) write(rec arrow.RecordBatch) error {
	if rec.NumRows() == 0 {
		return nil
	}
	// pqarrow checks the batch schema against its own, metadata included.
	rb := rebatch(p.schema, rec)
	defer rb.Release()
	return p.fw.Write(rb)
}

func (p *parquetWriter) close() error { return p.fw.Close() }
