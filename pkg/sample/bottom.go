package sample

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"slices"
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

// duplicate returns the first pair of equal priorities in items sorted by
// cmpItem: equal priorities are adjacent there, so one pass finds them.
func duplicate(items []Item) *DuplicateError {
	for i := 1; i < len(items); i++ {
		if items[i].Priority == items[i-1].Priority {
			return &DuplicateError{Kept: items[i-1], Row: items[i].Index}
		}
	}
	return nil
}

// BottomM keeps the m rows of smallest priority seen so far in a max-heap
// of size m: a row enters only if it beats the current m-th best, which
// happens O(m log(n/m)) times over n rows, so only those rows are copied.
//
// Rows of equal priority are noticed when both are kept (they are then
// adjacent in priority order) or when one arrives while the other is the
// m-th best (a tie at the boundary of the heap); a repeated priority that
// was never among the m best is not noticed, and does not change the
// sample.
type BottomM struct {
	m    int
	h    maxHeap
	seen int64
	tie  *DuplicateError // first tie with the heap's maximum
}

// NewBottomM returns a sampler of m rows; m must be ≥ 1.
func NewBottomM(m int) (*BottomM, error) {
	if m < 1 {
		return nil, fmt.Errorf("sample.NewBottomM: m must be at least 1, got %d", m)
	}
	return &BottomM{m: m, h: make(maxHeap, 0, min(m, 1<<20))}, nil
}

// Wants reports whether a row of priority p would be kept, or would tie
// with the m-th best (a repeated id, which Offer records); only then need
// the caller offer the row.
func (b *BottomM) Wants(p Priority) bool {
	return len(b.h) < b.m || !b.h[0].Priority.Less(p)
}

// Offer counts a row and keeps it if it is among the m best so far. row is
// called only when the row is kept and must return a copy the sampler can
// own.
func (b *BottomM) Offer(p Priority, row func() []string) {
	b.seen++
	if len(b.h) < b.m {
		heap.Push(&b.h, Item{p, row(), b.seen})
		return
	}
	if p.Less(b.h[0].Priority) {
		b.h[0] = Item{p, row(), b.seen}
		heap.Fix(&b.h, 0)
	} else if p == b.h[0].Priority && b.tie == nil {
		b.tie = &DuplicateError{Kept: b.h[0], Row: b.seen}
	}
}

// Seen is the number of rows offered (n).
func (b *BottomM) Seen() int64 { return b.seen }

// Sample returns the kept rows in increasing priority order, the order that
// aligns every curator's sample by position. It fails if fewer than m rows
// were offered, and with a *DuplicateError if two rows of one priority
// were seen among the kept rows or at the heap's boundary.
func (b *BottomM) Sample() ([]Item, error) {
	if int64(b.m) > b.seen {
		return nil, fmt.Errorf("cannot sample m = %d rows from a table of n = %d rows; choose m ≤ n", b.m, b.seen)
	}
	items := slices.Clone(b.h)
	slices.SortFunc(items, cmpItem)
	if d := duplicate(items); d != nil {
		return nil, d
	}
	if b.tie != nil {
		return nil, b.tie
	}
	return items, nil
}

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

type maxHeap []Item

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return h[j].Priority.Less(h[i].Priority) }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(Item)) }
func (h *maxHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
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
	f     float64
	items []Item
	seen  int64
	limit int // prune when items grows past this
}

// NewFraction returns a sampler of the fraction f ∈ (0, 1] of the rows.
func NewFraction(f float64) (*Fraction, error) {
	if !(f > 0 && f <= 1) {
		return nil, fmt.Errorf("sample.NewFraction: the fraction must be in (0, 1], got %v", f)
	}
	return &Fraction{f: f, limit: 1024}, nil
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

// Offer counts a row and keeps it if it may be in the sample.
func (s *Fraction) Offer(p Priority, row func() []string) {
	s.seen++
	if p.Hi >= s.bound() {
		return
	}
	s.items = append(s.items, Item{p, row(), s.seen})
	if len(s.items) > s.limit {
		b := s.bound()
		s.items = slices.DeleteFunc(s.items, func(it Item) bool { return it.Priority.Hi >= b })
		s.limit = max(2*len(s.items), 1024)
	}
}

// Seen is the number of rows offered (n).
func (s *Fraction) Seen() int64 { return s.seen }

// Sample returns the m rows of smallest priority in increasing order, m
// given by mOf(n) (round(f·n), or a planned m* ≤ that). It fails with a
// *DuplicateError if two rows below the final bound (a superset of the
// sample) share a priority.
func (s *Fraction) Sample(m int64) ([]Item, error) {
	if m < 1 || m > s.seen {
		return nil, fmt.Errorf("cannot sample m = %d rows from a table of n = %d rows; choose 1 ≤ m ≤ n", m, s.seen)
	}
	b := s.bound()
	kept := slices.DeleteFunc(s.items, func(it Item) bool { return it.Priority.Hi >= b })
	if int64(len(kept)) < m {
		return nil, fmt.Errorf("sampling by fraction kept %d rows below its bound but needs %d (a 6-sigma event): run again, or give -m with the row count", len(kept), m)
	}
	slices.SortFunc(kept, cmpItem)
	if d := duplicate(kept); d != nil {
		return nil, d
	}
	return kept[:m], nil
}
