package codebook

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// A column above largeIndex labels (the open-addressing table) encodes
// exactly as a small one (the Go map): every label to its position, the
// missing token to the missing category, anything else refused, and a
// repeated category is refused at build time.
func TestLargeColumnIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, k := range []int{largeIndex / 2, largeIndex + 1, 5000} {
		seen := map[string]bool{"?": true}
		var cats []string
		for len(cats) < k {
			s := fmt.Sprintf("%x", r.Uint64()>>r.IntN(60)) // short and long labels, many sharing prefixes
			if !seen[s] {
				seen[s] = true
				cats = append(cats, s)
			}
		}
		col, err := NewColumn(Spec{Name: "c", Categories: cats, Missing: "?"})
		if err != nil {
			t.Fatal(err)
		}
		if (col.index.small == nil) != (k > largeIndex) {
			t.Fatalf("k = %d: small map %v", k, col.index.small != nil)
		}
		enc, err := col.Encoder(Policy{})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range cats {
			if x, err := enc.Index(s); err != nil || x != uint32(i) {
				t.Fatalf("k = %d: label %q: index %d, %v; want %d", k, s, x, err, i)
			}
		}
		for _, s := range []string{"?", ""} {
			if x, err := enc.Index(s); err != nil || x != uint32(k) {
				t.Fatalf("k = %d: %q: index %d, %v; want the missing category %d", k, s, x, err, k)
			}
		}
		for range 2000 {
			s := fmt.Sprintf("%x", r.Uint64()>>r.IntN(60))
			if seen[s] {
				continue
			}
			var ve *ValueError
			if _, err := enc.Index(s); !errors.As(err, &ve) || ve.Kind != KindUnknown {
				t.Fatalf("k = %d: unknown %q: %v, want an unknown-value error", k, s, err)
			}
		}
		dup := append(cats[:k:k], cats[k/3])
		if _, err := NewColumn(Spec{Name: "c", Categories: dup}); err == nil || !strings.Contains(err.Error(), "appears twice") {
			t.Fatalf("k = %d: a repeated category: %v", k, err)
		}
	}
}

// TestColumnBytesPerLabel: a 300k-label column takes at most 18 bytes a
// label of 7 bytes: the labels in one string (4 bytes a label plus its
// bytes, labelList) and the index (4-byte slots, two thirds full: 6
// bytes a label). A []string of labels took 16 bytes a label on top of
// the decoded strings, a map[string]uint32 index about 50, a table of a
// power of two of slots 14 here.
func TestColumnBytesPerLabel(t *testing.T) {
	const k = 300_000
	cats := make([]string, k)
	for i := range cats {
		cats[i] = fmt.Sprintf("v%06d", i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	col, err := NewColumn(Spec{Name: "c", Categories: cats})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(col)
	runtime.KeepAlive(cats)
	per := float64(after.HeapAlloc-before.HeapAlloc) / k
	t.Logf("%d labels: column %.1f bytes a label", k, per)
	if per > 18 {
		t.Errorf("a column of %d labels takes %.1f bytes a label, more than 18", k, per)
	}
	if col.Label(12345) != "v012345" || col.K() != k {
		t.Errorf("label 12345 = %q, K = %d", col.Label(12345), col.K())
	}
}

// TestColumnDictionaryIsTheLabels: Column.Dictionary, which shares the
// column's memory, holds the K labels in index order, the appended
// missing token included, for a categorical and a numeric column.
func TestColumnDictionaryIsTheLabels(t *testing.T) {
	specs := []Spec{
		{Name: "c", Categories: []string{"a", "bb"}, Missing: "?"},
		{Name: "c", Categories: []string{"x", "?", "yy"}, Missing: "?"},
		{Name: "n", Cuts: []float64{1, 10}, Missing: "NA"},
	}
	for _, s := range specs {
		col, err := NewColumn(s)
		if err != nil {
			t.Fatal(err)
		}
		d, ok := col.Dictionary().Dictionary().(*array.String)
		if !ok || d.Len() != col.K() {
			t.Fatalf("%v: dictionary %v, want %d labels", s, col.Dictionary().Dictionary(), col.K())
		}
		for i := range col.K() {
			if d.Value(i) != col.Label(i) {
				t.Errorf("%v: entry %d = %q, label %q", s, i, d.Value(i), col.Label(i))
			}
		}
	}
}

// TestFileFormWritesCategoriesAsSpec: the file form writes a categorical
// column straight from its labels exactly as from its Spec (a missing
// token listed last left out of the categories, one in the middle kept,
// escapes alike), so Write, MarshalJSON and Hash-relevant output do not
// change.
func TestFileFormWritesCategoriesAsSpec(t *testing.T) {
	for _, s := range []Spec{
		{Name: "a", Categories: []string{"x", "y"}},
		{Name: "b", Categories: []string{"x", "y"}, Missing: "?"},
		{Name: "c", Categories: []string{"x", "?", "y\"z", "<=50K", "é\tb"}, Missing: "?"},
		{Name: "d", Categories: []string{"x", "NA"}, Missing: "NA"},
	} {
		col, err := NewColumn(s)
		if err != nil {
			t.Fatal(err)
		}
		got, want := string(col.appendCategorical(nil)), string(appendSpec(nil, col.Spec()))
		if got != want {
			t.Errorf("%v:\n got %s\nwant %s", s, got, want)
		}
	}
}
