package estimate

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/countquery"
	"github.com/pramkit/pramkit/pkg/progress"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// Classes: the distinct values the queries ask about in one column are
// numbered 0, 1, …; a cell holding none of them has class countNone, and
// a row of the original table that anonymize left out (--missing drop)
// has countDrop in its sensitive column.
const (
	countNone int32 = -1
	countDrop int32 = -2
	// countMemo bounds the cache of raw values already mapped through a
	// codebook, per column.
	countMemo = 1 << 16
	// countMaxTuple bounds a query group's table of sensitive-value
	// combinations; bigger groups are answered query by query.
	countMaxTuple = 1 << 16
)

// countSlot is one column the queries name.
type countSlot struct {
	col  string
	sens int              // index among the release's sensitive columns, -1 for the others
	cb   *codebook.Column // categories to match by; nil: match the published text
	// classOfIndex maps a codebook index to its class (cb != nil).
	classOfIndex []int32
	labelIndex   map[string]uint32
	// classOfValue maps a published text to its class (cb == nil).
	classOfValue map[string]int32
	values       []string // class → the value as queried
	// Without a codebook the release's own values are the domain: seen[c]
	// says a release row holds class c, and known collects up to
	// countKnownMax other values, for the message when a queried value
	// is in no row (a typo, or a bin of a column released raw).
	seen      []bool
	unseen    int
	known     map[string]struct{}
	knownMore bool
}

// countKnownMax bounds the distinct values a column keeps for the
// message naming the values a query could have meant.
const countKnownMax = 1024

// countListMax is how many values such a message lists.
const countListMax = 20

// quoteValues quotes at most countListMax of values, each cut at 80
// characters, and says how many more there are (more: at least that many).
func quoteValues(values []string, more bool) string {
	var b strings.Builder
	for i, v := range values {
		if i == countListMax {
			n := len(values) - countListMax
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
func (s *countSlot) track() {
	if s.cb != nil || s.seen != nil {
		return
	}
	s.seen = make([]bool, len(s.values))
	s.unseen = len(s.values)
	s.known = map[string]struct{}{}
}

// missing returns an error for the first queried value that no release
// row holds, listing the values the column does hold.
func (s *countSlot) missing(queries []countquery.Query, file, release string) error {
	if s.cb != nil || s.unseen == 0 {
		return nil
	}
	c := slices.Index(s.seen, false)
	value := s.values[c]
	where := fmt.Sprintf("query %q", value)
	for i := range queries {
		if slices.Contains(queries[i].Conds, countquery.Cond{Col: s.col, Value: value}) {
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
func (s *countSlot) class(value string) (int32, error) {
	if s.cb == nil {
		c, ok := s.classOfValue[value]
		if !ok {
			c = int32(len(s.values))
			s.classOfValue[value] = c
			s.values = append(s.values, value)
		}
		return c, nil
	}
	idx, ok := s.labelIndex[value]
	if !ok {
		return 0, fmt.Errorf("%s is not a category of column %q in the codebook (categories: %s)", table.QuoteCell(value), s.col, quoteValues(s.cb.Labels(), false))
	}
	c := s.classOfIndex[idx]
	if c == countNone {
		c = int32(len(s.values))
		s.classOfIndex[idx] = c
		s.values = append(s.values, value)
	}
	return c, nil
}

func newCountSlot(col string, sens int, cb *codebook.Column) *countSlot {
	s := &countSlot{col: col, sens: sens, cb: cb}
	if cb == nil {
		s.classOfValue = map[string]int32{}
		return s
	}
	s.classOfIndex = slices.Repeat([]int32{countNone}, cb.K())
	s.labelIndex = make(map[string]uint32, cb.K())
	for i, l := range cb.Labels() {
		s.labelIndex[l] = uint32(i)
	}
	return s
}

// countTerm is one non-sensitive condition of a predicate P.
type countTerm struct {
	slot  int
	class int32
}

// countHist counts rows by their combination of sensitive values: for
// each sensitive slot, local[k][class+1] is the value's local number
// (0 for values no query of the group asks about); the combination's
// index is Σ local·stride.
type countHist struct {
	sens   []int
	local  [][]int32
	stride []int
	radix  []int // local values per sensitive slot (those asked and "other")
	size   int   // number of combinations, Π radix
	counts []int64
}

func (h *countHist) tuple(cls [][]int32, row int) int {
	t := 0
	for k, s := range h.sens {
		t += int(h.local[k][cls[s][row]+1]) * h.stride[k]
	}
	return t
}

// countGroup gathers the queries with the same predicate P on the
// non-sensitive columns and the same sensitive columns: one pass counts
// the rows satisfying P by their combination of sensitive values, and
// every query of the group is read from those counts.
type countGroup struct {
	pred []countTerm
	countHist
	nP      int64
	all     *countHist // all rows of the release, by combination (shared)
	anat    []float64  // anatomy: Σ over P rows of c_g(s)/n_g, by local value
	truthP  []int64    // the original table's P rows, by combination
	truthNP int64
	queries []int
}

// each calls f for every group whose predicate row satisfies. For every
// predicate column and class, mask holds the set of groups that row
// satisfies on that column (those asking for the class, and those that do
// not look at the column); a row's groups are the intersection over the
// columns: O(columns × groups/64) word operations per row, plus f's work.
func (p *countPlan) each(cls [][]int32, row int, f func(g *countGroup)) {
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
func (p *countPlan) index() {
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

// countPlan is the compiled set of queries.
type countPlan struct {
	slots   []*countSlot
	groups  []*countGroup
	hists   []*countHist
	queries []countquery.Query
	file    string    // the --queries file, for messages
	qGroup  []int     // group of each query
	qLocal  [][]int32 // local number of each of the query's sensitive values
	qTuple  []int     // index of that combination
	rows    int64     // rows of the release
	// mask[slot][class+1] is the set of groups (a bitset) that a row with
	// that class in that column satisfies on the column; predSlots lists
	// the columns predicates look at. See each.
	mask      [][][]uint64
	predSlots []int
	allGroups []uint64
	acc       []uint64
}

// newCountPlan checks the queries against the release and groups them.
func newCountPlan(rel *countRelease, schema *arrow.Schema, nsaBook *codebook.Codebook, queries []countquery.Query, file string) (*countPlan, error) {
	p := &countPlan{queries: queries, file: file}
	slotOf := map[string]int{}
	var names []string
	for _, f := range schema.Fields() {
		names = append(names, f.Name)
	}
	type parsed struct {
		pred []countTerm
		sens []countTerm // slot and class, in the release's order of sensitive columns
	}
	parsedQ := make([]parsed, len(queries))
	for i := range queries {
		q := &queries[i]
		for _, c := range q.Conds {
			si, ok := slotOf[c.Col]
			if !ok {
				k := rel.sensitiveIndex(c.Col)
				var cb *codebook.Column
				switch {
				case k >= 0:
					cb = rel.cols[k]
				case rel.mech == "anatomy" && c.Col == rel.groupCol:
					return nil, fmt.Errorf("%s: %q is Anatomy's group id column, not an attribute; query the other columns", q.Where(file), c.Col)
				case !slices.Contains(names, c.Col):
					return nil, fmt.Errorf("%s: %s has no column %q (columns: %s)", q.Where(file), rel.name, c.Col, strings.Join(append(slices.Clone(names), rel.sensitiveAbsent()...), ", "))
				case nsaBook != nil:
					if col, ok := nsaBook.Column(c.Col); ok {
						cb = col
					}
				}
				si = len(p.slots)
				slotOf[c.Col] = si
				p.slots = append(p.slots, newCountSlot(c.Col, k, cb))
			}
			cls, err := p.slots[si].class(c.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", q.Where(file), err)
			}
			if p.slots[si].sens >= 0 {
				parsedQ[i].sens = append(parsedQ[i].sens, countTerm{si, cls})
			} else {
				parsedQ[i].pred = append(parsedQ[i].pred, countTerm{si, cls})
			}
		}
		slices.SortFunc(parsedQ[i].pred, func(a, b countTerm) int { return a.slot - b.slot })
		slices.SortFunc(parsedQ[i].sens, func(a, b countTerm) int { return p.slots[a.slot].sens - p.slots[b.slot].sens })
	}
	// Group the queries by (P, sensitive columns).
	byKey := map[string]*countGroup{}
	var order []*countGroup
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
			g = &countGroup{pred: pq.pred}
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
		if p.tupleSize(g) <= countMaxTuple {
			p.addGroup(g, g.queries, func(i int) []countTerm { return parsedQ[i].sens })
			continue
		}
		for _, i := range g.queries { // answered one by one
			one := &countGroup{pred: g.pred, countHist: countHist{sens: g.sens}}
			p.addGroup(one, []int{i}, func(i int) []countTerm { return parsedQ[i].sens })
		}
	}
	p.index()
	return p, nil
}

// tupleSize bounds the number of combinations the group needs.
func (p *countPlan) tupleSize(g *countGroup) int {
	size := 1
	for _, s := range g.sens {
		size *= len(p.slots[s].values) + 1
		if size > countMaxTuple {
			return size
		}
	}
	return size
}

// addGroup numbers the sensitive values the group's queries use and
// records where each query's answer is read.
func (p *countPlan) addGroup(g *countGroup, queries []int, sens func(int) []countTerm) {
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
		g.all = &countHist{sens: g.sens, local: g.local, stride: g.stride, radix: g.radix, size: g.size, counts: make([]int64, g.size)}
		p.hists = append(p.hists, g.all)
	}
	p.groups = append(p.groups, g)
}

// sensitiveAbsent lists the sensitive columns a table lacks (anatomy's),
// for messages that list the queryable columns.
func (rel *countRelease) sensitiveAbsent() []string {
	if rel.mech == "anatomy" {
		return rel.sensitive
	}
	return nil
}

// countCells maps the cells of one column of one table to classes.
type countCells struct {
	slot   *countSlot
	col    int  // column index in the table
	labels bool // cells are codebook labels (a release's sensitive column)
	enc    *codebook.Encoder
	memo   map[string]int32
	imemo  map[int64]int32
	file   string // for messages
	track  bool   // record the slot's seen and known values (release scan)
	// orig says the cells are the original table's values of a
	// sensitive column, read with the release's policy.
	orig bool
}

// classes writes the class of every cell of a into out. Text cells are
// looked up in the batch's memory and integer cells by value, so known
// values cost no allocation.
func (c *countCells) classes(a arrow.Array, first int64, out []int32) error {
	vals := table.ValuesOf(a)
	str, _ := a.(*array.String)
	i64, _ := a.(*array.Int64)
	i32, _ := a.(*array.Int32)
	for i := range a.Len() {
		var err error
		switch {
		case a.IsNull(i):
			out[i], err = c.classOf("", first+int64(i))
		case str != nil:
			out[i], err = c.classOf(str.Value(i), first+int64(i))
		case i64 != nil || i32 != nil:
			var v int64
			if i64 != nil {
				v = i64.Value(i)
			} else {
				v = int64(i32.Value(i))
			}
			cls, ok := c.imemo[v]
			if !ok {
				if cls, err = c.classOf(strconv.FormatInt(v, 10), first+int64(i)); err == nil && len(c.imemo) < countMemo {
					c.imemo[v] = cls
				}
			}
			out[i] = cls
		default:
			out[i], err = c.classOf(vals.String(i), first+int64(i))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// classOf is the class of one cell's text.
func (c *countCells) classOf(s string, row int64) (int32, error) {
	sl := c.slot
	switch {
	case sl.cb == nil:
		if cls, ok := sl.classOfValue[s]; ok {
			if c.track && !sl.seen[cls] {
				sl.seen[cls] = true
				sl.unseen--
			}
			return cls, nil
		}
		// Other values are kept only while a queried value is still
		// missing, and only for the message.
		if c.track && sl.unseen > 0 && !sl.knownMore {
			if _, ok := sl.known[s]; !ok {
				if len(sl.known) == countKnownMax {
					sl.knownMore = true
				} else {
					sl.known[strings.Clone(s)] = struct{}{}
				}
			}
		}
		return countNone, nil
	case c.labels:
		idx, ok := sl.labelIndex[s]
		if !ok {
			return 0, &table.DataError{File: c.file, Row: row, Column: sl.col,
				Err: fmt.Errorf("%s is not a category of the release's codebook; the release was edited: publish the original table again with anonymize", table.QuoteCell(s))}
		}
		return sl.classOfIndex[idx], nil
	}
	if cls, ok := c.memo[s]; ok {
		return cls, nil
	}
	idx, err := c.enc.Index(s)
	cls := countNone
	switch {
	case errors.Is(err, codebook.ErrDrop) && c.orig:
		cls = countDrop
	case err != nil:
		var how string
		if !c.orig {
			how = " (the --codebook file declares this column)"
		}
		return 0, &table.DataError{File: c.file, Row: row, Column: sl.col, Err: fmt.Errorf("%w%s", err, how)}
	default:
		cls = sl.classOfIndex[idx]
	}
	if len(c.memo) < countMemo {
		c.memo[strings.Clone(s)] = cls
	}
	return cls, nil
}

// bind prepares the cell readers of every slot for one table. orig says
// it is the original table (--truth), whose sensitive columns hold raw
// values read with the release's policy; skip lists the slots the table
// does not hold (anatomy's sensitive column).
func (p *countPlan) bind(in table.Reader, rel *countRelease, orig bool, skip func(*countSlot) bool) ([]*countCells, error) {
	cells := make([]*countCells, len(p.slots))
	for i, s := range p.slots {
		if skip(s) {
			continue
		}
		idx := in.Schema().FieldIndices(s.col)
		if len(idx) == 0 {
			what := "the release"
			if orig {
				what = "--truth " + in.Name()
			}
			return nil, fmt.Errorf("%s has no column %q, which the queries name; give the original table the release was made from", what, s.col)
		}
		c := &countCells{slot: s, col: idx[0], file: in.Name(), memo: map[string]int32{}, imemo: map[int64]int32{}}
		switch {
		case s.cb == nil:
			if !orig {
				c.track = true
				s.track()
			}
		case s.sens >= 0 && !orig:
			c.labels = true
		default:
			policy := codebook.Policy{}
			if s.sens >= 0 {
				policy, c.orig = rel.policy, true
			}
			enc, err := s.cb.Encoder(policy)
			if err != nil {
				return nil, err
			}
			c.enc = enc
		}
		cells[i] = c
	}
	return cells, nil
}

// scanRelease counts, in one pass over the release, the rows of every
// group's predicate by combination of published sensitive values (for
// anatomy: the expected counts from the sensitive table), and all rows by
// combination. Memory: one batch and the groups' counts.
func (p *countPlan) scanRelease(in table.Reader, rel *countRelease, st *anatomyTable, meter *progress.Meter) error {
	cells, err := p.bind(in, rel, false, func(s *countSlot) bool { return rel.mech == "anatomy" && s.sens >= 0 })
	if err != nil {
		return err
	}
	groupCol := -1
	if rel.mech == "anatomy" {
		groupCol = in.Schema().FieldIndices(rel.groupCol)[0]
	}
	cls := make([][]int32, len(p.slots))
	err = table.EachBatch(in, func(rec arrow.RecordBatch, first int64) error {
		n := int(rec.NumRows())
		if err := classify(cells, rec, first, cls); err != nil {
			return err
		}
		if groupCol >= 0 {
			if err := p.addAnatomyRows(rec.Column(groupCol), first, cls, st, rel); err != nil {
				return err
			}
		} else {
			for row := range n {
				for _, h := range p.hists {
					h.counts[h.tuple(cls, row)]++
				}
				p.each(cls, row, func(g *countGroup) {
					g.nP++
					g.counts[g.tuple(cls, row)]++
				})
			}
		}
		meter.Add(int64(n))
		return nil
	})
	meter.Done()
	if err != nil {
		return err
	}
	p.rows = in.RowsRead()
	if p.rows == 0 {
		return fmt.Errorf("%s has no data rows: nothing to estimate", rel.name)
	}
	if rel.n > 0 && p.rows != rel.n {
		return fmt.Errorf("%s has %d rows but its metadata says N = %d; the release was edited: publish the original table again with anonymize", rel.name, p.rows, rel.n)
	}
	for _, s := range p.slots {
		if err := s.missing(p.queries, p.file, rel.name); err != nil {
			return err
		}
	}
	return nil
}

// addAnatomyRows adds the rows of one batch of an anatomy release: a row
// of group g satisfying P holds value s with probability c_g(s)/n_g.
func (p *countPlan) addAnatomyRows(a arrow.Array, first int64, cls [][]int32, st *anatomyTable, rel *countRelease) error {
	vals := table.ValuesOf(a)
	sl := -1
	for i, s := range p.slots {
		if s.sens == 0 {
			sl = i
		}
	}
	for row := range a.Len() {
		gid, ok := vals.Int(row)
		if !ok || gid < 0 || gid >= int64(rel.groups) {
			return &table.DataError{File: rel.name, Row: first + int64(row), Column: rel.groupCol,
				Err: fmt.Errorf("%s is not a group id of this release (0 to %d); the release was edited: publish the original table again with anonymize", table.QuoteCell(vals.String(row)), rel.groups-1)}
		}
		p.each(cls, row, func(g *countGroup) {
			g.nP++
			if len(g.sens) == 0 {
				return
			}
			if g.anat == nil {
				g.anat = make([]float64, g.size)
			}
			for e := st.start[gid]; e < st.start[gid+1]; e++ {
				g.anat[g.local[0][p.slots[sl].classOfIndex[st.value[e]]+1]] += st.share[e]
			}
		})
	}
	return nil
}

// scanCountTruth counts, in one pass over the original table, the rows of
// every query: the true counts.
func (o *Options) scanCountTruth(p *countPlan, rel *countRelease) error {
	in, err := o.Streams.Open(o.Truth[0])
	if err != nil {
		return err
	}
	defer in.Close()
	if mech := in.Meta()[release.KeyMechanism]; mech != "" {
		return fmt.Errorf("--truth %s is a %s release, not the original table; give the table that was anonymized", in.Name(), mech)
	}
	cells, err := p.bind(in, rel, true, func(*countSlot) bool { return false })
	if err != nil {
		return err
	}
	// anonymize --missing drop left out the rows with a missing value in
	// any sensitive column, also in those no query names: read them too.
	var dropOnly []*countCells
	if rel.policy.Missing == codebook.MissingDrop {
		for k, name := range rel.sensitive {
			if slices.ContainsFunc(p.slots, func(s *countSlot) bool { return s.col == name }) {
				continue
			}
			extra := &countPlan{slots: []*countSlot{newCountSlot(name, k, rel.cols[k])}}
			c, err := extra.bind(in, rel, true, func(*countSlot) bool { return false })
			if err != nil {
				return err
			}
			dropOnly = append(dropOnly, c[0])
		}
	}
	for _, g := range p.groups {
		g.truthP = make([]int64, g.size)
	}
	cls := make([][]int32, len(p.slots))
	dropCls := make([][]int32, len(dropOnly))
	meter := o.Streams.Progress("estimate: read truth")
	err = table.EachBatch(in, func(rec arrow.RecordBatch, first int64) error {
		n := int(rec.NumRows())
		if err := classify(cells, rec, first, cls); err != nil {
			return err
		}
		if err := classify(dropOnly, rec, first, dropCls); err != nil {
			return err
		}
	rows:
		for row := range n {
			for i, s := range p.slots {
				if s.sens >= 0 && cls[i][row] == countDrop {
					continue rows // left out by anonymize --missing drop
				}
			}
			for i := range dropOnly {
				if dropCls[i][row] == countDrop {
					continue rows
				}
			}
			p.each(cls, row, func(g *countGroup) {
				g.truthNP++
				g.truthP[g.tuple(cls, row)]++
			})
		}
		meter.Add(int64(n))
		return nil
	})
	meter.Done()
	if err != nil {
		return err
	}
	if in.RowsRead() == 0 {
		return fmt.Errorf("--truth %s has no data rows", in.Name())
	}
	return nil
}

// classify fills cls[i] with the classes of one batch's cells of cells[i]
// (for a nil entry cls[i] is only resized: its column is not read).
func classify(cells []*countCells, rec arrow.RecordBatch, first int64, cls [][]int32) error {
	n := int(rec.NumRows())
	for i, c := range cells {
		cls[i] = slices.Grow(cls[i][:0], n)[:n]
		if c == nil {
			continue
		}
		if err := c.classes(rec.Column(c.col), first, cls[i]); err != nil {
			return err
		}
	}
	return nil
}
