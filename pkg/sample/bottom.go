package sample

import (
	"cmp"
	"fmt"
	"math"
)

// Item is a kept row with its priority.
type Item struct {
	Priority Priority
	Row      []string
	// Index is the row's 1-based position among the rows offered, for
	// error messages.
	Index int64
}

// DuplicateError reports two rows of one priority: with ids, one id given
// twice (the PRF gives equal ids equal priorities, while distinct ids tie
// with probability about n²/2^129, negligible). Such rows would be kept or
// dropped together, so a repeated id can fill the sample with copies of
// one person. Kept is the row that was kept; Row is the other's index.
type DuplicateError struct {
	Kept Item
	Row  int64
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("rows %d and %d have the same sampling priority (the same id)", min(e.Kept.Index, e.Row), max(e.Kept.Index, e.Row))
}

// BottomM keeps the m rows of smallest priority seen so far. Once it holds
// 1024 rows (minRanged), a row enters only if its priority is below a
// threshold τ that can only fall: the end of the first of 2^16 equal
// priority ranges (the top 16 bits) by which the rows kept so far reach
// m. The final m-th smallest priority is below every such τ — m kept rows
// already lie below it — so no row it refuses can be sampled, and a row
// tying with the m-th best, in the same range, is kept. Past the first m
// rows, τ is within one range of the m-th best: a row is kept with
// probability about (m + n/2^16)/n, so only O(m log(n/m) + n/2^16) rows
// are ever copied.
//
// The kept rows live in a store: in memory up to Budget bytes, the rest in
// sorted runs in temporary files, merged at the end; memory does not grow
// with m (Close removes the files).
//
// Rows of equal priority are noticed when both are among the m best, or
// when one is the m-th best and the other the next in priority order (a tie
// at the boundary); a repeated priority that was never among the m best is
// not noticed, and does not change the sample.
type BottomM struct {
	m     int64
	seen  int64
	kept  store
	hist  []int64 // kept rows by priority range (top 16 bits), from minRanged kept rows on
	top   int     // the range τ ends: the first by which the kept rows reach m
	below int64   // kept rows in ranges 0..top
}

// rangeBits is the bits of priority (the top ones) that name BottomM's ranges.
const rangeBits = 16

// NewBottomM returns a sampler of m rows; m must be ≥ 1.
func NewBottomM(m int) (*BottomM, error) {
	if m < 1 {
		return nil, fmt.Errorf("sample.NewBottomM: m must be at least 1, got %d", m)
	}
	return &BottomM{m: int64(m), top: 1<<rangeBits - 1}, nil
}

// Wants reports whether a row of priority p would be kept; only then need
// the caller offer the row.
func (b *BottomM) Wants(p Priority) bool { return int(p.Hi>>(64-rangeBits)) <= b.top }

// Offer counts a row and keeps it if it may be among the m best. row is
// called only when the row is kept and must return a copy the sampler can
// own. The error is that of writing kept rows to a temporary file.
func (b *BottomM) Offer(p Priority, row func() []string) error {
	b.seen++
	if b.hist != nil {
		r := int(p.Hi >> (64 - rangeBits))
		if r > b.top {
			return nil
		}
		b.hist[r]++
		b.below++
		b.lower()
	}
	if err := b.kept.add(Item{p, row(), b.seen}, b.Wants); err != nil {
		return err
	}
	if b.hist == nil && b.kept.rows() == minRanged {
		return b.startRanges()
	}
	return nil
}

// minRanged is the kept rows at which a BottomM starts counting its rows
// by range: a sampler of a small table never makes the histogram
// (512 KiB), and the first rows are counted from memory (unless rows
// of over 16 KiB made the store spill them).
const minRanged = 1024

// startRanges counts the kept rows by range.
func (b *BottomM) startRanges() error {
	b.hist = make([]int64, 1<<rangeBits)
	err := b.kept.eachPriority(func(p Priority) {
		b.hist[p.Hi>>(64-rangeBits)]++
	})
	b.below = b.kept.rows()
	b.lower()
	return err
}

// lower moves τ down to the end of the first range by which the kept rows
// reach m.
func (b *BottomM) lower() {
	for b.below-b.hist[b.top] >= b.m {
		b.below -= b.hist[b.top]
		b.top--
	}
}

// Seen is the number of rows offered (n).
func (b *BottomM) Seen() int64 { return b.seen }

// Sample calls emit with the m kept rows of smallest priority, in
// increasing priority order, the order that aligns every curator's sample
// by position. It fails if fewer than m rows were offered, and with a
// *DuplicateError if two of the rows share a priority, or the m-th and the
// next kept row do (emit may have been called for the rows before).
func (b *BottomM) Sample(emit func(Item) error) error {
	if b.m > b.seen {
		return fmt.Errorf("cannot sample m = %d rows from a table of n = %d rows; choose m ≤ n", b.m, b.seen)
	}
	var prev Item
	var i int64
	return b.kept.each(func(it Item) (bool, error) {
		if i > 0 && it.Priority == prev.Priority {
			return false, &DuplicateError{Kept: prev, Row: it.Index}
		}
		if i == b.m {
			return false, nil // the row after the m-th: no tie
		}
		i++
		prev = it
		return true, emit(it)
	})
}

// Close removes the sampler's temporary files, if any.
func (b *BottomM) Close() error { return b.kept.close() }

func cmpPriority(x, y Priority) int {
	switch {
	case x.Less(y):
		return -1
	case y.Less(x):
		return 1
	}
	return 0
}

// cmpItem orders by priority, then by row index, so that a repeated
// priority's first two rows are the first two of its run.
func cmpItem(x, y Item) int {
	if c := cmpPriority(x.Priority, y.Priority); c != 0 {
		return c
	}
	return cmp.Compare(x.Index, y.Index)
}

// Fraction samples m = round(f·n) rows when n is not known in advance (a
// CSV stream). Priorities are uniform on [0, 2^128), so the m-th smallest
// sits near f·2^128; the sampler keeps every row whose priority is below
//
//	bound(n) = f + z·√(f(1−f)/n) + z/n   (as a fraction of 2^128, z = 6)
//
// for the rows seen so far. bound shrinks as n grows, so every row below
// the final bound was kept, and the bottom-m set is exact whenever at least
// m rows fall below the final bound; that fails only if a Binomial(n,
// bound) count falls 6 standard deviations short, probability < 1e-9, and
// then Sample says so rather than return a wrong sample. Memory: about
// f·n + 6√n rows.
type Fraction struct {
	f    float64
	kept store
	seen int64
}

// NewFraction returns a sampler of the fraction f ∈ (0, 1] of the rows.
func NewFraction(f float64) (*Fraction, error) {
	if !(f > 0 && f <= 1) {
		return nil, fmt.Errorf("sample.NewFraction: the fraction must be in (0, 1], got %v", f)
	}
	return &Fraction{f: f}, nil
}

const boundZ = 6

func (s *Fraction) bound() uint64 {
	n := float64(max(s.seen, 1))
	b := s.f + boundZ*math.Sqrt(s.f*(1-s.f)/n) + boundZ/n
	if b >= 1 {
		return math.MaxUint64
	}
	return uint64(b * (1 << 64))
}

// Wants reports whether a row of priority p would be kept.
func (s *Fraction) Wants(p Priority) bool { return p.Hi < s.bound() }

// Offer counts a row and keeps it if it may be in the sample. The error
// is that of writing kept rows to a temporary file.
func (s *Fraction) Offer(p Priority, row func() []string) error {
	s.seen++
	if p.Hi >= s.bound() {
		return nil
	}
	return s.kept.add(Item{p, row(), s.seen}, s.Wants)
}

// Seen is the number of rows offered (n).
func (s *Fraction) Seen() int64 { return s.seen }

// Sample calls emit with the m rows of smallest priority in increasing
// order, m given by the caller (round(f·n), or a planned m* ≤ that). It
// fails with a *DuplicateError if two rows below the final bound (a
// superset of the sample) share a priority (emit may have been called for
// the rows before).
func (s *Fraction) Sample(m int64, emit func(Item) error) error {
	if m < 1 || m > s.seen {
		return fmt.Errorf("cannot sample m = %d rows from a table of n = %d rows; choose 1 ≤ m ≤ n", m, s.seen)
	}
	b := s.bound()
	// Count first: too few rows below the bound is an error before any
	// row is emitted.
	var below int64
	if err := s.kept.each(func(it Item) (bool, error) {
		if it.Priority.Hi >= b {
			return false, nil
		}
		below++
		return below < m, nil
	}); err != nil {
		return err
	}
	if below < m {
		return fmt.Errorf("sampling by fraction kept %d rows below its bound but needs %d (a 6-sigma event): run again, or give -m with the row count", below, m)
	}
	var prev Item
	var i int64
	return s.kept.each(func(it Item) (bool, error) {
		if it.Priority.Hi >= b {
			return false, nil
		}
		if i > 0 && it.Priority == prev.Priority {
			return false, &DuplicateError{Kept: prev, Row: it.Index}
		}
		i++
		prev = it
		if i > m {
			return true, nil // past the sample: only looking for ties
		}
		return true, emit(it)
	})
}

// Close removes the sampler's temporary files, if any.
func (s *Fraction) Close() error { return s.kept.close() }
