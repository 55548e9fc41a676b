package table

import (
	"bytes"
	"encoding/csv"
	"runtime"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// csvAwkward are values encoding/csv quotes for every reason it has.
var csvAwkward = []string{"plain", "", "a,b", `say "hi"`, "line\nbreak", "cr\rhere", "crlf\r\nx", " lead", "\tTab", "\u00a0nbsp", `\.`, `\..`, "trail ", "ünï", `"`, `""`}

// TestCSVWriterMatchesEncodingCSV writes string, dictionary, int32, int64
// and nullable columns, in batches large enough to be formatted on several
// goroutines, and compares the bytes with encoding/csv.Writer's, at
// GOMAXPROCS 1 and 4; and a one-column table of empty values keeps its
// rows.
func TestCSVWriterMatchesEncodingCSV(t *testing.T) {
	const n = 3*minParallelRows + 17
	labels := NewLabels(csvAwkward)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}, DictField("d"),
		{Name: "i", Type: arrow.PrimitiveTypes.Int32}, {Name: "l", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ni", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	ib := array.NewInt32Builder(memory.DefaultAllocator)
	lb := array.NewInt64Builder(memory.DefaultAllocator)
	nb := array.NewInt32Builder(memory.DefaultAllocator)
	codes := make([]uint32, n)
	var want bytes.Buffer
	cw := csv.NewWriter(&want)
	cw.Write([]string{"s", "d", "i", "l", "ni"})
	for i := range n {
		row := make([]string, 5)
		if i%13 == 5 {
			sb.AppendNull()
		} else {
			row[0] = csvAwkward[i%len(csvAwkward)]
			sb.Append(row[0])
		}
		codes[i] = uint32((i / 3) % len(csvAwkward))
		row[1] = csvAwkward[codes[i]]
		ib.Append(int32(i - 500))
		row[2] = strconv.Itoa(i - 500)
		lb.Append(int64(i) << 33)
		row[3] = strconv.FormatInt(int64(i)<<33, 10)
		if i%7 == 0 {
			nb.AppendNull()
		} else {
			nb.Append(int32(i))
			row[4] = strconv.Itoa(i)
		}
		cw.Write(row)
	}
	cw.Flush()
	cols := []arrow.Array{sb.NewArray(), labels.Column(codes), ib.NewArray(), lb.NewArray(), nb.NewArray()}
	rec := array.NewRecordBatch(schema, cols, n)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 4} {
		runtime.GOMAXPROCS(procs)
		var got bytes.Buffer
		w, err := Create("-", schema, nil, WriteOptions{Format: CSV, Stdout: &got})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec.NewSlice(0, 100)); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec.NewSlice(100, n)); err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			g, wb := got.Bytes(), want.Bytes()
			i := 0
			for i < min(len(g), len(wb)) && g[i] == wb[i] {
				i++
			}
			t.Fatalf("GOMAXPROCS %d: output differs from encoding/csv at byte %d: %q vs %q", procs, i, g[i:min(len(g), i+40)], wb[i:min(len(wb), i+40)])
		}
	}
}
