package countquery

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// The planner. A set of count queries on one release is answered from the
// counts of a single pass over the published table D′ (SPEC §4: "Estimation
// from D′"), and one more over the original table for --truth. NewPlan
// numbers the values each column's queries ask about and groups the queries
// that share a predicate P and sensitive columns; ScanRelease counts, per
// group, the rows satisfying P by their combination of published sensitive
// values (the y of Eq. 12 / Eq. 13, for every query of the group at once);
// Answers runs the estimators on those counts.

// Release is what the planner needs to know about a table published by
// anonymize (SPEC §4, §5's baselines), as the caller decoded it from the
// release's metadata (package release). The planner reads it and never
// changes it.
type Release struct {
	Name      string // the published file, for messages
	Mechanism string // release.MechanismDiverted (A′), MechanismAnatomy or MechanismGlobal (A)
	// L is ℓ′, the decoy group size of A′ (Figure 3's a11 = 1/ℓ′); 0 for
	// a global release published without one.
	L int
	// Rows is N from the metadata; 0 when absent (global). ScanRelease
	// refuses a table with another number of rows.
	Rows      int64
	Sensitive []string           // the sensitive columns, in the release's order
	Columns   []*codebook.Column // the codebook of each sensitive column (its published labels)
	// Keep is mechanism A's keep probability p per sensitive column
	// (global only).
	Keep []float64
	// Policy is how anonymize read the original values: the original
	// table given to ScanTruth is read with it, so rows anonymize left out
	// (--missing drop) are left out of the true counts too.
	Policy codebook.Policy
	// Anatomy: the group id column of the published table and the number
	// of groups (ids 0 … Groups−1).
	GroupColumn string
	Groups      int
}

// check refuses a Release whose parts disagree: a caller's bug, not the
// user's, but one that would otherwise surface as an index out of range.
func (rel *Release) check() error {
	if len(rel.Columns) != len(rel.Sensitive) {
		return fmt.Errorf("countquery: %s: %d sensitive columns but %d codebooks", rel.Name, len(rel.Sensitive), len(rel.Columns))
	}
	switch rel.Mechanism {
	case release.MechanismDiverted:
	case release.MechanismGlobal:
		if len(rel.Keep) != len(rel.Sensitive) {
			return fmt.Errorf("countquery: %s: %d sensitive columns but %d keep probabilities", rel.Name, len(rel.Sensitive), len(rel.Keep))
		}
	case release.MechanismAnatomy:
		if len(rel.Sensitive) != 1 || rel.GroupColumn == "" || rel.Groups < 1 {
			return fmt.Errorf("countquery: %s: an anatomy release needs one sensitive column, a group id column and at least one group", rel.Name)
		}
	default:
		return fmt.Errorf("countquery: %s: mechanism %q is not one of anonymize's", rel.Name, rel.Mechanism)
	}
	return nil
}

// Classes: the distinct values the queries ask about in one column are
// numbered 0, 1, …; a cell holding none of them has class classNone, and
// a row of the original table that anonymize left out (--missing drop)
// has classDrop in its sensitive column.
const (
	classNone int32 = -1
	classDrop int32 = -2
	// memoMax bounds the cache of raw values already mapped through a
	// codebook, per column.
	memoMax = 1 << 16
	// maxTuple bounds a query group's table of sensitive-value
	// combinations over several sensitive columns; bigger groups are
	// answered query by query.
	maxTuple = 1 << 16
)

// slot is one column the queries name.
type slot struct {
	col  string
	sens int              // index among the release's sensitive columns, -1 for the others
	cb   *codebook.Column // categories to match by; nil: match the published text
	// classOfIndex maps a codebook index to its class (cb != nil); nil
	// when every index is its own class (Values).
	classOfIndex *classTable
	// classOfValue maps a published text to its class (cb == nil).
	classOfValue map[string]int32
	values       []string // class → the value as queried
	// Without a codebook the release's own values are the domain: seen[c]
	// says a release row holds class c, and known collects up to
	// knownMax other values, for the message when a queried value
	// is in no row (a typo, or a bin of a column released raw).
	seen      []bool
	unseen    int
	known     map[string]struct{}
	knownMore bool
}

// knownMax bounds the distinct values a column keeps for the
// message naming the values a query could have meant.
const knownMax = 1024

// listMax is how many values such a message lists.
const listMax = 20

// quoteValues quotes at most listMax of values, each cut at 80
// characters, and says how many more there are (more: at least that many).
func quoteValues(values []string, more bool) string {
	var b strings.Builder
	for i, v := range values {
		if i == listMax {
			n := len(values) - listMax
			if more {
				fmt.Fprintf(&b, ", … and more than %d more", n)
			} else {
				fmt.Fprintf(&b, ", … and %d more", n)
			}
			return b.String()
		}
		if i > 0 {
			b.WriteString(", ")
		}
		if r := []rune(v); len(r) > 80 {
			v = string(r[:80]) + "…"
		}
		fmt.Fprintf(&b, "%q", v)
	}
	if more {
		b.WriteString(", … and more")
	}
	return b.String()
}

// track prepares the slot to record which queried values the release
// holds (codebook-less slots only).
func (s *slot) track() {
	if s.cb != nil || s.seen != nil {
		return
	}
	s.seen = make([]bool, len(s.values))
	s.unseen = len(s.values)
	s.known = map[string]struct{}{}
}

// missing returns an error for the first queried value that no release
// row holds, listing the values the column does hold.
func (s *slot) missing(queries []Query, file, release string) error {
	if s.cb != nil || s.unseen == 0 {
		return nil
	}
	c := slices.Index(s.seen, false)
	value := s.values[c]
	where := fmt.Sprintf("query %q", value)
	for i := range queries {
		if slices.Contains(queries[i].Conds, Cond{Col: s.col, Value: value}) {
			where = queries[i].Where(file)
			break
		}
	}
	known := make([]string, 0, len(s.known)+len(s.values))
	for v := range s.known {
		known = append(known, v)
	}
	for c, ok := range s.seen {
		if ok {
			known = append(known, s.values[c])
		}
	}
	slices.Sort(known)
	hint := "check the spelling (values are matched exactly, case included), or, for a category that no row holds, give --codebook FILE declaring the column's categories"
	if numeric(known) {
		hint = "the column holds raw values: to count by bins, give --codebook FILE declaring the column's cuts and labels"
	}
	return fmt.Errorf("%s: column %q of %s has no value %s (its values: %s); %s", where, s.col, release, quoteValues([]string{value}, false), quoteValues(known, s.knownMore), hint)
}

// numeric says every value is a number (a column released raw, such as
// Adult's age).
func numeric(values []string) bool {
	for _, v := range values {
		if _, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
			return false
		}
	}
	return len(values) > 0
}

// class returns the class of a queried value, numbering it if new.
func (s *slot) class(value string) (int32, error) {
	if s.cb == nil {
		c, ok := s.classOfValue[value]
		if !ok {
			c = int32(len(s.values))
			s.classOfValue[value] = c
			s.values = append(s.values, value)
		}
		return c, nil
	}
	idx, ok := s.cb.LabelIndex(value)
	if !ok {
		return 0, fmt.Errorf("%s is not a category of column %q in the codebook (categories: %s)", table.QuoteCell(value), s.col, quoteValues(s.cb.Labels(), false))
	}
	c := s.classOfIndex.get(idx)
	if c == classNone {
		c = int32(len(s.values))
		s.classOfIndex.set(idx, c)
		s.values = append(s.values, value)
	}
	return c, nil
}

// classOfCode is the class of codebook index idx.
func (s *slot) classOfCode(idx int) int32 {
	if s.classOfIndex == nil {
		return int32(idx)
	}
	return s.classOfIndex.get(idx)
}

func newSlot(col string, sens int, cb *codebook.Column) *slot {
	s := &slot{col: col, sens: sens, cb: cb}
	if cb == nil {
		s.classOfValue = map[string]int32{}
		return s
	}
	s.classOfIndex = newClassTable(cb.K())
	return s
}

// classTable maps a codebook index to its class: classNone but for the
// values the queries name. Up to denseClasses indexes it is an int32 an
// index; past that a bit an index says which are named, and a map gives
// their classes: at 2M labels the dense table was 8 MB, held through
// estimate --query and report --queries for the few values a query file
// names (issue 11: peak RSS ≤ 100 MB).
type classTable struct {
	dense []int32
	named []uint64
	class map[int32]int32
}

// denseClasses is the largest codebook a classTable holds densely (a
// variable for tests, which make every table sparse).
var denseClasses = 1 << 16

func newClassTable(k int) *classTable {
	if k <= denseClasses {
		return &classTable{dense: slices.Repeat([]int32{classNone}, k)}
	}
	return &classTable{named: make([]uint64, (k+63)/64), class: map[int32]int32{}}
}

// get is index idx's class.
func (t *classTable) get(idx int) int32 {
	if t.dense != nil {
		return t.dense[idx]
	}
	if t.named[idx>>6]&(1<<(idx&63)) == 0 {
		return classNone
	}
	return t.class[int32(idx)]
}

// set gives index idx class c.
func (t *classTable) set(idx int, c int32) {
	if t.dense != nil {
		t.dense[idx] = c
		return
	}
	t.named[idx>>6] |= 1 << (idx & 63)
	t.class[int32(idx)] = c
}

// term is one non-sensitive condition of a predicate P.
type term struct {
	slot  int
	class int32
}

// hist counts rows by their combination of sensitive values: for
// each sensitive slot, local[k][class+1] is the value's local number
// (0 for values no query of the group asks about); the combination's
// index is Σ local·stride.
type hist struct {
	sens   []int
	local  [][]int32
	stride []int
	radix  []int // local values per sensitive slot (those asked and "other")
	size   int   // number of combinations, Π radix
	counts []int64
}

func (h *hist) tuple(cls [][]int32, row int) int {
	t := 0
	for k, s := range h.sens {
		t += int(h.local[k][cls[s][row]+1]) * h.stride[k]
	}
	return t
}

// group gathers the queries with the same predicate P on the
// non-sensitive columns and the same sensitive columns: one pass counts
// the rows satisfying P by their combination of sensitive values, and
// every query of the group is read from those counts.
type group struct {
	pred []term
	hist
	nP      int64
	all     *hist     // all rows of the release, by combination (shared)
	anat    []float64 // anatomy: Σ over P rows of c_g(s)/n_g, by local value
	truthP  []int64   // the original table's P rows, by combination
	truthNP int64
	queries []int
	// anatSum is anatomy's Σ over P rows of c_g(s), by group size n_g
	// (anatomyTable.sizes) and local value: index size·g.size + value;
	// anatQ is the group's index among anatomyTable.queries.
	anatSum []int64
	anatQ   int
}

// each calls f for every group whose predicate row satisfies. For every
// predicate column and class, mask holds the set of groups that row
// satisfies on that column (those asking for the class, and those that do
// not look at the column); a row's groups are the intersection over the
// columns: O(columns × groups/64) word operations per row, plus f's work.
func (p *Plan) each(cls [][]int32, row int, f func(g *group)) {
	acc := p.acc
	copy(acc, p.allGroups)
	for _, s := range p.predSlots {
		m := p.mask[s][cls[s][row]+1]
		for i := range acc {
			acc[i] &= m[i]
		}
	}
	for i, word := range acc {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &= word - 1
			f(p.groups[i*64+b])
		}
	}
}

// index builds the masks of each.
func (p *Plan) index() {
	words := (len(p.groups) + 63) / 64
	p.acc = make([]uint64, words)
	p.allGroups = make([]uint64, words)
	for g := range p.groups {
		p.allGroups[g/64] |= 1 << (g % 64)
	}
	p.mask = make([][][]uint64, len(p.slots))
	for gi, g := range p.groups {
		for _, t := range g.pred {
			if p.mask[t.slot] == nil {
				p.predSlots = append(p.predSlots, t.slot)
				// Every group passes every class until it says otherwise.
				p.mask[t.slot] = make([][]uint64, len(p.slots[t.slot].values)+1)
				for c := range p.mask[t.slot] {
					p.mask[t.slot][c] = slices.Clone(p.allGroups)
				}
			}
			for c := range p.mask[t.slot] {
				if int32(c-1) != t.class {
					p.mask[t.slot][c][gi/64] &^= 1 << (gi % 64)
				}
			}
		}
	}
}

// Plan is a compiled set of count queries on one release: NewPlan makes
// it, ScanRelease (and ScanTruth) fill its counts in one pass each, and
// Answers reads every query's estimate from them. Memory: the groups'
// counts, independent of the number of rows.
type Plan struct {
	rel     *Release
	slots   []*slot
	groups  []*group
	hists   []*hist
	queries []Query
	file    string    // the --queries file, for messages
	qGroup  []int     // group of each query
	qLocal  [][]int32 // local number of each of the query's sensitive values
	qTuple  []int     // index of that combination
	rows    int64     // rows of the release
	// anat is anatomy's sensitive table (ReadAnatomyGroups), held or
	// streamed as anatomyWay says (anatomyAuto: by memory).
	anat       *anatomyTable
	anatomyWay int
	// mask[slot][class+1] is the set of groups (a bitset) that a row with
	// that class in that column satisfies on the column; predSlots lists
	// the columns predicates look at. See each.
	mask      [][][]uint64
	predSlots []int
	allGroups []uint64
	acc       []uint64
	// allValues: every value of a sensitive column is counted among the
	// rows of each predicate of one sensitive column (NewPlanFor with
	// Options.Shrink), not only the values queried.
	allValues bool
}

// NewPlan checks the queries against the release (schema is the
// published table's) and groups them. Non-sensitive columns that nsaBook
// (may be nil) declares are matched by category, others by their
// published text. file names the queries' file in messages (Query.Where).
func NewPlan(rel *Release, schema *arrow.Schema, nsaBook *codebook.Codebook, queries []Query, file string) (*Plan, error) {
	return NewPlanFor(rel, schema, nsaBook, queries, file, Options{})
}

// NewPlanFor is NewPlan for the estimator opt will select in Answers:
// with opt.Shrink on an A′ release, a predicate with one sensitive column
// counts its rows by every value of the column (ShrinkPredicate reads
// them all), not only by the values queried.
func NewPlanFor(rel *Release, schema *arrow.Schema, nsaBook *codebook.Codebook, queries []Query, file string, opt Options) (*Plan, error) {
	if err := rel.check(); err != nil {
		return nil, err
	}
	p := &Plan{rel: rel, queries: queries, file: file, allValues: opt.Shrink && rel.Mechanism == release.MechanismDiverted}
	slotOf := map[string]int{}
	var names []string
	for _, f := range schema.Fields() {
		names = append(names, f.Name)
	}
	type parsed struct {
		pred []term
		sens []term // slot and class, in the release's order of sensitive columns
	}
	parsedQ := make([]parsed, len(queries))
	for i := range queries {
		q := &queries[i]
		for _, c := range q.Conds {
			si, ok := slotOf[c.Col]
			if !ok {
				k := slices.Index(rel.Sensitive, c.Col)
				var cb *codebook.Column
				switch {
				case k >= 0:
					cb = rel.Columns[k]
				case rel.Mechanism == release.MechanismAnatomy && c.Col == rel.GroupColumn:
					return nil, fmt.Errorf("%s: %q is Anatomy's group id column, not an attribute; query the other columns", q.Where(file), c.Col)
				case !slices.Contains(names, c.Col):
					return nil, fmt.Errorf("%s: %s has no column %q (columns: %s)", q.Where(file), rel.Name, c.Col, strings.Join(append(slices.Clone(names), rel.sensitiveAbsent()...), ", "))
				case nsaBook != nil:
					if col, ok := nsaBook.Column(c.Col); ok {
						cb = col
					}
				}
				si = len(p.slots)
				slotOf[c.Col] = si
				p.slots = append(p.slots, newSlot(c.Col, k, cb))
			}
			cls, err := p.slots[si].class(c.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", q.Where(file), err)
			}
			if p.slots[si].sens >= 0 {
				parsedQ[i].sens = append(parsedQ[i].sens, term{si, cls})
			} else {
				parsedQ[i].pred = append(parsedQ[i].pred, term{si, cls})
			}
		}
		slices.SortFunc(parsedQ[i].pred, func(a, b term) int { return a.slot - b.slot })
		slices.SortFunc(parsedQ[i].sens, func(a, b term) int { return p.slots[a.slot].sens - p.slots[b.slot].sens })
	}
	if p.allValues { // number every category of the sensitive columns queried
		for _, sl := range p.slots {
			if sl.sens < 0 || sl.cb == nil {
				continue
			}
			for _, label := range sl.cb.Labels() {
				if _, err := sl.class(label); err != nil {
					return nil, err
				}
			}
		}
	}
	// Group the queries by (P, sensitive columns).
	byKey := map[string]*group{}
	var order []*group
	for i, pq := range parsedQ {
		var key strings.Builder
		for _, t := range pq.pred {
			fmt.Fprintf(&key, "%d=%d,", t.slot, t.class)
		}
		key.WriteByte('|')
		for _, t := range pq.sens {
			fmt.Fprintf(&key, "%d,", t.slot)
		}
		g, ok := byKey[key.String()]
		if !ok {
			g = &group{pred: pq.pred}
			for _, t := range pq.sens {
				g.sens = append(g.sens, t.slot)
			}
			byKey[key.String()] = g
			order = append(order, g)
		}
		g.queries = append(g.queries, i)
	}
	p.qGroup = make([]int, len(queries))
	p.qLocal = make([][]int32, len(queries))
	p.qTuple = make([]int, len(queries))
	for _, g := range order {
		// A group over one sensitive column counts V + 1 classes, linear
		// in V whatever it is: answering its queries one by one instead
		// gave each a table of V + 1 entries, O(V²) (report's per-value
		// counts at 70k values took minutes and GBs).
		if len(g.sens) <= 1 || p.tupleSize(g) <= maxTuple {
			p.addGroup(g, g.queries, func(i int) []term { return parsedQ[i].sens })
			continue
		}
		for _, i := range g.queries { // answered one by one
			one := &group{pred: g.pred, hist: hist{sens: g.sens}}
			p.addGroup(one, []int{i}, func(i int) []term { return parsedQ[i].sens })
		}
	}
	p.index()
	return p, nil
}

// tupleSize bounds the number of combinations the group needs.
func (p *Plan) tupleSize(g *group) int {
	size := 1
	for _, s := range g.sens {
		size *= len(p.slots[s].values) + 1
		if size > maxTuple {
			return size
		}
	}
	return size
}

// addGroup numbers the sensitive values the group's queries use and
// records where each query's answer is read.
func (p *Plan) addGroup(g *group, queries []int, sens func(int) []term) {
	g.queries = queries
	w := len(g.sens)
	g.local = make([][]int32, w)
	g.stride = make([]int, w)
	used := make([]int32, w) // values numbered so far, per sensitive slot
	for k, s := range g.sens {
		g.local[k] = make([]int32, len(p.slots[s].values)+1)
	}
	for _, i := range queries {
		loc := make([]int32, w)
		for k, t := range sens(i) {
			if g.local[k][t.class+1] == 0 {
				used[k]++
				g.local[k][t.class+1] = used[k]
			}
			loc[k] = g.local[k][t.class+1]
		}
		p.qLocal[i] = loc
	}
	if p.allValues && w == 1 && len(g.pred) > 0 { // ShrinkPredicate's counts
		for c := range g.local[0] {
			if c > 0 && g.local[0][c] == 0 {
				used[0]++
				g.local[0][c] = used[0]
			}
		}
	}
	g.size = 1
	g.radix = make([]int, w)
	for k := w - 1; k >= 0; k-- {
		g.stride[k] = g.size
		g.radix[k] = int(used[k]) + 1
		g.size *= g.radix[k]
	}
	g.counts = make([]int64, g.size)
	for _, i := range queries {
		p.qGroup[i] = len(p.groups)
		t := 0
		for k, l := range p.qLocal[i] {
			t += int(l) * g.stride[k]
		}
		p.qTuple[i] = t
	}
	// Groups with the same sensitive numbering share the all-rows counts.
	for _, h := range p.hists {
		if slices.Equal(h.sens, g.sens) && slices.EqualFunc(h.local, g.local, slices.Equal) {
			g.all = h
		}
	}
	if g.all == nil {
		g.all = &hist{sens: g.sens, local: g.local, stride: g.stride, radix: g.radix, size: g.size, counts: make([]int64, g.size)}
		p.hists = append(p.hists, g.all)
	}
	p.groups = append(p.groups, g)
}

// sensitiveAbsent lists the sensitive columns a table lacks (anatomy's),
// for messages that list the queryable columns.
func (rel *Release) sensitiveAbsent() []string {
	if rel.Mechanism == release.MechanismAnatomy {
		return rel.Sensitive
	}
	return nil
}
