package anonymize

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// refDealer is the dealer as it was before the flat layout: a slice of
// types and an urn per value (Schedule.Slots, newUrn). The flat Dealer
// must draw exactly what it draws, so that seeded outputs do not change.
type refDealer struct {
	slots [][]int
	left  []*urn
}

func newRefDealer(s *Schedule) *refDealer {
	d := &refDealer{slots: s.Slots(), left: make([]*urn, s.V)}
	for v, ts := range d.slots {
		if len(ts) == 0 {
			continue
		}
		w := make([]int64, len(ts))
		for i, t := range ts {
			w[i] = s.Types[t].Groups
		}
		d.left[v] = newUrn(w)
	}
	return d
}

func (d *refDealer) deal(v uint32, r *rand.Rand) int {
	u := d.left[v]
	i := 0
	if len(d.slots[v]) > 1 {
		i = u.find(r.Int64N(u.total()))
	}
	u.set(i, u.weight(i)-1)
	return d.slots[v][i]
}

// TestDealerMatchesReference deals every slot of schedules whose values
// hold one type, a few (flat scan) and more than flatUrnMax (tree), with
// the flat Dealer and the per-value reference from the same seed: the
// types dealt must agree draw for draw, and both must end empty.
func TestDealerMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    int
		rows int64
		g    Grouping
	}{
		{"V=12 random (trees)", 12, 60_000, GroupingRandom},
		{"V=12 anatomy", 12, 60_000, GroupingAnatomy},
		{"V=3000 random (flat)", 3000, 60_000, GroupingRandom},
		{"V=3000 anatomy", 3000, 60_000, GroupingAnatomy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const l = 5
			r := rand.New(rand.NewPCG(7, uint64(tc.v)))
			counts := make([]int64, tc.v)
			var rows []uint32
			for i := int64(0); i < tc.rows; i++ {
				v := uint32(r.IntN(tc.v))
				if r.IntN(3) == 0 {
					v %= uint32(max(1, tc.v/4)) // uneven counts
				}
				counts[v]++
				rows = append(rows, v)
			}
			// Drop rows until the total is a multiple of ℓ′.
			for len(rows)%l != 0 {
				counts[rows[len(rows)-1]]--
				rows = rows[:len(rows)-1]
			}
			s, err := NewSchedule(counts, l, tc.g, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			if tc.g == GroupingRandom && tc.v == 12 {
				trees := 0
				for _, ts := range s.Slots() {
					if len(ts) > flatUrnMax {
						trees++
					}
				}
				if trees == 0 {
					t.Fatalf("no value has more than %d types: the tree path is not tested", flatUrnMax)
				}
			}
			// Pairs of the width the Dealer picks, and of each forced.
			defer func(w int) { dealerWords = w }(dealerWords)
			for _, width := range []int{0, 24, 32} {
				dealerWords = width
				d, ref := NewDealer(s), newRefDealer(s)
				r1, r2 := rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(3, 4))
				for i, v := range rows {
					got, err := d.Deal(v, r1)
					if err != nil {
						t.Fatalf("%d-bit pairs: row %d: %v", width, i, err)
					}
					if want := ref.deal(v, r2); got != want {
						t.Fatalf("%d-bit pairs: row %d (value %d): dealt type %d, the reference %d", width, i, v, got, want)
					}
				}
				if !d.Done() {
					t.Fatalf("%d-bit pairs: slots left after dealing every row", width)
				}
				if _, err := d.Deal(rows[0], r1); err == nil {
					t.Fatalf("%d-bit pairs: a row beyond the counts got a slot", width)
				}
			}
		})
	}
}

// TestDealerBytesPerValue bounds the Dealer's memory per codebook value on
// an 85k-value column (issue 11: peak RSS ≤ 100 MB whatever the columns'
// cardinality). The per-value layout (a slice of types and an urn per
// value) took about 150 bytes a value at 4M rows (~47 rows a value, ~4
// types a value); a flat one with 8 bytes a value (offset, total) and 6 a
// (value, type) pair 32; a 32-bit word a pair and the offset alone 20;
// 24-bit pairs (67k types: 17 bits of type, 7 of count) 16, and with
// 2-byte offsets 14 here. The guard, 15 bytes a value, fails on 4-byte
// offsets or 32-bit pairs; the measure is deterministic up to the
// allocator's size classes.
func TestDealerBytesPerValue(t *testing.T) {
	const v, l, rows = 85_000, 5, 4_000_000
	counts := make([]int64, v)
	r := rand.New(rand.NewPCG(11, 12))
	for range rows / 5 * 5 {
		counts[r.IntN(v)]++
	}
	s, err := NewSchedule(counts, l, GroupingRandom, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d := NewDealer(s)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(d)
	per := float64(after.HeapAlloc-before.HeapAlloc) / v
	pairs := float64(d.pair.len()) / v
	t.Logf("Dealer: %.1f bytes a value (%d types, %.1f types a value)", per, len(s.Types), pairs)
	if per > 15 {
		t.Errorf("Dealer holds %.1f bytes a value on %d values, more than 15", per, v)
	}
}

// TestScheduleSetsFromArena checks the schedule whose sets' values are cut
// from shared chunks (setBag.keep) on an 85k-value column under Anatomy's
// grouping (about one set per group there, 180k sets, many chunks): every
// set must be its own, with no room to grow into the next (cap = len),
// ascending, and the schedule must still give each value its count
// (checkSchedule).
func TestScheduleSetsFromArena(t *testing.T) {
	const v, l, rows = 85_000, 5, 4_000_000
	counts := make([]int64, v)
	r := rand.New(rand.NewPCG(11, 12))
	for range rows / 5 * 5 {
		counts[r.IntN(v)]++
	}
	s, err := NewSchedule(counts, l, GroupingAnatomy, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Types) <= arenaSets {
		t.Fatalf("%d sets fit one arena chunk of %d: the test needs more", len(s.Types), arenaSets)
	}
	if cap(s.Types) != len(s.Types) {
		t.Errorf("Types has %d spare slots", cap(s.Types)-len(s.Types))
	}
	for i, st := range s.Types {
		if len(st.Values) != l || cap(st.Values) != l {
			t.Fatalf("set %d: len %d cap %d, want %d and %d", i, len(st.Values), cap(st.Values), l, l)
		}
		for j := 1; j < l; j++ {
			if st.Values[j-1] >= st.Values[j] {
				t.Fatalf("set %d: values %v not ascending", i, st.Values)
			}
		}
	}
	checkSchedule(t, s, counts, l)
}

// TestWordsRoundTrip: 24- and 32-bit words give back what was put, at
// every place (the last 24-bit word reads the padding byte) and at the
// widths' largest values, without touching their neighbours.
func TestWordsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, narrow := range []bool{false, true} {
		const n = 1001
		w := newWords(n, narrow)
		top := uint32(1<<32 - 1)
		if narrow {
			top = maxU24
		}
		want := make([]uint32, n)
		for _, i := range r.Perm(n) {
			x := r.Uint32() & top
			if i%7 == 0 {
				x = top
			}
			w.put(i, x)
			want[i] = x
		}
		if w.len() != n {
			t.Fatalf("narrow %v: %d words, want %d", narrow, w.len(), n)
		}
		for i := range n {
			if got := w.at(i); got != want[i] {
				t.Fatalf("narrow %v: word %d is %#x, want %#x", narrow, i, got, want[i])
			}
		}
		if got := w.uint32s(); !slices.Equal(got, want) {
			t.Fatalf("narrow %v: uint32s differs", narrow)
		}
	}
}

// TestOffsetsBothForms: offsets give back every entry of the array they
// were made of, compressed (every block of offsetBlock entries spans less
// than 2^16) or not (one block spans more), at block boundaries too.
func TestOffsetsBothForms(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		name       string
		gap        int  // largest step between entries
		compressed bool // the form expected
	}{
		{"small steps", 40, true},
		{"a block past 2^16", 1 << 12, false},
	} {
		off := make([]uint32, 5*offsetBlock+3)
		for i := 1; i < len(off); i++ {
			off[i] = off[i-1] + uint32(r.IntN(tc.gap+1))
		}
		if tc.compressed && off[offsetBlock] >= 1<<16 {
			t.Fatalf("%s: the test's steps are too large", tc.name)
		}
		o := newOffsets(slices.Clone(off))
		if got := o.all == nil; got != tc.compressed {
			t.Fatalf("%s: compressed %v, want %v", tc.name, got, tc.compressed)
		}
		if o.values() != len(off)-1 {
			t.Fatalf("%s: %d values, want %d", tc.name, o.values(), len(off)-1)
		}
		for i, x := range off {
			if got := o.at(uint32(i)); got != x {
				t.Fatalf("%s: entry %d is %d, want %d", tc.name, i, got, x)
			}
		}
	}
}
