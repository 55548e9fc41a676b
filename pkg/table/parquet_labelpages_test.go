package table

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// labelTestColumns are dictionary columns of strings (DictType) of many
// shapes, n rows each, for TestParquetFileWriterGivesArrowGoBytes: those
// labelPages writes — unused labels (in the middle and at the end), one
// label, an empty and a multi-byte label, 5,000 labels (13-bit indices),
// 65,536 labels (16 bits, a dictionary page past the 64 KiB dictionary
// limit, which the direct dictionary path does not check) — and those it
// leaves to the column writer: 70,000 labels (17 bits), a repeated label
// (pqarrow falls back to plain), a nullable column with and without nulls.
// labelPagesPerGroup is how many of them labelPages takes in every row
// group.
func labelTestColumns(n int) ([]arrow.Field, []arrow.Array) {
	names := func(k int, f string) []string {
		s := make([]string, k)
		for i := range s {
			s[i] = fmt.Sprintf(f, i)
		}
		return s
	}
	rng := rand.New(rand.NewPCG(5, 6))
	type shape struct {
		name     string
		labels   []string
		code     func(k int) int32 // -1: null
		nullable bool
	}
	shapes := []shape{
		{"unused", names(10, "occ%d"), func(k int) int32 { return []int32{0, 3, 7}[k/5%3] }, false},
		{"one", []string{"only"}, func(int) int32 { return 0 }, false},
		{"odd", []string{"", "Çà", "?", "x y"}, func(k int) int32 { return int32(k * k % 4) }, false},
		{"many", names(5000, "label-%05d"), func(int) int32 { return int32(rng.IntN(5000)) }, false},
		{"huge", names(1<<16, "h%d"), func(k int) int32 {
			if k%3 == 0 {
				return 1<<16 - 1
			}
			return int32(rng.IntN(1 << 16))
		}, false},
		{"wider", names(70_000, "w%d"), func(k int) int32 { return int32(k * 31 % 70_000) }, false},
		{"dup", []string{"a", "b", "a"}, func(k int) int32 { return int32(k % 3) }, false},
		{"nulls", []string{"p", "q"}, func(k int) int32 {
			if k%7 == 3 {
				return -1
			}
			return int32(k % 2)
		}, true},
		{"nullable", []string{"p", "q", "r"}, func(k int) int32 { return int32(k / 4 % 3) }, true},
	}
	var fields []arrow.Field
	var cols []arrow.Array
	for _, s := range shapes {
		lb := array.NewStringBuilder(memory.DefaultAllocator)
		lb.AppendValues(s.labels, nil)
		dict := lb.NewArray()
		lb.Release()
		ib := array.NewInt32Builder(memory.DefaultAllocator)
		for k := range n {
			if c := s.code(k); c < 0 {
				ib.AppendNull()
			} else {
				ib.Append(c)
			}
		}
		idx := ib.NewArray()
		ib.Release()
		f := DictField(s.name)
		f.Nullable = s.nullable
		fields = append(fields, f)
		cols = append(cols, array.NewDictionaryArray(DictType, idx, dict))
		idx.Release()
		dict.Release()
	}
	return fields, cols
}

// labelPagesPerGroup: the columns of labelTestColumns that labelPages
// writes (unused, one, odd, many, huge), plus intPagesTestBatch's two
// label columns and cat (strings through stringDicts); id too where its
// row group's ids fit a dictionary page (stringDicts), so at least this
// many.
const labelPagesPerGroup = 5 + 3

// TestLabelScratchFindsEveryRepeat: distinct agrees with a map on
// dictionaries of 1 to 5,000 labels with no repeat or one repeat placed
// anywhere (first and last included), scratch reused across them as
// labelPages reuses it.
func TestLabelScratchFindsEveryRepeat(t *testing.T) {
	var s labelScratch
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 7, 64, 65, 1000, 5000} {
		for trial := range 20 {
			words := make([]string, n)
			for i := range words {
				words[i] = fmt.Sprintf("w%d", i)
			}
			r.Shuffle(n, func(i, j int) { words[i], words[j] = words[j], words[i] })
			if trial%2 == 1 && n > 1 {
				i, j := r.IntN(n), r.IntN(n-1)
				if j >= i {
					j++
				}
				if trial == 1 {
					i, j = 0, n-1
				}
				words[j] = words[i]
			}
			seen := map[string]bool{}
			want := true
			for _, w := range words {
				want = want && !seen[w]
				seen[w] = true
			}
			b := array.NewStringBuilder(memory.DefaultAllocator)
			b.AppendValues(words, nil)
			a := b.NewStringArray()
			b.Release()
			if got := s.distinct(a); got != want {
				t.Errorf("n = %d, trial %d: distinct = %v, want %v", n, trial, got, want)
			}
			a.Release()
		}
	}
}
