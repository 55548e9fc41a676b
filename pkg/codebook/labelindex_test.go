package codebook

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

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
		if x := col.index.get(); (x.small == nil) != (k > largeIndex) {
			t.Fatalf("k = %d: small map %v", k, x.small != nil)
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

// TestColumnBytesPerLabel: a 300k-label column takes at most 12 bytes a
// label of 7 bytes until a lookup (the labels in one string: 4 bytes a
// label plus its bytes, labelList), and at most 18 once a lookup has
// built its index (4-byte slots, two thirds full: 6 bytes a label). A
// []string of labels took 16 bytes a label on top of the decoded
// strings, a map[string]uint32 index about 50, a table of a power of two
// of slots 14 here; an index built with the column 6 more in decrypt,
// which never looks a label up.
func TestColumnBytesPerLabel(t *testing.T) {
	const k = 300_000
	cats := make([]string, k)
	for i := range cats {
		cats[i] = fmt.Sprintf("v%06d", i)
	}
	var before, built, looked runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	col, err := NewColumn(Spec{Name: "c", Categories: cats})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&built)
	if i, ok := col.LabelIndex("v000007"); !ok || i != 7 {
		t.Fatalf("LabelIndex(v000007) = %d, %v", i, ok)
	}
	runtime.GC()
	runtime.ReadMemStats(&looked)
	runtime.KeepAlive(col)
	runtime.KeepAlive(cats)
	for _, c := range []struct {
		when  string
		after runtime.MemStats
		limit float64
	}{{"built", built, 12}, {"after a lookup", looked, 18}} {
		per := float64(c.after.HeapAlloc-before.HeapAlloc) / k
		t.Logf("%d labels, %s: column %.1f bytes a label", k, c.when, per)
		if per > c.limit {
			t.Errorf("a column of %d labels takes %.1f bytes a label %s, more than %v", k, per, c.when, c.limit)
		}
	}
	if col.Label(12345) != "v012345" || col.K() != k {
		t.Errorf("label 12345 = %q, K = %d", col.Label(12345), col.K())
	}
}

// TestLazyIndexConcurrentFirstUse: the index is made by whichever
// lookup comes first (taking the table the column was checked with, or,
// after a collection freed it, building one), and lookups that race it
// from many goroutines (LabelIndex, Encoder, on copies of the column made
// by Select) all see it whole: every label at its position, nothing else
// found. Run with -race.
func TestLazyIndexConcurrentFirstUse(t *testing.T) {
	for _, k := range []int{10, largeIndex + 1, 20_000} {
		cats := make([]string, k)
		for i := range cats {
			cats[i] = fmt.Sprintf("c%d", i)
		}
		for _, tc := range []struct {
			spec    Spec
			collect bool // a collection between build and first lookup
		}{
			{Spec{Name: "c", Categories: cats, Missing: "?"}, false},
			{Spec{Name: "c", Categories: cats, Missing: "?"}, true},
			{Spec{Name: "c", Categories: append(cats[:k:k], "?"), Missing: "?"}, true},
			{Spec{Name: "n", Cuts: []float64{1, 2, 3}, Missing: "NA"}, false},
		} {
			spec := tc.spec
			cb, err := New(mustColumn(t, spec))
			if err != nil {
				t.Fatal(err)
			}
			if tc.collect {
				runtime.GC()
			}
			col := &cb.Columns[0]
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for g := range 8 {
				wg.Go(func() {
					c := col
					if g%2 == 1 {
						sel, err := cb.Select([]string{spec.Name})
						if err != nil {
							errs <- err
							return
						}
						c = &sel.Columns[0]
					}
					if g%4 == 3 && !c.IsNumeric() {
						enc, err := c.Encoder(Policy{})
						if err != nil {
							errs <- err
							return
						}
						for i := range c.K() - 1 {
							if x, err := enc.Index(c.Label(i)); err != nil || x != uint32(i) {
								errs <- fmt.Errorf("%s: Index(%q) = %d, %v; want %d", spec.Name, c.Label(i), x, err, i)
								return
							}
						}
						return
					}
					for i := range c.K() {
						if x, ok := c.LabelIndex(c.Label(i)); !ok || x != i {
							errs <- fmt.Errorf("%s: LabelIndex(%q) = %d, %v; want %d", spec.Name, c.Label(i), x, ok, i)
							return
						}
					}
					if _, ok := c.LabelIndex("not a label"); ok {
						errs <- fmt.Errorf("%s: LabelIndex found a label the column lacks", spec.Name)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("k = %d, collect %v: %v", k, tc.collect, err)
			}
		}
	}
}

func mustColumn(t *testing.T, s Spec) Column {
	t.Helper()
	c, err := NewColumn(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
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

// TestDictionaryWithSharesTheColumnsLabels: Column.DictionaryWith holds
// the K labels then the extras, and the column keeps reading and looking
// up its labels, now from the dictionary's memory (the point: one copy),
// for a small column (a Go map index) and a large one (open addressing),
// whether or not its index was used before.
func TestDictionaryWithSharesTheColumnsLabels(t *testing.T) {
	large := make([]string, largeIndex+10)
	for i := range large {
		large[i] = fmt.Sprintf("v%d", i)
	}
	for _, tc := range []struct {
		name       string
		spec       Spec
		lookUpWith bool // look a label up before DictionaryWith
	}{
		{"small", Spec{Name: "c", Categories: []string{"a", "bb", "?"}, Missing: "?"}, false},
		{"small, index used", Spec{Name: "c", Categories: []string{"a", "bb"}}, true},
		{"large", Spec{Name: "c", Categories: large}, false},
		{"large, index used", Spec{Name: "c", Categories: large}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			col, err := NewColumn(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if tc.lookUpWith {
				col.LabelIndex(col.Label(0))
			}
			want := col.Labels()
			extra := []string{"(none)", "x"}
			labels, err := col.DictionaryWith(extra...)
			if err != nil {
				t.Fatal(err)
			}
			d := labels.Dictionary().(*array.String)
			if d.Len() != len(want)+len(extra) {
				t.Fatalf("dictionary of %d labels, want %d", d.Len(), len(want)+len(extra))
			}
			for i, l := range append(slices.Clone(want), extra...) {
				if d.Value(i) != l {
					t.Fatalf("entry %d = %q, want %q", i, d.Value(i), l)
				}
			}
			if col.K() != len(want) {
				t.Fatalf("K = %d after DictionaryWith, want %d", col.K(), len(want))
			}
			for i, l := range want {
				if col.Label(i) != l {
					t.Fatalf("Label(%d) = %q, want %q", i, col.Label(i), l)
				}
				if x, ok := col.LabelIndex(l); !ok || x != i {
					t.Fatalf("LabelIndex(%q) = %d, %v; want %d", l, x, ok, i)
				}
			}
			for _, l := range extra {
				if _, ok := col.LabelIndex(l); ok {
					t.Errorf("LabelIndex(%q) found an extra label among the column's", l)
				}
			}
			// One copy: the column's last label is the dictionary's entry.
			if unsafe.StringData(col.Label(len(want)-1)) != unsafe.StringData(d.Value(len(want)-1)) {
				t.Error("the column's labels are not the dictionary's memory")
			}
		})
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
		for _, f := range []form{fileForm, compactForm} {
			got, want := string(col.appendCategorical(nil, f, nil)), string(appendSpec(nil, col.Spec(), f))
			if got != want {
				t.Errorf("%v, compact %v:\n got %s\nwant %s", s, f, got, want)
			}
		}
	}
}

// ForgetIndex frees the label table of every copy of a column — a copy
// made before finds no table either — while an Encoder made before keeps
// its own; the next lookup, from any copy, builds the table again and
// finds every label, and so does an Encoder made after.
func TestForgetIndexFreesTheTableAndLookupsStillWork(t *testing.T) {
	var cats []string
	for i := range 3 * largeIndex {
		cats = append(cats, fmt.Sprintf("v%d", i))
	}
	col, err := NewColumn(Spec{Name: "c", Categories: cats})
	if err != nil {
		t.Fatal(err)
	}
	copied := col
	before, err := col.Encoder(Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if col.index.x.slots == nil {
		t.Fatal("no table after an Encoder was made")
	}
	col.ForgetIndex()
	if copied.index.x.slots != nil || copied.index.built.Value() != nil {
		t.Fatal("the copy still holds a table after ForgetIndex")
	}
	after, err := copied.Encoder(before.Policy())
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range cats {
		if j, ok := copied.LabelIndex(s); !ok || j != i {
			t.Fatalf("after ForgetIndex, LabelIndex(%q) = %d, %v; want %d", s, j, ok, i)
		}
		for _, e := range []*Encoder{before, after} {
			if j, err := e.Index(s); err != nil || j != uint32(i) {
				t.Fatalf("after ForgetIndex, Encoder.Index(%q) = %d, %v; want %d", s, j, err, i)
			}
		}
	}
	if _, ok := col.LabelIndex("w1"); ok {
		t.Fatal("after ForgetIndex, an unknown label is found")
	}
}

// BenchmarkLargeColumn builds a categorical column of 2M labels (its
// duplicate check fills the label table) and looks every label up once,
// in a random order: the work of loading a high-cardinality codebook and
// encoding a column of it.
func BenchmarkLargeColumn(b *testing.B) {
	const k = 2_000_000
	cats := make([]string, k)
	for i := range cats {
		cats[i] = fmt.Sprintf("v%07d", i)
	}
	order := rand.New(rand.NewPCG(1, 2)).Perm(k)
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			if _, err := NewColumn(Spec{Name: "c", Categories: cats}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*k), "ns/label")
	})
	b.Run("lookup", func(b *testing.B) {
		col, err := NewColumn(Spec{Name: "c", Categories: cats})
		if err != nil {
			b.Fatal(err)
		}
		enc, err := col.Encoder(Policy{})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			for _, i := range order {
				if x, err := enc.Index(cats[i]); err != nil || x != uint32(i) {
					b.Fatalf("%q: %d, %v", cats[i], x, err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*k), "ns/label")
	})
	b.Run("lookup-blocks", func(b *testing.B) {
		col, err := NewColumn(Spec{Name: "c", Categories: cats})
		if err != nil {
			b.Fatal(err)
		}
		ss := make([]string, k)
		for j, i := range order {
			ss[j] = cats[i]
		}
		out, ok := make([]uint32, k), make([]bool, k)
		for b.Loop() {
			col.LabelIndexes(ss, out, ok)
		}
		for j, i := range order {
			if !ok[j] || out[j] != uint32(i) {
				b.Fatalf("%q: %d, %v", ss[j], out[j], ok[j])
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*k), "ns/label")
	})
}

// A slot of the open-addressing table holds index+1 under its hash tag:
// every label is found at its index and nothing else is, whether the tag
// has the bits above the index (idxBits from k) or none (idxBits 32, a
// column of 2^31 labels and more), and each slot's tag is its label's.
func TestLabelIndexSlotsHoldIndexAndTag(t *testing.T) {
	const k = 3000
	var b labelBuilder
	b.grow(k, 8*k)
	for i := range k {
		b.add(fmt.Sprintf("%x", i*7919))
	}
	labels, err := b.list()
	if err != nil {
		t.Fatal(err)
	}
	for _, idxBits := range []uint8{0, 32} {
		x := newLabelIndex(k)
		if idxBits == 0 {
			if x.idxBits != 12 { // bits.Len32(3000)
				t.Fatalf("idxBits %d for %d labels, want 12", x.idxBits, k)
			}
		} else {
			x.idxBits = idxBits
		}
		for i := range k {
			x.put(labels.at(i), uint32(i))
		}
		for _, v := range x.slots {
			if v == 0 {
				continue
			}
			i := int(v&x.mask()) - 1
			if i < 0 || i >= k {
				t.Fatalf("idxBits %d: slot %#x holds index %d", x.idxBits, v, i)
			}
			if _, tag := x.probe(labels.at(i)); v&^x.mask() != tag {
				t.Fatalf("idxBits %d: slot %#x of label %d has tag %#x, want %#x", x.idxBits, v, i, v&^x.mask(), tag)
			}
		}
		for i := range k {
			if j, ok := x.get(&labels, labels.at(i)); !ok || j != uint32(i) {
				t.Fatalf("idxBits %d: label %d found at %d, %v", x.idxBits, i, j, ok)
			}
		}
		for _, s := range []string{"", "x", "1", fmt.Sprintf("%x", k*7919)} {
			if j, ok := x.get(&labels, s); ok {
				t.Fatalf("idxBits %d: %q found at %d", x.idxBits, s, j)
			}
		}
	}
}

// LabelIndexes gives what LabelIndex gives label by label, in blocks and
// out of them, for a large column (getAll) and a small one: found labels,
// unknown ones, and labels whose probe passes full slots.
func TestLabelIndexesIsLabelIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{50, largeIndex + 1, 20_000} {
		cats := make([]string, k)
		for i := range cats {
			cats[i] = fmt.Sprintf("c%x", r.Uint64()>>r.IntN(60))
		}
		slices.Sort(cats)
		cats = slices.Compact(cats)
		col := mustColumn(t, Spec{Name: "c", Categories: cats})
		var ss []string
		for range 3*lookupBlock + 5 {
			if r.IntN(4) == 0 {
				ss = append(ss, fmt.Sprintf("u%d", r.IntN(1000))) // unknown
			} else {
				ss = append(ss, cats[r.IntN(len(cats))])
			}
		}
		ss = append(ss, cats...)
		out, ok := make([]uint32, len(ss)), make([]bool, len(ss))
		col.LabelIndexes(ss, out, ok)
		for i, s := range ss {
			j, found := col.LabelIndex(s)
			if found != ok[i] || (found && uint32(j) != out[i]) {
				t.Fatalf("k = %d: %q: LabelIndexes %d, %v; LabelIndex %d, %v", k, s, out[i], ok[i], j, found)
			}
		}
	}
}
