package table

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestParquetColumnsEncodedInParallelGiveTheSameBytes writes one table —
// small-int columns, categorical and unique strings (short, and long enough
// for plainPages), a nullable column with nulls, more columns than cores,
// four row groups — at GOMAXPROCS 1 and 4: encode writes two row groups at
// once, their columns on that many goroutines, and the file's bytes must
// not depend on it (seeded releases are byte-identical at any core count).
func TestParquetColumnsEncodedInParallelGiveTheSameBytes(t *testing.T) {
	const cols, rows = 19, 5000
	fields := make([]arrow.Field, cols)
	for j := range cols {
		fields[j] = arrow.Field{Name: fmt.Sprintf("c%d", j), Type: arrow.PrimitiveTypes.Int32, Nullable: j == 3}
		if j%5 == 4 {
			fields[j].Type = arrow.BinaryTypes.String
		}
	}
	schema := arrow.NewSchema(fields, nil)
	write := func(procs int) []byte {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		p := filepath.Join(t.TempDir(), "t.parquet")
		w, err := Create(p, schema, nil, WriteOptions{RowGroupRows: 4000})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		for part := range 3 {
			b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
			for i := part * rows; i < (part+1)*rows; i++ {
				for j := range cols {
					switch fb := b.Field(j).(type) {
					case *array.Int32Builder:
						if j == 3 && i%7 == 0 {
							fb.AppendNull()
						} else {
							fb.Append(int32(i * (j + 1) % (j + 2)))
						}
					case *array.StringBuilder:
						switch j {
						case 4:
							fb.Append(fmt.Sprint("id", i))
						case 9: // past maxDictPage a row group: plainPages
							fb.Append(fmt.Sprintf("person-%08d-of-the-long-ids", i))
						default:
							fb.Append(fmt.Sprint("label", i%(j+1)))
						}
					}
				}
			}
			rec := b.NewRecordBatch()
			b.Release()
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	one, four := write(1), write(4)
	if !bytes.Equal(one, four) {
		t.Fatalf("GOMAXPROCS 1 wrote %d bytes, 4 wrote %d bytes, not the same", len(one), len(four))
	}
}
