package table

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// maxRowGroup caps a row group's rows.
const maxRowGroup = 1 << 20

type parquetWriter struct {
	fw *pqarrow.FileWriter
}

// newParquetWriter writes one row group per batch, which keeps memory at
// one batch; Snappy, dictionary encoding on (categorical strings shrink to
// their codes). The Arrow schema is stored in the file (WithStoreSchema) so
// the pramkit metadata round-trips — with dictionary columns (Labels)
// declared as strings, so that every reader sees the string columns it
// would see had the stage written strings.
func newParquetWriter(s sink, schema *arrow.Schema, meta Meta) (*parquetWriter, error) {
	opts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithDictionaryDefault(true),
		parquet.WithMaxRowGroupLength(maxRowGroup),
		parquet.WithCreatedBy("pramkit"),
	}
	for _, f := range schema.Fields() {
		if f.Type.ID() == arrow.DICTIONARY {
			// pqarrow computes a dictionary column's min/max by hashing
			// every index of every batch (compute.Unique), half the cost
			// of writing it; the column's values are the codebook's
			// labels, which nearly every row group holds, so min/max would let a
			// reader skip next to nothing.
			opts = append(opts, parquet.WithStatsFor(f.Name, false))
		}
	}
	props := parquet.NewWriterProperties(opts...)
	fw, err := pqarrow.NewFileWriter(withMeta(plainSchema(schema), meta), s, props,
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, err
	}
	return &parquetWriter{fw: fw}, nil
}

// write writes the batch column by column (pqarrow's Write would insist on
// the batch having the file's schema, which declares dictionary columns as
// strings). A dictionary column goes to pqarrow's direct dictionary path:
// its dictionary becomes the row group's dictionary page and its indices
// the data pages, with no string hashed per row.
func (p *parquetWriter) write(rec arrow.RecordBatch) error {
	n := rec.NumRows()
	for off := int64(0); off < n; off += maxRowGroup {
		size := min(maxRowGroup, n-off)
		if err := p.fw.NewRowGroupChecked(); err != nil {
			return err
		}
		for _, col := range rec.Columns() {
			c := arrow.NewChunked(col.DataType(), []arrow.Array{col})
			err := p.fw.WriteColumnChunked(c, off, size)
			c.Release()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *parquetWriter) close() error { return p.fw.Close() }
