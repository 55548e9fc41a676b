package anonymize

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// Reservoir keeps a uniformly random subset of the rows offered so far, at
// most K of them (Algorithm R, Vitter 1985), with their sensitive values.
// Streaming A′ offers every kept row in pass 1 to a reservoir of K = ℓ′ − 1
// and then drops a uniformly random N mod ℓ′ of those K: a uniformly random
// subset of a uniformly random K-subset is a uniformly random subset of the
// N rows, as the in-memory drop of the largest ids is.
type Reservoir struct {
	k, cols int
	seen    int64
	rows    []int64
	vals    []uint32 // cols values per kept row
}

// NewReservoir keeps up to k rows of cols sensitive values each.
func NewReservoir(k, cols int) *Reservoir {
	return &Reservoir{k: k, cols: cols, rows: make([]int64, 0, k), vals: make([]uint32, 0, k*cols)}
}

// Offer offers the next row (its number and its value in each sensitive
// column); the i-th row offered (from 0) replaces a random candidate with
// probability k/(i+1).
func (r *Reservoir) Offer(row int64, vals []uint32, rnd *rand.Rand) {
	i := r.seen
	r.seen++
	if len(r.rows) < r.k {
		r.rows = append(r.rows, row)
		r.vals = append(r.vals, vals...)
		return
	}
	if r.k == 0 {
		return
	}
	if j := rnd.Int64N(i + 1); j < int64(r.k) {
		r.rows[j] = row
		copy(r.vals[int(j)*r.cols:], vals)
	}
}

// Seen is the number of rows offered.
func (r *Reservoir) Seen() int64 { return r.seen }

// Drop chooses d of the candidates uniformly at random (d ≤ the number of
// candidates) and returns their row numbers, ascending, and their values:
// vals[i] holds the cols values of rows[i].
func (r *Reservoir) Drop(d int, rnd *rand.Rand) (rows []int64, vals [][]uint32, err error) {
	if d < 0 || d > len(r.rows) {
		return nil, nil, fmt.Errorf("anonymize.Reservoir.Drop: %d rows asked of %d candidates", d, len(r.rows))
	}
	idx := make([]int, len(r.rows))
	for i := range idx {
		idx[i] = i
	}
	// Partial Fisher–Yates: idx[:d] is a uniform d-subset.
	for i := range d {
		j := i + rnd.IntN(len(idx)-i)
		idx[i], idx[j] = idx[j], idx[i]
	}
	idx = idx[:d]
	slices.SortFunc(idx, func(a, b int) int { return int(r.rows[a] - r.rows[b]) })
	for _, i := range idx {
		rows = append(rows, r.rows[i])
		vals = append(vals, slices.Clone(r.vals[i*r.cols:(i+1)*r.cols]))
	}
	return rows, vals, nil
}

// Dealer hands out a schedule's slots to the rows of one sensitive column
// in pass 2 of streaming A′: each row of value v gets one of v's remaining
// slots uniformly at random, without replacement. Only the slot's set type
// matters for the published value, so the dealer draws the type, with
// probability proportional to v's remaining slots in it, and keeps for
// each value one count per type (a tree when the value has several types).
//
// Memory: the (value, type) pairs live in one flat array indexed by value
// (compressed rows: off[v]..off[v+1]), a word a pair and 2 bytes a value
// (offsets):
// a pair's word holds its type in the high bits and its remaining slots in
// the low ones, as many as the types leave, and is of 24 bits (3 bytes)
// when the types leave the counts at least 4 (at most 2^20 types) and
// fewer than one pair in 64 has a count that does not fit, else of 32. A
// pair whose count does not fit keeps it in a map. A value's remaining
// slots are the sum of its pairs', summed when a row comes (2.5 pairs a
// value at 1M values) rather than stored. The sets a Dealer publishes
// from, ℓ′ values a type, are of 24 bits too when all values are (Plan
// with DivertOnly). So a column of 1M values at 4M rows under the random
// grouping (491k types, 19 bits of type, 5 of count) holds 2 + 3·2.5
// bytes a value plus 3ℓ′ bytes a type: 17 bytes a value all told, where a
// slice and an urn per value took about 155 for the pairs alone, 6 bytes
// a pair with 8 a value and 4ℓ′ a type 31, and 32-bit words 23
// (TestDealerBytesPerValue). Only a value held by more than flatUrnMax
// types gets a segment tree (urn) of its own. The random grouping has at
// most 2^14 + V + ℓ′ + 1 types, so ℓ′ times that many pairs, whatever the
// rows (randomSets).
type Dealer struct {
	s    *Schedule         // nil once ownSets has copied the sets
	sets words             // without s: set type t's values are sets[t·ℓ′ : (t+1)·ℓ′]
	l    int               // ℓ′
	off  offsets           // value v's pairs are off.at(v)..off.at(v+1)−1
	pair words             // per pair: type<<bits | remaining slots (all ones: in big)
	bits uint              // the low bits of a pair that count its slots
	big  map[uint32]uint32 // pairs whose remaining slots do not fit their bits: how many
	tree map[uint32]*urn   // values with more than flatUrnMax types
}

// NewDealer prepares to deal the slots of s.
func NewDealer(s *Schedule) *Dealer {
	d := newDealer(s.V, s.L, len(s.Types), func(t, j int) uint32 { return s.Types[t].Values[j] }, func(t int) int64 { return s.Types[t].Groups })
	d.s = s
	return d
}

// newFlatDealer prepares to deal the slots of the sets f of a schedule
// over v values at ℓ′ = l, keeping f's values as its own sets (as
// ownSets leaves them).
func newFlatDealer(v, l int, f flatSets) *Dealer {
	d := newDealer(v, l, len(f.groups), func(t, j int) uint32 { return f.values.at(t*l + j) }, func(t int) int64 { return int64(f.groups[t]) })
	d.sets = f.values
	return d
}

// dealerTypeBits is the fewest bits a Dealer gives a pair's type: 0, the
// bits its number of types needs; dealerWords, when not 0, forces pairs of
// that many bits (24 or 32). Variables only so that tests can make the
// slot counts' bits few, and reach Dealer.big cheaply, in either width.
var dealerTypeBits, dealerWords = 0, 0

// newDealer prepares to deal the slots of n set types over v values,
// type t having the values val(t, 0), …, val(t, l−1) and groups(t)
// groups.
func newDealer(v, l, n int, val func(t, j int) uint32, groups func(t int) int64) *Dealer {
	d := &Dealer{l: l}
	off := make([]uint32, v+1)
	for t := range n {
		for j := range l {
			off[val(t, j)+1]++
		}
	}
	// off[x+1] becomes the start of x's pairs, then, as they are placed,
	// their end: the start of x+1's (no second array of cursors).
	var pairs uint32
	for x := range v {
		c := off[x+1]
		off[x+1] = pairs
		pairs += c
	}
	typeBits := uint(max(bits.Len32(uint32(max(n, 1)-1)), dealerTypeBits, 1))
	width := uint(32)
	if typeBits+4 <= 24 {
		// 24-bit pairs unless more than one in 64 would keep its count in
		// the map.
		full := int64(1)<<(24-typeBits) - 1
		escapes := 0
		for t := range n {
			if groups(t) >= full {
				escapes += l
			}
		}
		if 64*escapes <= int(pairs) {
			width = 24
		}
	}
	if dealerWords == 32 || dealerWords == 24 && typeBits < 24 {
		width = uint(dealerWords)
	}
	d.bits = width - typeBits
	d.pair = newWords(int(pairs), width == 24)
	// Types in increasing order: each value's pairs come out sorted by type,
	// the order of Schedule.Slots, which fixes the draws of a seeded run.
	for t := range n {
		g := groups(t)
		for j := range l {
			x := val(t, j)
			i := off[x+1]
			off[x+1]++
			d.pair.put(int(i), uint32(t)<<d.bits)
			d.setLeft(i, g)
		}
	}
	for x := range v {
		if m := off[x+1] - off[x]; m > flatUrnMax {
			if d.tree == nil {
				d.tree = map[uint32]*urn{}
			}
			w := make([]int64, m)
			for i := range w {
				w[i] = d.slots(off[x] + uint32(i))
			}
			d.tree[uint32(x)] = newUrnMode(w, false, true)
		}
	}
	d.off = newOffsets(off)
	return d
}

// full is a pair's slot count that says its count is in Dealer.big.
func (d *Dealer) full() uint32 { return 1<<d.bits - 1 }

// setLeft sets pair p's remaining slots to c.
func (d *Dealer) setLeft(p uint32, c int64) {
	full := d.full()
	w := d.pair.at(int(p)) &^ full
	if c < int64(full) {
		d.pair.put(int(p), w|uint32(c))
		delete(d.big, p)
		return
	}
	if d.big == nil {
		d.big = map[uint32]uint32{}
	}
	d.pair.put(int(p), w|full)
	d.big[p] = uint32(c)
}

// slots returns pair p's remaining slots.
func (d *Dealer) slots(p uint32) int64 {
	full := d.full()
	if c := d.pair.at(int(p)) & full; c != full {
		return int64(c)
	}
	return int64(d.big[p])
}

// take removes one of pair p's remaining slots (there is one).
func (d *Dealer) take(p uint32) {
	if w := d.pair.at(int(p)); w&d.full() != d.full() {
		d.pair.put(int(p), w-1)
		return
	}
	d.setLeft(p, int64(d.big[p])-1)
}

// errNoSlot: a row of a value whose slots are all dealt; the counts of
// pass 2 differ from pass 1's, which a changed input would cause.
var errNoSlot = errors.New("more rows of this value than in the first pass (did the input change between the passes?)")

// Deal gives a row of value v one of v's remaining slots, drawn uniformly,
// and returns the slot's set type (an index into the schedule's Types).
func (d *Dealer) Deal(v uint32, r *rand.Rand) (int, error) {
	if int(v) >= d.off.values() {
		return 0, fmt.Errorf("value index %d: %w", v, errNoSlot)
	}
	lo, hi := d.off.at(v), d.off.at(v+1)
	full := d.full()
	i := uint32(0)
	switch n := hi - lo; {
	case n == 0:
		return 0, fmt.Errorf("value index %d: %w", v, errNoSlot)
	case n == 1:
		if d.pair.at(int(lo))&full == 0 {
			return 0, fmt.Errorf("value index %d: %w", v, errNoSlot)
		}
	case n > flatUrnMax:
		u := d.tree[v]
		tot := u.total()
		if tot == 0 {
			return 0, fmt.Errorf("value index %d: %w", v, errNoSlot)
		}
		i = uint32(u.find(r.Int64N(tot)))
		u.set(int(i), u.weight(int(i))-1)
	default:
		// The flat urn's scan (urn.find), on the value's own pairs, after
		// their sum.
		var tot int64
		for p := lo; p < hi; p++ {
			tot += d.slots(p)
		}
		if tot == 0 {
			return 0, fmt.Errorf("value index %d: %w", v, errNoSlot)
		}
		x := r.Int64N(tot)
		for ; i < n-1; i++ {
			c := d.slots(lo + i)
			if x < c {
				break
			}
			x -= c
		}
	}
	d.take(lo + i)
	return int(d.pair.at(int(lo+i)) >> d.bits), nil
}

// Divert deals a slot to a row of value v and returns the value it
// publishes: a uniformly random member of the slot's set (A′ step 3,
// p = q = 1/ℓ′).
func (d *Dealer) Divert(v uint32, r *rand.Rand) (uint32, error) {
	t, err := d.Deal(v, r)
	if err != nil {
		return 0, err
	}
	if d.s == nil {
		return d.sets.at(t*d.l + r.IntN(d.l)), nil
	}
	vals := d.s.Types[t].Values
	return vals[r.IntN(len(vals))], nil
}

// ownSets copies the schedule's sets into one flat array of ℓ′ values a
// set type, in type order, and lets go of the schedule: 4ℓ′ bytes a type
// instead of the schedule's SetType (32 bytes) plus its values (4ℓ′), so
// that a Dealer that only diverts holds half as much per type once nothing
// else holds the schedule (Plan.DropSchedules). Divert draws the same
// values from it.
func (d *Dealer) ownSets() {
	if d.s == nil {
		return
	}
	if d.s.flat(d.l) {
		d.sets = words{u32: d.s.values}
	} else {
		sets := make([]uint32, 0, d.l*len(d.s.Types))
		for _, st := range d.s.Types {
			sets = append(sets, st.Values...)
		}
		d.sets = words{u32: sets}
	}
	d.s = nil
}

// flat tells whether s.Types' values are s.values, in order, ℓ′ a type,
// as NewSchedule leaves them: ownSets then keeps s.values as they are.
func (s *Schedule) flat(l int) bool {
	if len(s.values) != l*len(s.Types) {
		return false
	}
	for t, st := range s.Types {
		if len(st.Values) != l || &st.Values[0] != &s.values[t*l] {
			return false
		}
	}
	return true
}

// Done reports whether every slot has been dealt.
func (d *Dealer) Done() bool {
	full := d.full()
	for p := range d.pair.len() {
		if d.pair.at(p)&full != 0 {
			return false
		}
	}
	return true
}

// Plan is streaming A′ over one table (the two passes of the package doc):
// Count every kept row in pass 1, Finish, then Divert every kept row again,
// in the same order, in pass 2. Memory: O(V + distinct sets · ℓ′) per
// sensitive column (distinct sets ≤ min(C(V, ℓ′), N/ℓ′), and
// ≤ 2^14 + V + ℓ′ + 1 for the random grouping) and O(ℓ′) for the drop, whatever the number
// of rows.
type Plan struct {
	l        int
	grouping Grouping
	counts   [][]int64
	res      *Reservoir
	// Dropped lists the kept-row numbers (0-based, in the order counted)
	// left out so that the rest is a multiple of ℓ′, ascending.
	Dropped []int64
	// DroppedVals[i] holds the sensitive values of Dropped[i].
	DroppedVals [][]uint32
	// Schedules holds each sensitive column's schedule after Finish.
	Schedules  []*Schedule
	dealers    []*Dealer
	divertOnly bool       // DivertOnly
	keepBase   bool       // KeepGroupBase
	dropCounts bool       // DropCounts before Finish: Finish consumes them
	bases      [][]uint32 // GroupBase, per column
	groups     int64      // the groups of every column, after Finish
	numbering  bool       // Done found every slot dealt: Number may count
	next       int        // index into Dropped of the next row to skip
	row        int64      // rows seen in pass 2
}

// NewPlan starts streaming A′ at ℓ′ = l for sensitive columns with
// codebook sizes v.
func NewPlan(v []int, l int, g Grouping) (*Plan, error) {
	if l < 2 {
		return nil, fmt.Errorf("anonymize.NewPlan: ℓ′ must be at least 2, got %d", l)
	}
	if len(v) == 0 {
		return nil, errors.New("anonymize.NewPlan: no sensitive column")
	}
	if !slices.Contains(Groupings, g) {
		return nil, fmt.Errorf("anonymize.NewPlan: unknown grouping %q", g)
	}
	p := &Plan{l: l, grouping: g, res: NewReservoir(l-1, len(v))}
	for _, x := range v {
		if x < 1 {
			return nil, fmt.Errorf("anonymize.NewPlan: codebook size V must be at least 1, got %d", x)
		}
		p.counts = append(p.counts, make([]int64, x))
	}
	return p, nil
}

// Count adds the next kept row of pass 1, with its value index in every
// sensitive column.
func (p *Plan) Count(vals []uint32, r *rand.Rand) error {
	if p.dealers != nil {
		return errors.New("anonymize.Plan.Count: called after Finish")
	}
	if p.res.seen >= MaxRows-1 {
		return fmt.Errorf("anonymize.Plan.Count: more than %d rows", int64(MaxRows-1))
	}
	for k, x := range vals {
		if int(x) >= len(p.counts[k]) {
			return fmt.Errorf("anonymize.Plan.Count: row %d has value index %d in sensitive column %d, outside the codebook of %d values", p.res.seen, x, k, len(p.counts[k]))
		}
		p.counts[k][x]++
	}
	p.res.Offer(p.res.seen, vals, r)
	return nil
}

// Rows is the number of rows counted.
func (p *Plan) Rows() int64 { return p.res.seen }

// Counts returns the value counts of sensitive column k: of all counted
// rows before Finish, of the published rows after.
func (p *Plan) Counts(k int) []int64 {
	if p.counts == nil {
		return nil
	}
	return p.counts[k]
}

// Finish ends pass 1: it checks that every column is eligible (an
// *IneligibleError names the column), drops N mod ℓ′ uniformly random rows
// and computes each column's schedule, drawing from r.
func (p *Plan) Finish(r *rand.Rand) error {
	for k, c := range p.counts {
		if err := eligible(c, p.l); err != nil {
			var ie *IneligibleError
			if errors.As(err, &ie) {
				ie.Column = k
			}
			return fmt.Errorf("anonymize.Plan.Finish: sensitive column %d: %w", k, err)
		}
	}
	d := DropCount(int(p.res.seen), p.l)
	var err error
	if p.Dropped, p.DroppedVals, err = p.res.Drop(d, r); err != nil {
		return err
	}
	for _, vals := range p.DroppedVals {
		for k, x := range vals {
			p.counts[k][x]--
		}
	}
	for k := range p.counts {
		// With dropCounts the counts are the schedule's working memory
		// and end zero: nothing holds them past it (c is not used after
		// the call), so that they are not kept beside the sets and the
		// Dealer being built (8 MB at 1M values).
		c, v := p.counts[k], len(p.counts[k])
		if p.dropCounts {
			p.counts[k] = nil
		}
		if p.divertOnly {
			f, err := newFlatSets(c, p.l, p.grouping, r, p.dropCounts, v-1 <= maxU24)
			if err != nil {
				return fmt.Errorf("anonymize.Plan.Finish: sensitive column %d: %w", k, err)
			}
			d := newFlatDealer(v, p.l, f)
			p.dealers = append(p.dealers, d)
			p.groups = 0
			for _, g := range f.groups {
				p.groups += int64(g)
			}
			if p.keepBase {
				// The numbers of the groups before each type, in the
				// groups' own array (fewer than MaxRows/ℓ′ groups: 32
				// bits). Deal reads no sets, and EachSet rebuilds them
				// from the pairs: they go (3ℓ′ bytes a set type, 10.5 MB
				// of anonymize --mechanism anatomy's pass 2 at 1M values).
				var next uint32
				for t, g := range f.groups {
					f.groups[t], next = next, next+g
				}
				p.bases = append(p.bases, f.groups)
				d.sets = words{}
			}
			continue
		}
		b, err := fillSets(c, p.l, p.grouping, r, p.dropCounts)
		if err != nil {
			return fmt.Errorf("anonymize.Plan.Finish: sensitive column %d: %w", k, err)
		}
		types, values := b.flatTypes()
		s := &Schedule{L: p.l, V: v, Grouping: p.grouping, Types: types, values: values}
		p.Schedules = append(p.Schedules, s)
		p.dealers = append(p.dealers, NewDealer(s))
	}
	if p.dropCounts {
		p.counts = nil
	}
	return nil
}

// DropCounts lets the value counts go (Counts returns nil afterwards):
// Divert and Deal never read them, and a caller that prints no report of
// them has no use for them either. 8 bytes a value: 8 MB of anonymize's
// peak over a column of 1M values. Called before Finish (even before
// pass 1: Count still counts), it lets Finish compute each schedule in
// the counts' own memory, which it leaves zero, instead of a copy, and
// let them go then: at 1M values the schedule's work is the counts and
// the sets, no longer twice the counts.
func (p *Plan) DropCounts() {
	if p.dealers == nil {
		p.dropCounts = true
		return
	}
	p.counts = nil
}

// DivertOnly, before Finish, tells the plan that its caller only Diverts
// (anonymize's A′): Finish then makes no Schedules, and leaves the plan
// as Finish and DropSchedules would, with the same draws. The schedules'
// SetTypes (32 bytes a type) are never made, so they are never held next
// to the Dealer being built: at 500k values under the anatomy grouping,
// 19 MB of SetTypes next to a 21 MB Dealer had been the run's peak.
func (p *Plan) DivertOnly() { p.divertOnly = true }

// KeepGroupBase, with DivertOnly before Finish, prepares the plan for
// Anatomy (anonymize --mechanism anatomy), which Deals and never Diverts:
// Finish keeps the groups' numbering (GroupBase, 4 bytes a set type) and
// lets the sets go once the Dealers are made; EachSet rebuilds them from
// the Dealer's pairs, and Number numbers the groups in the pairs' counts
// once pass 2 has emptied them. So the sets are not held through pass 2
// and no counter per (type, value) is made for the numbering: at 1M
// values under the anatomy grouping (733k set types), 10.5 MB of sets and
// 7 MB of counters.
func (p *Plan) KeepGroupBase() { p.keepBase = true }

// GroupBase returns, after Finish under KeepGroupBase, Anatomy's numbering
// of sensitive column k's groups: set type t's groups are GroupBase(k)[t],
// GroupBase(k)[t]+1, …, up to the next type's base (the last type's up to
// the number of groups), the types in the order of Sets. A copy.
func (p *Plan) GroupBase(k int) []int64 {
	base := make([]int64, len(p.bases[k]))
	for t, b := range p.bases[k] {
		base[t] = int64(b)
	}
	return base
}

// typeGroups returns, under KeepGroupBase, the first group of column k's
// set type t and its number of groups.
func (p *Plan) typeGroups(k, t int) (base, groups int64) {
	b := p.bases[k]
	end := p.groups
	if t+1 < len(b) {
		end = int64(b[t+1])
	}
	return int64(b[t]), end - int64(b[t])
}

// setBlock is the set types EachSet rebuilds per scan of the pairs: 1.3
// MB of values at ℓ′ = 5, and a dozen scans at 733k types. A variable
// only so that tests can make the blocks smaller than their types.
var setBlock = 1 << 16

// EachSet calls fn, after Finish under KeepGroupBase, with each of
// sensitive column k's set types in order: its values, ascending (the
// Schedule's Types[t].Values; fn must not keep them), its first group
// (GroupBase) and its number of groups. The sets are rebuilt from the
// Dealer's pairs, which list each value's types: setBlock types at a
// time, each block one scan of the pairs in value order, so that the
// values of a set come ascending. The pairs' types do not change as
// slots are dealt or numbered, so it may be called at any time.
func (p *Plan) EachSet(k int, fn func(t int, vals []uint32, base, groups int64) error) error {
	if p.bases == nil {
		return errors.New("anonymize.Plan.EachSet: called before Finish, or without DivertOnly and KeepGroupBase")
	}
	d, l, n := p.dealers[k], p.l, len(p.bases[k])
	buf := make([]uint32, min(n, setBlock)*l)
	fill := make([]int32, min(n, setBlock))
	for t0 := 0; t0 < n; t0 += setBlock {
		t1 := min(n, t0+setBlock)
		clear(fill)
		for v := range uint32(d.off.values()) {
			for i := d.off.at(v); i < d.off.at(v+1); i++ {
				t := int(d.pair.at(int(i)) >> d.bits)
				if t < t0 || t >= t1 {
					continue
				}
				if int(fill[t-t0]) == l {
					return fmt.Errorf("anonymize.Plan.EachSet: set type %d has more than ℓ′ = %d values", t, l)
				}
				buf[(t-t0)*l+int(fill[t-t0])] = v
				fill[t-t0]++
			}
		}
		for t := t0; t < t1; t++ {
			if int(fill[t-t0]) != l {
				return fmt.Errorf("anonymize.Plan.EachSet: set type %d has %d values, not ℓ′ = %d", t, fill[t-t0], l)
			}
			base, groups := p.typeGroups(k, t)
			if err := fn(t, buf[(t-t0)*l:(t-t0+1)*l], base, groups); err != nil {
				return err
			}
		}
	}
	return nil
}

// Number gives, after pass 2 under KeepGroupBase (Done returned nil),
// a row of value v dealt to set type t in sensitive column k its group:
// the j-th call for (v, t) returns the type's j-th group, GroupBase(k)[t]
// + j (anonymize's numbering of Anatomy's groups; the rows come in a
// uniformly random order). It counts in the Dealer's pair (v, t), which
// pass 2 left at zero slots, so the count is as wide as the slots were.
func (p *Plan) Number(k int, v uint32, t int) (int64, error) {
	if !p.numbering {
		return 0, errors.New("anonymize.Plan.Number: called before Done, or without KeepGroupBase")
	}
	d := p.dealers[k]
	if t < 0 || t >= len(p.bases[k]) || int(v) >= d.off.values() {
		return 0, fmt.Errorf("anonymize.Plan.Number: value index %d in set type %d, which the schedule does not have", v, t)
	}
	// A value's pairs are in increasing order of type.
	for a, b := d.off.at(v), d.off.at(v+1); a < b; {
		m := a + (b-a)/2
		switch mt := int(d.pair.at(int(m)) >> d.bits); {
		case mt < t:
			a = m + 1
		case mt > t:
			b = m
		default:
			base, groups := p.typeGroups(k, t)
			c := d.slots(m)
			if c >= groups {
				return 0, fmt.Errorf("anonymize.Plan.Number: more rows of value index %d in set type %d than its %d groups", v, t, groups)
			}
			d.setLeft(m, c+1)
			return base + c, nil
		}
	}
	return 0, fmt.Errorf("anonymize.Plan.Number: set type %d does not hold value index %d", t, v)
}

// DropSchedules lets the schedules go after Finish, for a caller that
// only Diverts (anonymize's A′): each column's Dealer keeps the sets it
// publishes from in a flat array of its own (Dealer.ownSets). With many
// values the schedule is most of A′'s memory (at 80k values under the
// anatomy grouping, 174k set types: 8.4 MB of schedule, of which the
// flat sets keep 3.5 MB). Schedules is nil afterwards; Deal, which
// returns indexes into it, is still allowed, and Divert draws the same
// values as before.
func (p *Plan) DropSchedules() {
	for _, d := range p.dealers {
		d.ownSets()
	}
	p.Schedules = nil
}

// Sets returns, after DropSchedules or under DivertOnly, sensitive column
// k's set types' values, flat: type t's ℓ′ values, ascending, are
// Sets(k)[t·ℓ′ : (t+1)·ℓ′] (Schedule.Types[t].Values before the drop). The
// caller must not change them. It is the Dealer's own array after
// DropSchedules, else a copy (the Dealer's are of 24 bits; under
// KeepGroupBase it has none, and they are rebuilt as EachSet does).
func (p *Plan) Sets(k int) []uint32 {
	if p.bases == nil {
		return p.dealers[k].sets.uint32s()
	}
	var sets []uint32
	p.EachSet(k, func(_ int, vals []uint32, _, _ int64) error {
		sets = append(sets, vals...)
		return nil
	})
	return sets
}

// nextRow advances pass 2 by one row: its number, and whether it is kept
// (not one of the dropped rows). method names the caller in errors.
func (p *Plan) nextRow(method string) (row int64, kept bool, err error) {
	if p.dealers == nil {
		return 0, false, fmt.Errorf("anonymize.Plan.%s: called before Finish", method)
	}
	row = p.row
	p.row++
	if p.next < len(p.Dropped) && p.Dropped[p.next] == row {
		p.next++
		return row, false, nil
	}
	return row, true, nil
}

// Divert takes the next kept row of pass 2 (the same rows as pass 1, in
// the same order). It returns false for a dropped row; else it writes the
// published value index of every sensitive column to out.
func (p *Plan) Divert(vals, out []uint32, r *rand.Rand) (bool, error) {
	if p.bases != nil {
		return false, errors.New("anonymize.Plan.Divert: the plan keeps no sets (KeepGroupBase); Deal")
	}
	row, kept, err := p.nextRow("Divert")
	if !kept || err != nil {
		return false, err
	}
	for k, x := range vals {
		y, err := p.dealers[k].Divert(x, r)
		if err != nil {
			return false, fmt.Errorf("row %d of pass 2, sensitive column %d: %w", row, k, err)
		}
		out[k] = y
	}
	return true, nil
}

// Deal is Divert without the publication, for Anatomy: it writes the set
// type (an index into Schedules[k].Types) of the slot dealt to the row in
// every sensitive column to types, or returns false for a dropped row.
func (p *Plan) Deal(vals []uint32, types []int, r *rand.Rand) (bool, error) {
	row, kept, err := p.nextRow("Deal")
	if !kept || err != nil {
		return false, err
	}
	for k, x := range vals {
		t, err := p.dealers[k].Deal(x, r)
		if err != nil {
			return false, fmt.Errorf("row %d of pass 2, sensitive column %d: %w", row, k, err)
		}
		types[k] = t
	}
	return true, nil
}

// Done checks, after pass 2, that it saw the rows of pass 1: every slot
// was dealt.
func (p *Plan) Done() error {
	if p.row != p.res.seen {
		return fmt.Errorf("the second pass read %d rows, the first %d (did the input change between the passes?)", p.row, p.res.seen)
	}
	for _, d := range p.dealers {
		if !d.Done() {
			return errors.New("the second pass has fewer rows of some value than the first (did the input change between the passes?)")
		}
	}
	p.numbering = p.bases != nil
	return nil
}
