package table

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestCoderTextCache: text cells code to lookup's codes whatever the
// labels' collisions in the cache (labels alike in length, first, middle
// and last byte) and however many distinct labels there are (more than the
// cache keeps); a label outside the codebook fails at its cell every time
// it comes; and lookup runs once per label the cache keeps, not per cell.
func TestCoderTextCache(t *testing.T) {
	codes := map[string]uint32{}
	var labels []string
	// "aXb" for 6 X: one length, first, middle and last byte each, so all
	// 6 share a slot; then more distinct labels than the cache keeps.
	for x := range 6 {
		labels = append(labels, fmt.Sprintf("a%cb", 'A'+x))
	}
	for i := range 3 * maxCachedLabels {
		labels = append(labels, fmt.Sprintf("label-%d", i))
	}
	for i, l := range labels {
		codes[l] = uint32(i)
	}
	calls := map[string]int{}
	c := NewCoder(func(s string) (uint32, error) {
		calls[s]++
		if code, ok := codes[s]; ok {
			return code, nil
		}
		return 0, &UnknownLabelError{Label: s}
	})
	r := rand.New(rand.NewPCG(1, 2))
	for batch := range 20 {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		want := make([]string, 5000)
		for i := range want {
			// Mostly the colliding labels and the first 100 others, which
			// come first, and so are kept.
			switch k := r.IntN(10); {
			case k < 5:
				want[i] = labels[r.IntN(6)]
			case k < 9:
				want[i] = labels[6+r.IntN(100)]
			default:
				want[i] = labels[r.IntN(len(labels))]
			}
			b.Append(want[i])
		}
		bad := -1
		if batch%4 == 3 {
			bad = 1234
			b2 := array.NewStringBuilder(memory.DefaultAllocator)
			for i, s := range want {
				if i == bad {
					s = "a?b" // collides with the aXb labels, not in the codebook
				}
				b2.Append(s)
			}
			b.Release()
			b = b2
		}
		a := b.NewStringArray()
		b.Release()
		dst := make([]uint32, len(want)-7)
		i, err := c.Codes(dst, a, 7)
		if bad >= 0 {
			var ue *UnknownLabelError
			if i != bad-7 || !errors.As(err, &ue) || ue.Label != "a?b" {
				t.Fatalf("batch %d: bad cell %d, err %v; want cell %d and a?b", batch, i, err, bad-7)
			}
			dst = dst[:i]
		} else if i >= 0 {
			t.Fatalf("batch %d: cell %d: %v", batch, i, err)
		}
		for i, got := range dst {
			if w := codes[want[7+i]]; got != w {
				t.Fatalf("batch %d, cell %d (%s): code %d, want %d", batch, 7+i, want[7+i], got, w)
			}
		}
		a.Release()
	}
	if calls["a?b"] != 5 {
		t.Errorf("the unknown label was looked up %d times, want 5 (once per batch that holds it)", calls["a?b"])
	}
	for _, l := range labels[:106] {
		if calls[l] > 1 {
			t.Errorf("%s was looked up %d times: the cache should keep it after the first", l, calls[l])
		}
	}
}

// BenchmarkCoderText: coding a CSV column of codebook labels.
func BenchmarkCoderText(b *testing.B) {
	labels := []string{"HS-grad", "Some-college", "Bachelors", "Masters", "Assoc-voc", "11th", "Assoc-acdm", "10th", "7th-8th", "Prof-school", "9th", "12th", "Doctorate", "5th-6th", "1st-4th", "Preschool"}
	codes := map[string]uint32{}
	for i, l := range labels {
		codes[l] = uint32(i)
	}
	r := rand.New(rand.NewPCG(1, 2))
	bld := array.NewStringBuilder(memory.DefaultAllocator)
	for range 1 << 16 {
		bld.Append(labels[r.IntN(len(labels))])
	}
	a := bld.NewStringArray()
	defer a.Release()
	c := MapCoder(codes)
	dst := make([]uint32, a.Len())
	b.SetBytes(int64(a.Len()))
	for b.Loop() {
		if i, err := c.Codes(dst, a, 0); i >= 0 {
			b.Fatal(err)
		}
	}
}
