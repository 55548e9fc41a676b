package anonymize

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"sort"
	"unsafe"
)

// Grouping names how the decoy groups' value sets are chosen (A′ step 2).
type Grouping string

// Groupings.
const (
	// GroupingAnatomy is Anatomy's group creation (Xiao and Tao 2006, the
	// paper's §9): each group takes the ℓ′ currently largest buckets, ties
	// to the smaller value index.
	GroupingAnatomy Grouping = "anatomy"
	// GroupingRandom draws each group's ℓ′ distinct values at random, in
	// proportion to their remaining counts (issue 12): values that are
	// always the largest no longer always share a group. Above 2^14 groups
	// one draw serves a run of consecutive groups, so that the schedule's
	// memory does not grow with the rows (randomSets).
	GroupingRandom Grouping = "random"
)

// Groupings lists the groupings, anonymize's default for A′ first (random:
// with estimate's auto stopping rule it is the more accurate at every
// ℓ′ ≤ 6 on Adult, with the same guarantees; --mechanism anatomy keeps
// Anatomy's own group creation by default).
var Groupings = []Grouping{GroupingRandom, GroupingAnatomy}

// SetType is one value set that decoy groups have, and how many have it.
type SetType struct {
	// Values are the ℓ′ distinct value indexes of the set, ascending.
	Values []uint32
	// Groups is the number of decoy groups with this value set.
	Groups int64
}

// Schedule is the multiset of the decoy groups' value sets, computed from
// the value counts alone (A′ step 2): which values share a group, and how
// often, but not which rows. Both groupings depend on the counts only —
// Anatomy's group creation looks at bucket sizes and value indexes, never
// at the rows' ids — so the groups of the in-memory algorithm are this
// schedule with each value's rows dealt to that value's slots in id order.
// With random ids, that dealing is a uniformly random bijection between a
// value's rows and its slots (see the package doc), which is what lets A′
// stream: count first, schedule, then give each row a random free slot.
//
// Memory: O(V) for the counts plus O(ℓ′) per distinct set, at most
// min(C(V, ℓ′), groups) of them, and for the random grouping at most
// T + V + ℓ′ + 1 (randomRuns); nothing per row or per group.
type Schedule struct {
	// L is ℓ′.
	L int
	// V is the codebook size.
	V int
	// Grouping is how the sets were chosen.
	Grouping Grouping
	// Types are the distinct value sets, in lexicographic order of Values.
	Types []SetType
	// values is, when NewSchedule made the schedule, the array that
	// Types' Values are cut from, in type order: Dealer.ownSets keeps it
	// instead of copying it (after checking that Types still point into
	// it).
	values []uint32
}

// Groups returns the number of decoy groups, Σ Types[t].Groups.
func (s *Schedule) Groups() int64 {
	var n int64
	for _, t := range s.Types {
		n += t.Groups
	}
	return n
}

// Slots returns, for every value index v < V, the set types that hold v:
// slots[v] lists indexes into Types in increasing order; value v has
// Types[t].Groups slots in type t, Σ_t = counts[v].
func (s *Schedule) Slots() [][]int {
	slots := make([][]int, s.V)
	for t, st := range s.Types {
		for _, v := range st.Values {
			slots[v] = append(slots[v], t)
		}
	}
	return slots
}

// NewSchedule computes the decoy groups' value sets for value counts
// counts (counts[v] = rows of value index v kept after the drop of N mod ℓ′
// rows; Σ counts a multiple of l, every count ≤ Σ/l) and grouping g. The
// random grouping draws from r; anatomy draws nothing (r may be nil).
func NewSchedule(counts []int64, l int, g Grouping, r *rand.Rand) (*Schedule, error) {
	b, err := fillSets(counts, l, g, r, false)
	if err != nil {
		return nil, err
	}
	types, values := b.flatTypes()
	return &Schedule{L: l, V: len(counts), Grouping: g, Types: types, values: values}, nil
}

// flatSets is a schedule's sets without SetTypes: set type t (in the
// order of Schedule.Types) has the ℓ′ values values[t·ℓ′ : (t+1)·ℓ′],
// ascending, and groups[t] groups. 4ℓ′ + 4 bytes a type (3ℓ′ + 4 with
// narrow values), where Types takes 4ℓ′ + 32.
type flatSets struct {
	values words
	groups []uint32
}

// newFlatSets is NewSchedule(counts, l, g, r)'s sets, drawn alike, in
// flat form, their values of 24 bits if narrow (every value index below
// 2^24). With own, it works in counts' own memory and leaves them zero
// (8 bytes a value not held twice: 8 MB at 1M values, the schedule's
// peak).
func newFlatSets(counts []int64, l int, g Grouping, r *rand.Rand, own, narrow bool) (flatSets, error) {
	b, err := fillSets(counts, l, g, r, own)
	if err != nil {
		return flatSets{}, err
	}
	return b.flat(narrow), nil
}

// fillSets checks NewSchedule's arguments and returns the bag of its sets;
// with own, the grouping works in counts' memory and leaves them zero.
func fillSets(counts []int64, l int, g Grouping, r *rand.Rand, own bool) (*setBag, error) {
	if l < 2 {
		return nil, fmt.Errorf("anonymize.NewSchedule: ℓ′ must be at least 2, got %d", l)
	}
	var n int64
	for v, c := range counts {
		if c < 0 {
			return nil, fmt.Errorf("anonymize.NewSchedule: value index %d has a negative count %d", v, c)
		}
		n += c
	}
	if n%int64(l) != 0 {
		return nil, fmt.Errorf("anonymize.NewSchedule: %d rows is not a multiple of ℓ′ = %d (drop N mod ℓ′ rows first)", n, l)
	}
	if n > 0 {
		if err := eligible(counts, l); err != nil {
			return nil, fmt.Errorf("anonymize.NewSchedule: %w", err)
		}
	}
	cnt := counts
	if !own {
		cnt = slices.Clone(counts)
	}
	var b *setBag
	var err error
	switch g {
	case GroupingAnatomy:
		b = newSetBag(l, len(counts))
		err = anatomySetsIn(cnt, l, n/int64(l), b)
	case GroupingRandom:
		if r == nil {
			return nil, errors.New("anonymize.NewSchedule: nil random source")
		}
		b = newLateSetBag(l, len(counts))
		err = randomSetsIn(cnt, l, n/int64(l), randomRuns, r, b)
	default:
		return nil, fmt.Errorf("anonymize.NewSchedule: unknown grouping %q", g)
	}
	if err != nil {
		return nil, fmt.Errorf("anonymize.NewSchedule: %w", err)
	}
	return b, nil
}

// setBag counts distinct sorted value sets of ℓ′ values. With at most 64
// values a set is its bitmask (the values of a group are distinct), looked
// up without sorting or hashing: a 10M-row schedule adds 2M groups one by
// one, serially, between anonymize's two passes.
//
// Memory: with many values (anatomy at 300k values: about 600k sets) the
// sets dominate the schedule's computation, so a set is a record of its
// ℓ′ values and its group count in shared chunks (4ℓ′ + 4 bytes: a type
// has fewer than MaxRows/ℓ′ < 2^32 groups) and, when the bag merges equal
// sets as they come, a slot of an open-addressing table (4 bytes, at most
// three quarters full): 4ℓ′ + 4 + 5.3 to 10.7 bytes a set, where a
// []SetType and a map[string]int with the values as keys took 4ℓ′ + 32 to
// 48 + about 44 (TestSetBagBytesPerSet). A bag made with late set (the
// random grouping above 64 values) has no table: it keeps every run as a
// record and flat merges the equal ones after sorting. That is no more
// records than runs, at most T + V + ℓ′ + 1 of them (randomSets), and at
// high cardinality hardly more than the distinct sets (1M values, 4M
// rows: 491k runs, all distinct), so the table's 4 to 8 MB there bought
// nothing. Anatomy's runs are not bounded that way (about one per group at
// 85k values, 2.2 groups a set): its bag keeps the table.
type setBag struct {
	l      int
	masks  map[uint64]uint32 // V ≤ 64: set index by bitmask
	table  []uint32          // V > 64 unless late: set index + 1 (0: empty), by hash of its values
	late   bool              // no table: flat merges equal sets
	chunks [][]uint32        // set i's record: chunks[i/arenaSets][(i%arenaSets)·(ℓ′+1):][:ℓ′+1], its values ascending, then its groups
	n      int               // sets (records) held
	key    []uint32
	adds   int64 // calls to add: the runs of groups recorded
}

// arenaSets is the number of sets a chunk of setBag.chunks holds.
const arenaSets = 4096

// setSeed seeds setBag's hash; the order of the sets never depends on it
// (flat sorts them).
var setSeed = maphash.MakeSeed()

// newSetBag returns a bag for sets of l of v values that merges equal sets
// as they come.
func newSetBag(l, v int) *setBag {
	b := &setBag{l: l, key: make([]uint32, l)}
	if v <= 64 {
		b.masks = map[uint64]uint32{}
	} else {
		b.table = make([]uint32, 1024)
	}
	return b
}

// newLateSetBag returns a bag for sets of l of v values that merges equal
// sets only in flat (no table), unless v ≤ 64 (bitmasks cost little).
func newLateSetBag(l, v int) *setBag {
	b := newSetBag(l, v)
	if b.table != nil {
		b.table, b.late = nil, true
	}
	return b
}

// rec returns set i's record: its ℓ′ values, then its groups.
func (b *setBag) rec(i uint32) []uint32 {
	c := b.chunks[i/arenaSets]
	j := int(i%arenaSets) * (b.l + 1)
	return c[j : j+b.l+1 : j+b.l+1]
}

// set returns set i's values.
func (b *setBag) set(i uint32) []uint32 { return b.rec(i)[:b.l] }

// hash hashes a set's values.
func hashSet(set []uint32) uint64 {
	return maphash.Bytes(setSeed, unsafe.Slice((*byte)(unsafe.Pointer(&set[0])), 4*len(set)))
}

// newSet appends a set of sorted values with k groups and returns its index.
func (b *setBag) newSet(sorted []uint32, k int64) uint32 {
	i := uint32(b.n)
	if i%arenaSets == 0 {
		b.chunks = append(b.chunks, make([]uint32, 0, arenaSets*(b.l+1)))
	}
	c := &b.chunks[len(b.chunks)-1]
	*c = append(append(*c, sorted...), uint32(k))
	b.n++
	return i
}

// more adds k groups to set i.
func (b *setBag) more(i uint32, k int64) { b.rec(i)[b.l] += uint32(k) }

// add records k groups with the values of set (ℓ′ distinct values in any
// order; set is not kept).
func (b *setBag) add(set []uint32, k int64) {
	if len(set) != b.l {
		panic(fmt.Sprintf("anonymize: a set of %d values, want ℓ′ = %d", len(set), b.l))
	}
	b.adds++
	if b.masks != nil {
		var m uint64
		for _, v := range set {
			m |= 1 << v
		}
		if t, ok := b.masks[m]; ok {
			b.more(t, k)
			return
		}
		copy(b.key, set)
		slices.Sort(b.key)
		b.masks[m] = b.newSet(b.key, k)
		return
	}
	copy(b.key, set)
	slices.Sort(b.key)
	if b.late {
		b.newSet(b.key, k)
		return
	}
	mask := uint64(len(b.table) - 1)
	h := hashSet(b.key) & mask
	for ; b.table[h] != 0; h = (h + 1) & mask {
		if t := b.table[h] - 1; slices.Equal(b.set(t), b.key) {
			b.more(t, k)
			return
		}
	}
	b.table[h] = b.newSet(b.key, k) + 1
	if 4*b.n > 3*len(b.table) {
		b.grow()
	}
}

// grow doubles the table.
func (b *setBag) grow() {
	t := make([]uint32, 2*len(b.table))
	mask := uint64(len(t) - 1)
	for i := range uint32(b.n) {
		h := hashSet(b.set(i)) & mask
		for t[h] != 0 {
			h = (h + 1) & mask
		}
		t[h] = i + 1
	}
	b.table = t
}

// types returns the sets in lexicographic order (see flatTypes).
func (b *setBag) types() []SetType {
	t, _ := b.flatTypes()
	return t
}

// bagOrder sorts a bag's records in place, by their values
// (lexicographically); the sets are distinct unless the bag is late.
type bagOrder struct{ b *setBag }

func (o bagOrder) Len() int { return o.b.n }
func (o bagOrder) Less(i, j int) bool {
	return slices.Compare(o.b.set(uint32(i)), o.b.set(uint32(j))) < 0
}
func (o bagOrder) Swap(i, j int) {
	x, y := o.b.rec(uint32(i)), o.b.rec(uint32(j))
	for k := range x {
		x[k], y[k] = y[k], x[k]
	}
}

// flat returns the sets in lexicographic order, in flat form (values of
// 24 bits if narrow: all below 2^24), and empties the bag. Between anonymize's passes this is the run's peak with many
// values, so it works in place: the lookup table goes first, the records
// are sorted where they are (a late bag's equal sets, now adjacent, are
// merged), and the chunks are copied out and let go one by one, so that
// the bag (4ℓ′ + 4 bytes a set) and its flat form (4ℓ′ + 4) are all that
// coexist, where sorting an index and copying took 4ℓ′ + 12 bytes a set
// more.
func (b *setBag) flat(narrow bool) flatSets {
	b.table, b.masks = nil, nil
	sort.Sort(bagOrder{b})
	if b.late {
		n := 0
		for i := range uint32(b.n) {
			if n > 0 && slices.Equal(b.set(uint32(n-1)), b.set(i)) {
				b.more(uint32(n-1), int64(b.rec(i)[b.l]))
				continue
			}
			copy(b.rec(uint32(n)), b.rec(i))
			n++
		}
		b.n = n
		b.chunks = b.chunks[:(n+arenaSets-1)/arenaSets]
	}
	values := newWords(b.n*b.l, narrow)
	groups := make([]uint32, 0, b.n)
	for c := range b.chunks {
		for i := c * arenaSets; i < min(b.n, (c+1)*arenaSets); i++ {
			r := b.rec(uint32(i))
			for j, x := range r[:b.l] {
				values.put(i*b.l+j, x)
			}
			groups = append(groups, r[b.l])
		}
		b.chunks[c] = nil
	}
	b.chunks, b.n = nil, 0
	return flatSets{values: values, groups: groups}
}

// flatTypes returns the sets in lexicographic order, in an exact-size
// slice, with their values in one exact-size array in that order (also
// returned), and empties the bag; Dealer.ownSets keeps the array rather
// than copying it.
func (b *setBag) flatTypes() ([]SetType, []uint32) {
	f := b.flat(false)
	values := f.values.u32
	out := make([]SetType, len(f.groups))
	for t, k := range f.groups {
		out[t] = SetType{Values: values[t*b.l : (t+1)*b.l : (t+1)*b.l], Groups: int64(k)}
	}
	return out, values
}

// anatomySets runs Anatomy's group creation on counts alone, exactly as
// groupRows does on rows: while groups remain, the ℓ′ largest buckets
// (ties: smaller value index first) form a group. Consecutive groups with
// the same set are recorded at once: the top ℓ′ all go down together, so
// their order among themselves holds, and the set stays on top while its
// last member a still ranks before the first other bucket b, that is for
// cnt[a] − cnt[b] steps, one more when a < b wins the tie.
//
// The buckets wait in a heap ordered by that rank, so a run costs
// O(ℓ′ log V): with many values and short runs (85k values: about one run
// per group), re-sorting or merging all V buckets per run took minutes.
func anatomySets(counts []int64, l int, groups int64, b *setBag) error {
	return anatomySetsIn(slices.Clone(counts), l, groups, b)
}

// anatomySetsIn is anatomySets in cnt's memory: it leaves cnt zero.
func anatomySetsIn(cnt []int64, l int, groups int64, b *setBag) error {
	h := bucketHeap{cnt: cnt}
	for v, c := range cnt {
		if c > 0 {
			h.items = append(h.items, uint32(v))
		}
	}
	h.init()
	top := make([]uint32, l)
	for groups > 0 {
		if len(h.items) < l {
			return errGrouping
		}
		for i := range top {
			top[i] = h.pop()
		}
		k := groups
		if len(h.items) > 0 {
			a, c := top[l-1], h.items[0]
			run := cnt[a] - cnt[c]
			if a < c {
				run++
			}
			k = min(k, run)
		}
		b.add(top, k)
		for _, v := range top {
			if cnt[v] -= k; cnt[v] > 0 {
				h.push(v)
			}
		}
		groups -= k
	}
	return nil
}

// bucketHeap is a binary heap of value indexes, the first the bucket that
// ranks first: the larger count, ties to the smaller index.
type bucketHeap struct {
	cnt   []int64
	items []uint32
}

func (h *bucketHeap) before(i, j int) bool {
	x, y := h.items[i], h.items[j]
	return h.cnt[x] > h.cnt[y] || (h.cnt[x] == h.cnt[y] && x < y)
}

func (h *bucketHeap) init() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *bucketHeap) push(v uint32) {
	h.items = append(h.items, v)
	for i := len(h.items) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.before(i, p) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *bucketHeap) pop() uint32 {
	v := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	h.down(0)
	return v
}

func (h *bucketHeap) down(i int) {
	for {
		c := 2*i + 1
		if c >= len(h.items) {
			return
		}
		if c+1 < len(h.items) && h.before(c+1, c) {
			c++
		}
		if !h.before(c, i) {
			return
		}
		h.items[i], h.items[c] = h.items[c], h.items[i]
		i = c
	}
}

// randomRuns is T, the number of runs randomSets aims for: with more than
// T groups to form, it draws one set per run of k = ⌈groups/T⌉ consecutive
// groups, so a column has at most T + V + ℓ′ + 1 set types whatever its rows.
// Each type costs the schedule and pass 2's Dealer about 0.3 KB at ℓ′ = 5
// (BenchmarkRandomScheduleTypes), so 2^14 runs keep a sensitive column's
// schedule and dealer within a few MB; at or below 2^14 groups (Adult:
// 6,512 at ℓ′ = 5) every run is one group, the per-group draw of issue 12.
// A variable, not a constant, only so that tests can reach k > 1 cheaply.
var randomRuns int64 = 1 << 14

// randomSets draws the groups' sets (issue 12) in runs of consecutive
// groups with the same set: with n groups still to form, every value whose
// remaining count is n is in the set (it must be in every remaining
// group), and the other places are filled by successive draws without
// replacement, each value drawn with probability proportional to its
// remaining count among the values not yet in the set. The set then
// serves
//
//	k′ = min(k, n, min_{v∈set} cnt(v), n − max_{v∉set} cnt(v))
//
// groups, k = ⌈groups/T⌉ (T = randomRuns). With groups ≤ T, k = 1 and
// every run is one group: the per-group draw, draw for draw. Above T it is
// that draw coarsened into runs of up to k groups, which bounds the
// distinct sets, hence the schedule's and the Dealer's memory, by a
// constant (measured cost: TestRandomRunsDecoyProbability).
//
// Why it never gets stuck. Invariant: cnt(v) ≤ n for every value, with n
// groups left; eligibility gives it at the start (n = N/ℓ′). Given it,
// the values at n (at most ℓ′ of them, since Σ cnt = nℓ′) are all in the
// set; with f of them forced, the others share n(ℓ′ − f) rows with at most
// n − 1 each, so more than ℓ′ − f of them are non-empty and the draws find
// ℓ′ − f distinct values: the set has ℓ′ distinct values. k′ ≥ 1: k ≥ 1,
// n ≥ 1, every value in the set has cnt ≥ 1 (drawn values have positive
// weight, forced ones have cnt = n), and every value outside it has
// cnt ≤ n − 1 (the values at n are all forced in). After the run, with
// n − k′ groups left, a value in the set has cnt(v) − k′ ≤ n − k′ and
// cnt(v) − k′ ≥ 0, and a value outside has cnt(v) ≤ n − k′ by the last
// term: the invariant holds again, and Σ cnt = (n − k′)ℓ′. A value at the
// bound stays there (it loses one per group), so once forced it is forced
// in every later group. Every count ends at 0.
//
// Runs: a run of k′ = k uses k of the groups ≤ kT, so there are at most T
// of them. A shorter run has k′ = n (the last run), or k′ = cnt(v) for a
// v in the set (v reaches 0 and is never drawn again: at most V such
// runs), or k′ = n − cnt(v) for a v outside it (v reaches the bound and is
// forced in every later set; forced values stay forced and are at most ℓ′
// at a time, so at most ℓ′ values ever are: at most ℓ′ such runs). So
// there are at most T + V + ℓ′ + 1 ≤ T + 2V + 1 runs, and as many set
// types at most.
//
// Cost: O(V) setup, then O(ℓ′ log V) per run (a tree over the counts of
// the values not forced, with sums for the draws and maxima for the values
// reaching n; flat below 64 values).
func randomSets(counts []int64, l int, groups int64, r *rand.Rand, b *setBag) error {
	return randomSetsRuns(counts, l, groups, randomRuns, r, b)
}

// randomSetsRuns is randomSets with T = runs.
func randomSetsRuns(counts []int64, l int, groups, runs int64, r *rand.Rand, b *setBag) error {
	return randomSetsIn(slices.Clone(counts), l, groups, runs, r, b)
}

// randomSetsIn is randomSetsRuns in cnt's memory, which it leaves zero:
// the urn's weights are cnt itself. A value in the current set is out of
// the urn (weight 0), so its count is kept aside while the set is formed:
// a forced value's count is n (it is at the bound, and stays there), a
// drawn value's is in left until the run is recorded and it goes back in.
// The urn sees the weights the two arrays of before gave it (counts, and
// a copy with the set's values at 0), so the draws are the same.
func randomSetsIn(cnt []int64, l int, groups, runs int64, r *rand.Rand, b *setBag) error {
	if runs < 1 {
		return fmt.Errorf("%d runs", runs)
	}
	k := (groups + runs - 1) / runs
	free := newUrnMode(cnt, len(cnt) <= flatUrnMax, true)
	set := make([]uint32, l)
	left := make([]int64, l) // drawn values' counts, out of the urn
	f := 0
	for n := groups; n > 0; {
		for {
			v, c := free.largest()
			if c < n {
				break
			}
			if c > n || f == l {
				return errGrouping
			}
			set[f] = uint32(v)
			f++
			free.set(v, 0)
		}
		for i := f; i < l; i++ {
			total := free.total()
			if total <= 0 {
				return errGrouping
			}
			v := free.find(r.Int64N(total))
			set[i] = uint32(v)
			left[i] = free.weight(v)
			free.set(v, 0) // out of the urn for the rest of this set
		}
		run := int64(1)
		if k > 1 {
			// free now holds the values outside the set; a forced value
			// has n ≥ run left.
			_, out := free.largest()
			run = min(k, n, n-out)
			for _, c := range left[f:] {
				run = min(run, c)
			}
		}
		b.add(set, run)
		for i := f; i < l; i++ {
			free.set(int(set[i]), left[i]-run)
		}
		n -= run
	}
	return nil
}

// urn keeps non-negative weights w[0..n−1] for randomSets: point updates,
// the total, the largest weight, and the index holding a given rank. Up to
// flatUrnMax weights it keeps them in a flat array and scans it (O(n) but a
// few nanoseconds at census cardinalities: a 10M-row schedule with V = 15
// took 0.45 s of serial time between anonymize's two passes through the
// tree, see BenchmarkRandomSchedule10M). Above, the weights are cut into
// blocks of urnBlock, and a segment tree over the blocks keeps each
// block's sum and maximum: an operation walks the tree, O(log(n/urnBlock)),
// and scans one block. Memory: 8 bytes a weight plus about 1/2 for the
// tree, where a tree over the weights themselves took 32 to 64 (two int64
// a node, leaves padded to a power of two: 32 MB at 1M values, the largest
// part of a high-cardinality schedule). Both modes give the same answers
// (TestUrnModes), so the schedule does not depend on the mode.
type urn struct {
	flat bool
	w    []int64 // the weights
	tot  int64   // flat: their sum
	size int     // tree: leaves, a power of two ≥ the blocks
	sum  []int64 // tree: 1-based heap layout, leaf size+b holds block b's sum
	top  []int64 // tree: the same with maxima
}

// flatUrnMax is the most weights an urn keeps flat.
const flatUrnMax = 64

// urnBlock is the weights of a block of the tree mode.
const urnBlock = 64

func newUrn(w []int64) *urn { return newUrnMode(w, len(w) <= flatUrnMax, false) }

// newUrnMode returns an urn over w, flat or a tree; with own, w is its
// weights array (set changes it), else a copy.
func newUrnMode(w []int64, flat, own bool) *urn {
	if !own {
		w = slices.Clone(w)
	}
	u := &urn{flat: flat, w: w}
	if flat {
		for _, x := range w {
			u.tot += x
		}
		return u
	}
	blocks := (len(w) + urnBlock - 1) / urnBlock
	u.size = 1
	for u.size < blocks {
		u.size *= 2
	}
	u.sum, u.top = make([]int64, 2*u.size), make([]int64, 2*u.size)
	for i, x := range w {
		j := u.size + i/urnBlock
		u.sum[j] += x
		u.top[j] = max(u.top[j], x)
	}
	for j := u.size - 1; j > 0; j-- {
		u.sum[j] = u.sum[2*j] + u.sum[2*j+1]
		u.top[j] = max(u.top[2*j], u.top[2*j+1])
	}
	return u
}

// block returns the weights of block b.
func (u *urn) block(b int) []int64 {
	return u.w[b*urnBlock : min((b+1)*urnBlock, len(u.w))]
}

// set makes w[i] = x.
func (u *urn) set(i int, x int64) {
	old := u.w[i]
	u.w[i] = x
	if u.flat {
		u.tot += x - old
		return
	}
	j := u.size + i/urnBlock
	u.sum[j] += x - old
	switch {
	case x >= u.top[j]:
		u.top[j] = x
	case old == u.top[j]:
		u.top[j] = slices.Max(u.block(i / urnBlock))
	}
	for j /= 2; j > 0; j /= 2 {
		u.sum[j] = u.sum[2*j] + u.sum[2*j+1]
		u.top[j] = max(u.top[2*j], u.top[2*j+1])
	}
}

// weight returns w[i].
func (u *urn) weight(i int) int64 { return u.w[i] }

func (u *urn) total() int64 {
	if u.flat {
		return u.tot
	}
	return u.sum[1]
}

// largest returns the smallest index holding the largest weight, and that
// weight.
func (u *urn) largest() (int, int64) {
	if len(u.w) == 0 {
		return 0, 0
	}
	if u.flat {
		m := slices.Max(u.w)
		return slices.Index(u.w, m), m
	}
	// The leftmost block holding the maximum, then its first weight at it.
	j := 1
	for j < u.size {
		if u.top[2*j] == u.top[j] {
			j = 2 * j
		} else {
			j = 2*j + 1
		}
	}
	b := j - u.size
	return b*urnBlock + slices.Index(u.block(b), u.top[1]), u.top[1]
}

// find returns the index i with w[0]+…+w[i−1] ≤ x < w[0]+…+w[i], for
// 0 ≤ x < total: the value drawn when x is uniform on [0, total).
func (u *urn) find(x int64) int {
	lo, ws := 0, u.w
	if !u.flat {
		j := 1
		for j < u.size {
			if x < u.sum[2*j] {
				j = 2 * j
			} else {
				x -= u.sum[2*j]
				j = 2*j + 1
			}
		}
		lo = (j - u.size) * urnBlock
		ws = u.block(lo / urnBlock)
	}
	for i, c := range ws {
		if x < c {
			return lo + i
		}
		x -= c
	}
	return lo + len(ws) - 1 // unreachable for 0 ≤ x < total
}
