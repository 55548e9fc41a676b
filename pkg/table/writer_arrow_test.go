package table

import (
	"bytes"
	"errors"
	"io"
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
	eachBatchSizing(t, "t.arrow", func(rec arrow.RecordBatch, R, size int, _ string, got []byte) {
		n := int(rec.NumRows())
		labelCol := rec.Schema().FieldIndices("label")[0]
		var wantLabels []string
		for i := range n {
			wantLabels = append(wantLabels, ValuesOf(rec.Column(labelCol)).String(i))
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
	})
}

// TestArrowBatchesOfOtherDictionaries: a dictionary column whose batches
// carry different dictionaries (an Arrow input may have them) is written
// as record batches over their union, with a replacement dictionary
// message where it changes; the labels read back through both readers and
// the bytes do not depend on where the batches are cut.
func TestArrowBatchesOfOtherDictionaries(t *testing.T) {
	sameBytesWhereverBatchesOfOtherDictionariesAreCut(t, "t.arrow", func(cuts []int, data []byte, want []string) {
		lens, labels := arrowIPCRows(t, data, 0)
		if !slices.Equal(lens, []int64{30, 10}) || !slices.Equal(labels, want) {
			t.Errorf("batches cut at %v: arrow-go reads batches of %v rows, labels %q; wrote %q", cuts, lens, labels, want)
		}
	})
}
