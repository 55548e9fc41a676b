package table

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// seedSchema has a column of every kind the tools read: text (with nulls),
// the integer types Values special-cases, and a dictionary-encoded text
// column, the way other Arrow producers store categories.
var seedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "sex", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "age", Type: arrow.PrimitiveTypes.Int64},
	{Name: "code", Type: arrow.PrimitiveTypes.Int32},
	{Name: "n", Type: arrow.PrimitiveTypes.Uint32},
	{Name: "race", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}},
}, nil)

// seedBatches returns two small batches of seedSchema (the caller releases
// them); row i of the table depends on i only.
func seedBatches() []arrow.RecordBatch {
	races := []string{"White", "Black", "Asian-Pac-Islander", "Other"}
	b := array.NewRecordBuilder(memory.DefaultAllocator, seedSchema)
	defer b.Release()
	var out []arrow.RecordBatch
	row := 0
	for _, n := range []int{5, 3} {
		for range n {
			if row%4 == 2 {
				b.Field(0).(*array.StringBuilder).AppendNull()
			} else {
				b.Field(0).(*array.StringBuilder).Append([]string{"Female", "Male"}[row%2])
			}
			b.Field(1).(*array.Int64Builder).Append(int64(20 + 7*row))
			b.Field(2).(*array.Int32Builder).Append(int32(row % 3))
			b.Field(3).(*array.Uint32Builder).Append(uint32(1000 + row))
			b.Field(4).(*array.BinaryDictionaryBuilder).AppendString(races[row%len(races)])
			row++
		}
		out = append(out, b.NewRecordBatch())
	}
	return out
}

// seedTables returns real outputs to corrupt: the Arrow IPC stream and
// Parquet files our writer makes, and an Arrow IPC file (which pramkit reads
// but does not write) made by arrow-go's file writer. Deterministic.
func seedTables(t testing.TB) map[string][]byte {
	t.Helper()
	recs := seedBatches()
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	out := map[string][]byte{}
	for _, f := range []Format{Arrow, Parquet} {
		var buf bytes.Buffer
		w, err := Create("-", seedSchema, Meta{"stage": "test"}, WriteOptions{Format: f, Stdout: &buf})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		out[f.String()] = buf.Bytes()
	}
	var buf bytes.Buffer
	fw, err := ipc.NewFileWriter(&buf, ipc.WithSchema(seedSchema))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := fw.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	out["arrow-file"] = buf.Bytes()
	return out
}

// readEveryValue opens data, reads every batch and every cell through
// Values, the way the tools do. It returns the reader's error, if any; a
// panic propagates to the caller.
func readEveryValue(data []byte, tmp string) (cells int, err error) {
	r, err := Open("-", ReadOptions{Stdin: bytes.NewReader(data), BatchSize: 3, TempDir: tmp})
	if err != nil {
		return 0, err
	}
	defer r.Close()
	width := r.Schema().NumFields()
	err = EachBatch(r, func(rec arrow.RecordBatch, _ int64) error {
		if int(rec.NumCols()) != width {
			return fmt.Errorf("batch has %d columns, schema %d", rec.NumCols(), width)
		}
		for j := range width {
			v := ValuesOf(rec.Column(j))
			if int64(v.Len()) != rec.NumRows() {
				return fmt.Errorf("column %d has %d cells in a batch of %d rows", j, v.Len(), rec.NumRows())
			}
			// The first and last rows: a valid batch of a type without
			// buffers (null) can claim billions of rows.
			for i := 0; i < v.Len(); i++ {
				if i == 1000 && v.Len() > 2000 {
					i = v.Len() - 1000
				}
				_ = v.String(i)
				v.Int(i)
				cells++
			}
		}
		return nil
	})
	return cells, err
}

// flipped returns data with the byte at pos XORed with mask.
func flipped(data []byte, pos int, mask byte) []byte {
	c := bytes.Clone(data)
	c[pos] ^= mask
	return c
}

// TestCorruptTablesAreErrorsNotPanics flips every byte of real Arrow
// stream, Arrow file and Parquet outputs, one at a time, and reads each result to the last cell: a corrupt table must be
// an error naming the input, never a panic, and a DataError so the tools
// exit with the data-error code.
func TestCorruptTablesAreErrorsNotPanics(t *testing.T) {
	tmp := t.TempDir()
	for name, data := range seedTables(t) {
		t.Run(name, func(t *testing.T) {
			if cells, err := readEveryValue(data, tmp); err != nil || cells != 8*5 {
				t.Fatalf("the intact table reads %d cells, err %v", cells, err)
			}
			var panics, errs int
			for pos := range data {
				// One of three masks per byte: a low bit, a high bit (lengths
				// turn huge or negative), all bits.
				{
					mask := []byte{0x01, 0x80, 0xff}[pos%3]
					func() {
						defer func() {
							if r := recover(); r != nil {
								panics++
								if panics <= 5 {
									t.Errorf("byte %d ^ %#x: panic: %v", pos, mask, r)
								}
							}
						}()
						_, err := readEveryValue(flipped(data, pos, mask), tmp)
						if err == nil {
							return
						}
						errs++
						var de *DataError
						if !errors.As(err, &de) || de.File != "stdin" {
							t.Errorf("byte %d ^ %#x: error %q does not name the input", pos, mask, err)
						}
						if strings.Contains(err.Error(), "\n") {
							t.Errorf("byte %d ^ %#x: error is not one line: %q", pos, mask, err)
						}
					}()
				}
			}
			if panics > 0 {
				t.Errorf("%d of %d corruptions of a %d-byte %s table panic", panics, len(data), len(data), name)
			}
			t.Logf("%d bytes, %d corruptions are errors", len(data), errs)
		})
	}
}

// fuzzTable is the property both fuzz targets check: reading data never
// panics; it fails with an error naming the input, or every batch is well
// formed and every cell reads.
func fuzzTable(t *testing.T, data []byte) {
	_, err := readEveryValue(data, t.TempDir())
	if err != nil && !strings.HasPrefix(err.Error(), "stdin: ") {
		t.Fatalf("error does not name the input: %v", err)
	}
}

// FuzzArrowReader mutates real Arrow IPC streams and files (seedTables).
func FuzzArrowReader(f *testing.F) {
	seeds := seedTables(f)
	f.Add(seeds["arrow"])
	f.Add(seeds["arrow-file"])
	f.Fuzz(func(t *testing.T, data []byte) {
		if sniff(data) != Arrow {
			return
		}
		fuzzTable(t, data)
	})
}

// FuzzParquetReader mutates a real Parquet file (seedTables).
func FuzzParquetReader(f *testing.F) {
	f.Add(seedTables(f)["parquet"])
	f.Fuzz(func(t *testing.T, data []byte) {
		if sniff(data) != Parquet {
			return
		}
		fuzzTable(t, data)
	})
}
