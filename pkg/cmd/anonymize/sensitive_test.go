package anonymize

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/table"
)

func testSensitive(t *testing.T, spec codebook.Spec, p codebook.Policy) *sensitive {
	t.Helper()
	col, err := codebook.NewColumn(spec)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := col.Encoder(p)
	if err != nil {
		t.Fatal(err)
	}
	return &sensitive{name: spec.Name, col: &col, enc: enc}
}

// indexes looks up every cell of a.
func indexes(t *testing.T, sv *sensitive, a arrow.Array) []int64 {
	t.Helper()
	c := sv.column(a)
	var got []int64
	for i := range a.Len() {
		x, err := c.index(i, "in.csv", int64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, x)
	}
	return got
}

// The sensitive cells are looked up in the codebook directly: integer
// cells (Parquet int columns) by their decimal form, as the interner gave
// them the code of that string; nulls and "" as missing; under --missing
// drop, dropped. These are the indexes the interner + indexOf gave.
func TestSensitiveIndexLikeInterner(t *testing.T) {
	spec := codebook.Spec{Name: "age", Categories: []string{"39", "50", "x"}, Missing: "?"}
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	ib.AppendValues([]int64{39, 50, 39}, nil)
	ib.AppendNull()
	ints := ib.NewArray()
	defer ints.Release()
	i32b := array.NewInt32Builder(memory.DefaultAllocator)
	i32b.AppendValues([]int32{50, 39}, nil)
	i32b.AppendNull()
	i32 := i32b.NewArray()
	defer i32.Release()
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	sb.AppendValues([]string{"50", "x", "", "?"}, nil)
	sb.AppendNull()
	strs := sb.NewArray()
	defer strs.Release()

	keep := testSensitive(t, spec, codebook.Policy{})
	got := slices.Concat(indexes(t, keep, ints), indexes(t, keep, i32), indexes(t, keep, strs))
	if want := []int64{0, 1, 0, 3, 1, 0, 3, 1, 2, 3, 3, 3}; !slices.Equal(got, want) {
		t.Errorf("--missing keep: indexes %v, want %v", got, want)
	}
	drop := testSensitive(t, spec, codebook.Policy{Missing: codebook.MissingDrop})
	got = slices.Concat(indexes(t, drop, ints), indexes(t, drop, i32), indexes(t, drop, strs))
	if want := []int64{0, 1, 0, dropped, 1, 0, dropped, 1, 2, dropped, dropped, dropped}; !slices.Equal(got, want) {
		t.Errorf("--missing drop: indexes %v, want %v", got, want)
	}
}

// An unknown value's error names the file, row, column and value, and
// keeps its value when the lookup's buffer is reused afterwards (an
// integer cell is looked up in sensitive.buf).
func TestSensitiveIndexUnknownValue(t *testing.T) {
	sv := testSensitive(t, codebook.Spec{Name: "age", Categories: []string{"39", "50"}}, codebook.Policy{})
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	ib.AppendValues([]int64{39, 77, 50}, nil)
	ints := ib.NewArray()
	defer ints.Release()
	c := sv.column(ints)
	_, err := c.index(1, "in.parquet", 12)
	if err == nil {
		t.Fatal("no error for a value outside the codebook")
	}
	if _, err2 := c.index(2, "in.parquet", 13); err2 != nil {
		t.Fatal(err2)
	}
	var de *table.DataError
	if !errors.As(err, &de) || de.Row != 12 || de.Column != "age" || de.File != "in.parquet" {
		t.Fatalf("error %v (%T): want a DataError at in.parquet row 12, column age", err, err)
	}
	if msg := err.Error(); !strings.Contains(msg, `value "77"`) || strings.Contains(msg, `value "50"`) {
		t.Errorf("error %q: want the value 77, unchanged by the next lookup", msg)
	}
}

// TestSensitiveLookupHoldsNothingPerValue: reading an 85k-value column
// keeps no memory per distinct value beyond the codebook's own (issue 11:
// peak RSS ≤ 100 MB whatever the cardinality). The interner and its
// code → index table held about 90 bytes a value (7.6 MB here); the guard
// is 1 MB, 12 bytes a value, for the runtime's own noise.
func TestSensitiveLookupHoldsNothingPerValue(t *testing.T) {
	const v = 85_000
	labels := make([]string, v)
	for i := range labels {
		labels[i] = fmt.Sprintf("occupation-%06d", i)
	}
	sv := testSensitive(t, codebook.Spec{Name: "occ", Categories: labels}, codebook.Policy{})
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	sb.AppendValues(labels, nil)
	a := sb.NewArray()
	defer a.Release()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := sv.column(a)
	for i := range a.Len() {
		x, err := c.index(i, "in.csv", int64(i+1))
		if err != nil || x != int64(i) {
			t.Fatalf("cell %d: index %d, %v", i, x, err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(sv)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("looking up %d distinct values: heap %+d bytes", v, grew)
	if grew > 1<<20 {
		t.Errorf("looking up %d distinct values grew the heap by %d bytes, more than 1 MB", v, grew)
	}
}
