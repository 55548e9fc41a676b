package anonymize

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// A Plan whose schedules were dropped after Finish (its Dealers divert
// from flat copies of the sets, which Sets returns), and one told
// DivertOnly before Finish (which never makes them), publish exactly what
// the Plan that keeps them publishes, draw for draw, on random count
// vectors of both groupings, with and without a drop of N mod ℓ′ rows;
// Deal is unchanged too, and the three hold the same sets. So do the keep
// and divert-only Plans told DropCounts before pass 1, whose schedules
// are made in the counts' own memory (Counts is nil after Finish).
func TestDropSchedulesSameDraws(t *testing.T) {
	gen := rand.New(rand.NewPCG(21, 22))
	ran := 0
	for trial := range 60 {
		v := 2 + gen.IntN(90)
		l := 2 + gen.IntN(min(v-1, 6))
		g := Groupings[trial%len(Groupings)]
		// Rows spread so that the table is eligible for ℓ′: each value
		// at most N/ℓ′ times.
		n := l * (1 + gen.IntN(400))
		rows := make([][]uint32, n+gen.IntN(l))
		for i := range rows {
			rows[i] = []uint32{uint32(i % v), uint32(gen.IntN(v))}
		}
		if v < l {
			continue
		}
		// Both columns must be eligible for ℓ′ after the drop of up to
		// ℓ′ − 1 rows: each value at most N/ℓ′ − 1 times.
		ok := true
		for k := range 2 {
			counts := make([]int64, v)
			for _, row := range rows {
				counts[row[k]]++
			}
			ok = ok && slices.Max(counts) < int64(len(rows)/l)
		}
		if !ok {
			continue
		}
		ran++
		var out [5][][]uint32
		var types [5][][]int
		var want [][]uint32 // the kept schedules' sets, flat
		modes := []string{"keep", "drop", "divert only", "divert only, counts dropped", "keep, counts dropped"}
		for k, mode := range modes {
			p, err := NewPlan([]int{v, v}, l, g)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(mode, "divert only") {
				p.DivertOnly()
			}
			dropped := strings.HasSuffix(mode, "counts dropped")
			if dropped {
				p.DropCounts()
			}
			r := rand.New(rand.NewPCG(uint64(trial), 7))
			for _, row := range rows {
				if err := p.Count(row, r); err != nil {
					t.Fatal(err)
				}
			}
			if p.Counts(1) == nil {
				t.Fatalf("%s: no counts before Finish", mode)
			}
			if err := p.Finish(r); err != nil {
				t.Fatalf("trial %d: %v", trial, err)
			}
			if got := p.Counts(1) == nil; got != dropped {
				t.Fatalf("%s: counts gone after Finish: %v", mode, got)
			}
			if mode == "keep, counts dropped" {
				for k, sch := range p.Schedules {
					var flat []uint32
					for _, st := range sch.Types {
						flat = append(flat, st.Values...)
					}
					if !slices.Equal(flat, want[k]) {
						t.Fatalf("trial %d (%s): column %d: not the schedule of the counts kept", trial, mode, k)
					}
				}
			} else if mode == "keep" {
				want = nil
				for _, sch := range p.Schedules {
					var flat []uint32
					for _, st := range sch.Types {
						flat = append(flat, st.Values...)
					}
					want = append(want, flat)
				}
			} else {
				if mode == "drop" {
					p.DropSchedules()
				}
				for k := range want {
					if !slices.Equal(p.Sets(k), want[k]) {
						t.Fatalf("trial %d (%s): column %d: Sets is not the schedule's sets, flat", trial, mode, k)
					}
				}
				if p.Schedules != nil {
					t.Fatalf("%s: Schedules kept", mode)
				}
			}
			pub := make([]uint32, 2)
			for i, row := range rows {
				if i%3 == 2 {
					ty := make([]int, 2)
					ok, err := p.Deal(row, ty, r)
					if err != nil {
						t.Fatal(err)
					}
					if ok {
						types[k] = append(types[k], ty)
					}
					continue
				}
				ok, err := p.Divert(row, pub, r)
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					out[k] = append(out[k], slices.Clone(pub))
				}
			}
			if err := p.Done(); err != nil {
				t.Fatal(err)
			}
		}
		for k := 1; k < len(modes); k++ {
			if !slices.EqualFunc(out[0], out[k], slices.Equal) || !slices.EqualFunc(types[0], types[k], slices.Equal) {
				t.Fatalf("trial %d (V = %d, ℓ′ = %d, %s): the published values or dealt types differ without the schedules (mode %d)", trial, v, l, g, k)
			}
		}
	}
	if ran < 30 {
		t.Fatalf("only %d of 60 trials had eligible tables", ran)
	}
}

// TestDealerOwnSetsBytesPerType: on an 85k-value column under Anatomy's
// grouping (about 2 set types a value), a Dealer with its own flat sets
// holds at most 44 bytes a set type (33 measured: 20 of values, 15 of
// 24-bit pairs, the offsets less what the types' slices took), where the
// schedule and the Dealer together held about 93 (49 + 44) and the Dealer
// with 6-byte pairs and a total per value 53. (anonymize's Plan gives its
// Dealers 24-bit sets too: 15 bytes of values.) Deterministic up to the
// allocator's size classes.
func TestDealerOwnSetsBytesPerType(t *testing.T) {
	const v, l, rows = 85_000, 5, 4_000_000
	counts := make([]int64, v)
	r := rand.New(rand.NewPCG(11, 12))
	for range rows / 5 * 5 {
		counts[r.IntN(v)]++
	}
	var before, with, own runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := NewSchedule(counts, l, GroupingAnatomy, nil)
	if err != nil {
		t.Fatal(err)
	}
	types := len(s.Types)
	d := NewDealer(s)
	s = nil
	runtime.GC()
	runtime.ReadMemStats(&with)
	d.ownSets()
	runtime.GC()
	runtime.ReadMemStats(&own)
	runtime.KeepAlive(d)
	perWith := float64(with.HeapAlloc-before.HeapAlloc) / float64(types)
	perOwn := float64(own.HeapAlloc-before.HeapAlloc) / float64(types)
	t.Logf("%d set types: schedule + Dealer %.1f bytes a type, Dealer with its own sets %.1f", types, perWith, perOwn)
	if perOwn > 44 {
		t.Errorf("a Dealer with its own sets holds %.1f bytes a set type, more than 44", perOwn)
	}
}

// TestDealerBigPairs: pairs with more slots than their bits count (a few
// values and many rows: types of hundreds of thousands of groups, here
// with 16 bits for the type as if there were 2^16 types, leaving 8 or 16
// for the count in 24- or 32-bit pairs) keep their count in Dealer.big; the Dealer still deals exactly what the reference
// deals, draw for draw, down to empty, under both groupings (the random
// one with T = 4 runs, so that its runs are long).
func TestDealerBigPairs(t *testing.T) {
	defer func(T int64, b, w int) { randomRuns, dealerTypeBits, dealerWords = T, b, w }(randomRuns, dealerTypeBits, dealerWords)
	randomRuns, dealerTypeBits = 4, 16
	for _, width := range []int{24, 32} {
		dealerWords = width
		for _, g := range Groupings {
			const v, l, rows = 7, 3, 900_000
			r := rand.New(rand.NewPCG(8, 9))
			counts := make([]int64, v)
			seq := make([]uint32, rows)
			for i := range seq {
				x := uint32(r.IntN(v))
				if r.IntN(4) == 0 {
					x %= 3 // uneven counts
				}
				seq[i] = x
				counts[x]++
			}
			s, err := NewSchedule(counts, l, g, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			d, ref := NewDealer(s), newRefDealer(s)
			if len(d.big) == 0 {
				t.Fatalf("%s, %d bits: no pair with %d or more slots: the test needs bigger types", g, width, d.full())
			}
			r1, r2 := rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(3, 4))
			for i, x := range seq {
				got, err := d.Deal(x, r1)
				if err != nil {
					t.Fatalf("%s, %d bits: row %d: %v", g, width, i, err)
				}
				if want := ref.deal(x, r2); got != want {
					t.Fatalf("%s, %d bits: row %d (value %d): dealt type %d, the reference %d", g, width, i, x, got, want)
				}
			}
			if !d.Done() || len(d.big) != 0 {
				t.Fatalf("%s, %d bits: slots left after dealing every row (%d big pairs)", g, width, len(d.big))
			}
		}
	}
}
