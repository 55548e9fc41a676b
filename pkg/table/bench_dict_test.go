package table

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// benchCodes is benchCSV's table as codes and Labels: 200k rows, six
// categorical columns.
func benchCodes(b *testing.B) (schema *arrow.Schema, labels []*Labels, cols [][]uint32, size int64) {
	data := benchCSV()
	size = int64(len(data))
	r, err := Open("-", ReadOptions{Stdin: bytes.NewReader(data)})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	d := r.Schema().NumFields()
	fields := make([]arrow.Field, d)
	maps := make([]map[string]uint32, d)
	names := make([][]string, d)
	for j, f := range r.Schema().Fields() {
		fields[j] = DictField(f.Name)
		maps[j] = map[string]uint32{}
	}
	cols = make([][]uint32, d)
	err = EachBatch(r, func(rec arrow.RecordBatch, _ int64) error {
		for j := range d {
			vs := ValuesOf(rec.Column(j))
			for i := range int(rec.NumRows()) {
				s := vs.String(i)
				c, ok := maps[j][s]
				if !ok {
					c = uint32(len(names[j]))
					maps[j][strings.Clone(s)] = c
					names[j] = append(names[j], strings.Clone(s))
				}
				cols[j] = append(cols[j], c)
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	labels = make([]*Labels, d)
	for j := range d {
		labels[j] = NewLabels(names[j])
	}
	return arrow.NewSchema(fields, nil), labels, cols, size
}

// BenchmarkWriteParquetFromCodes writes the same 200k rows as Parquet two
// ways: from string columns (labels hashed per row by the dictionary
// encoder) and from codes with Labels (dictionary pages from the labels,
// codes written as indices), and the same as CSV and Arrow IPC. MB/s are
// of the equivalent CSV.
func BenchmarkWriteParquetFromCodes(b *testing.B) {
	schema, labels, cols, size := benchCodes(b)
	n := len(cols[0])
	strSchema := plainSchema(schema)
	var strBatches, codeBatches []arrow.RecordBatch
	for off := 0; off < n; off += DefaultBatchSize {
		m := min(DefaultBatchSize, n-off)
		part := make([][]uint32, len(cols))
		for j := range cols {
			part[j] = cols[j][off:]
		}
		rec := CodesBatch(schema, part, labels, m)
		codeBatches = append(codeBatches, rec)
		bb := NewBatchBuilder(strSchema)
		row := make([]string, len(cols))
		for i := range m {
			for j := range cols {
				row[j] = ValuesOf(rec.Column(j)).String(i)
			}
			bb.AppendStrings(row)
		}
		strBatches = append(strBatches, bb.NewBatch())
	}
	dir := b.TempDir()
	for _, c := range []struct {
		name    string
		schema  *arrow.Schema
		batches []arrow.RecordBatch
		format  Format
	}{
		{"strings", strSchema, strBatches, Parquet},
		{"codes", schema, codeBatches, Parquet},
		{"strings-csv", strSchema, strBatches, CSV},
		{"codes-csv", schema, codeBatches, CSV},
		{"strings-arrow", strSchema, strBatches, Arrow},
		{"codes-arrow", schema, codeBatches, Arrow},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				w, err := Create(filepath.Join(dir, "x"), c.schema, nil, WriteOptions{Format: c.format})
				if err != nil {
					b.Fatal(err)
				}
				for _, rec := range c.batches {
					if err := w.Write(rec); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Commit(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadParquetDict reads a Parquet file of benchCSV's rows as
// strings and as dictionaries, and codes every cell with Coder: the work
// of a stage that needs codes.
func BenchmarkReadParquetDict(b *testing.B) {
	schema, labels, cols, size := benchCodes(b)
	p := filepath.Join(b.TempDir(), "x.parquet")
	w, err := Create(p, schema, nil, WriteOptions{})
	if err != nil {
		b.Fatal(err)
	}
	rec := CodesBatch(schema, cols, labels, len(cols[0]))
	if err := w.Write(rec); err != nil {
		b.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		b.Fatal(err)
	}
	maps := make([]map[string]uint32, len(labels))
	names := make([]string, len(labels))
	for j, l := range labels {
		maps[j] = map[string]uint32{}
		for k := range l.Len() {
			maps[j][l.dict.Value(k)] = uint32(k)
		}
		names[j] = schema.Field(j).Name
	}
	for _, c := range []struct {
		name string
		dict []string
	}{{"strings", nil}, {"dict", names}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			dst := make([]uint32, DefaultBatchSize)
			for i := 0; i < b.N; i++ {
				r, err := Open(p, ReadOptions{DictColumns: c.dict})
				if err != nil {
					b.Fatal(err)
				}
				coders := make([]*Coder, len(maps))
				for j := range maps {
					coders[j] = MapCoder(maps[j])
				}
				err = EachBatch(r, func(rec arrow.RecordBatch, _ int64) error {
					for j, cd := range coders {
						if bad, err := cd.Codes(dst[:rec.NumRows()], rec.Column(j), 0); bad >= 0 {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				r.Close()
			}
		})
	}
}

// BenchmarkWriteParquetLargeDictionary writes 256 Ki rows of a column of
// codes over 300k labels (a high-cardinality sensitive column as
// anonymize publishes it), in batches of DefaultBatchSize, as Parquet
// with row groups of RowGroupRows: each row group's dictionary page holds
// the labels it uses (compactDict) and the groups share one copy of the
// dictionary (dictMemo); compact=false writes every label into every row
// group, as before. Reports the file's bytes per row.
func BenchmarkWriteParquetLargeDictionary(b *testing.B) {
	const k, n = 300_000, 256 << 10
	names := make([]string, k)
	for i := range names {
		names[i] = fmt.Sprintf("v%d", i)
	}
	labels := NewLabels(names)
	schema := arrow.NewSchema([]arrow.Field{DictField("s")}, nil)
	codes := make([]uint32, n)
	for i := range codes {
		codes[i] = uint32(i * 7919 % k)
	}
	path := filepath.Join(b.TempDir(), "x.parquet")
	for _, compact := range []bool{true, false} {
		b.Run(fmt.Sprintf("compact=%v", compact), func(b *testing.B) {
			defer func(old bool) { compactDicts = old }(compactDicts)
			compactDicts = compact
			for i := 0; i < b.N; i++ {
				w, err := Create(path, schema, nil, WriteOptions{})
				if err != nil {
					b.Fatal(err)
				}
				for off := 0; off < n; off += DefaultBatchSize {
					m := min(DefaultBatchSize, n-off)
					rec := CodesBatch(schema, [][]uint32{codes[off:]}, []*Labels{labels}, m)
					if err := w.Write(rec); err != nil {
						b.Fatal(err)
					}
					rec.Release()
				}
				if err := w.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			if fi, err := os.Stat(path); err == nil {
				b.ReportMetric(float64(fi.Size())/n, "file-B/row")
			}
		})
	}
}
