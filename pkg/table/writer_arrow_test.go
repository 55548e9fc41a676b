package table

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// arrowMessages lists the types of an IPC stream's messages, as arrow-go's
// own message reader sees them.
func arrowMessages(t *testing.T, data []byte) (types []ipc.MessageType) {
	t.Helper()
	mr := ipc.NewMessageReader(bytes.NewReader(data))
	defer mr.Release()
	for {
		m, err := mr.Message()
		if errors.Is(err, io.EOF) {
			return types
		}
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, m.Type())
		m.Release()
	}
}

// arrowIPCRows reads an IPC stream with arrow-go's ipc reader (not ours)
// and returns its record batches' lengths and every row's label (column j).
func arrowIPCRows(t *testing.T, data []byte, j int) (lens []int64, labels []string) {
	t.Helper()
	r, err := ipc.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	for r.Next() {
		b := r.RecordBatch()
		lens = append(lens, b.NumRows())
		col := b.Column(j).(*array.Dictionary)
		dict := col.Dictionary().(*array.String)
		for i := range col.Len() {
			labels = append(labels, dict.Value(col.GetValueIndex(i)))
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return lens, labels
}

// TestArrowBytesIgnoreBatchSizes: an Arrow IPC stream output (the format
// the writer writes; readers also take the file format) of the same rows
// written as batches of 1, 3, 1000, R−1, R+1 rows or whole is the same,
// byte for byte: record batches of exactly R rows, the last one shorter,
// and the label column's dictionary sent once, before the first batch.
// The output reads back as the rows written, through our reader and
// arrow-go's ipc reader.
func TestArrowBytesIgnoreBatchSizes(t *testing.T) {
	for _, R := range []int{RowGroupRows, 100} {
		n := 2*R + R/2 + 7
		rec := rowGroupTestBatch(n)
		labelCol := rec.Schema().FieldIndices("label")[0]
		var wantLabels []string
		for i := range n {
			wantLabels = append(wantLabels, ValuesOf(rec.Column(labelCol)).String(i))
		}
		_, want := writeFileInBatches(t, "t.arrow", rec, []int{n}, R)
		for _, size := range []int{n, 1, 3, 1000, R - 1, R + 1} {
			p, got := writeFileInBatches(t, "t.arrow", rec, []int{size}, R)
			if !bytes.Equal(got, want) {
				t.Errorf("R %d: batches of %d rows give %d bytes, not the %d bytes of one batch", R, size, len(got), len(want))
			}
			types := arrowMessages(t, got)
			wantTypes := []ipc.MessageType{ipc.MessageSchema, ipc.MessageDictionaryBatch, ipc.MessageRecordBatch, ipc.MessageRecordBatch, ipc.MessageRecordBatch}
			if !slices.Equal(types, wantTypes) {
				t.Errorf("R %d, batches of %d: %d messages %v, want %v", R, size, len(types), types[:min(len(types), 6)], wantTypes)
			}
			lens, labels := arrowIPCRows(t, got, labelCol)
			if !slices.Equal(lens, []int64{int64(R), int64(R), int64(n - 2*R)}) {
				t.Errorf("R %d, batches of %d: %d record batches, the first of %v rows", R, size, len(lens), lens[:min(len(lens), 4)])
			}
			if !slices.Equal(labels, wantLabels) {
				t.Errorf("R %d, batches of %d: arrow-go reads other labels than written", R, size)
			}
			readBackEquals(t, p, rec)
		}
		rec.Release()
	}
}

// TestArrowBatchesOfOtherDictionaries: a dictionary column whose batches
// carry different dictionaries (an Arrow input may have them) is written
// as record batches over their union, with a replacement dictionary
// message where it changes; the labels read back through both readers and
// the bytes do not depend on where the batches are cut.
func TestArrowBatchesOfOtherDictionaries(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{DictField("d")}, nil)
	dicts := []*Labels{NewLabels([]string{"x", "y"}), NewLabels([]string{"z", "y", "w"})}
	// 40 rows: the first 20 over dicts[0], the rest over dicts[1].
	codes := make([]uint32, 40)
	var want []string
	for i := range codes {
		codes[i] = uint32(i*7) % 2
		want = append(want, []string{"x", "y"}[codes[i]])
		if i >= 20 {
			codes[i] = uint32(i*5) % 3
			want[i] = []string{"z", "y", "w"}[codes[i]]
		}
	}
	write := func(cuts []int) []byte {
		p := filepath.Join(t.TempDir(), "t.arrow")
		w, err := Create(p, schema, nil, WriteOptions{RowGroupRows: 30})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		for k := range len(cuts) - 1 {
			lo, hi := cuts[k], cuts[k+1]
			col := dicts[min(lo/20, 1)].Column(slices.Clone(codes[lo:hi]))
			rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(hi-lo))
			col.Release()
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		r, err := Open(p, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var got []string
		if err := EachBatch(r, func(b arrow.RecordBatch, _ int64) error {
			for i := range int(b.NumRows()) {
				got = append(got, ValuesOf(b.Column(0)).String(i))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("batches cut at %v: read %q, wrote %q", cuts, got, want)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lens, labels := arrowIPCRows(t, data, 0)
		if !slices.Equal(lens, []int64{30, 10}) || !slices.Equal(labels, want) {
			t.Errorf("batches cut at %v: arrow-go reads batches of %v rows, labels %q; wrote %q", cuts, lens, labels, want)
		}
		return data
	}
	a := write([]int{0, 20, 40})
	for _, cuts := range [][]int{{0, 7, 20, 21, 33, 40}, {0, 3, 6, 9, 12, 15, 18, 20, 25, 29, 31, 40}} {
		if b := write(cuts); !bytes.Equal(a, b) {
			t.Errorf("batches cut at %v: %d bytes, not the %d of batches cut at [0 20 40]", cuts, len(b), len(a))
		}
	}
}
