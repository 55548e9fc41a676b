package countquery

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/table"
)

// Anatomy in a Plan. Xiao and Tao's estimator of a query "P and s" is
// Σ_g m_g·c_g(s)/n_g over the groups g (m_g rows of group g in the row
// table satisfy P, c_g(s) of its n_g values in the sensitive table are
// s). Each query group keeps the integer sums
//
//	anatSum[k·size + t] = Σ over groups g of size sizes[k] of m_g·c_g(s), s of local value t,
//
// and anatomySums adds anatSum/sizes[k] in increasing order of k: the
// same float whatever the order of rows, parts or entries. Two ways to
// the same integers, chosen per run by their memory (ReadAnatomyGroups):
//
//   - held: the sensitive table in memory, by group (CSR: start, value,
//     count), 8 bytes an entry and 4 a group; each row of group g adds
//     c_g(s)·w for the entries of g;
//   - streamed: m_g per query group that names the sensitive column,
//     4 bytes a group per such query group (8 past N = 2^32 − 1 rows);
//     once every part is scanned, EndScan streams the sensitive table and
//     adds c_g(s)·m_g.
//
// Σ_rows c·w = c·Σ_rows w in int64 (wrapping alike if ever it overflows),
// so both give the same sums bit for bit.

// anatomyTable is what a Plan keeps of Anatomy's sensitive table.
type anatomyTable struct {
	open func(columns []string) (table.Reader, error)
	// sizes are the distinct group sizes n_g in increasing order, and
	// sizeOf[g] is the index of n_g among them.
	sizes  []int64
	sizeOf sizeIndex
	// Held: the entries of group g are start[g] ≤ e < start[g+1], each a
	// codebook index and its count c_g(s).
	start        []uint32
	value, count []uint32
	// Streamed: queries lists the query groups that name the sensitive
	// column, and m32 (N < 2^32: no m_g of a release of N rows is more),
	// else m64, at g·len(queries) + q is m_g of query group q.
	queries  []*group
	streamed bool
	small    bool // N < 2^32: m32
	m32      []uint32
	m64      []int64
}

// alloc makes m_g's table (streamed), once: at the first part's scan, so
// that it is not held while the tables before are opened (their
// metadata parsed).
func (t *anatomyTable) alloc(groups int) {
	if !t.streamed || t.m32 != nil || t.m64 != nil {
		return
	}
	if n := groups * len(t.queries); t.small {
		t.m32 = make([]uint32, n)
	} else {
		t.m64 = make([]int64, n)
	}
}

// m is m_g of query group q at i = g·len(queries) + q (streamed).
func (t *anatomyTable) m(i int) int64 {
	if t.m32 != nil {
		return int64(t.m32[i])
	}
	return t.m64[i]
}

// Ways of ReadAnatomyGroups: anatomyAuto chooses by memory; the others
// force one (tests).
const (
	anatomyAuto = iota
	anatomyHeld
	anatomyStreamed
)

// ReadAnatomyGroups prepares the plan of an anatomy release to read its
// sensitive table (columns group id, the sensitive column, count), which
// open opens, reading the columns named, once per pass; the caller has
// checked its metadata (release.AnatomyGroups, the same release id). Call
// it before ScanPart. A first pass sums each group's counts n_g and
// entries E_g; then the table is held (a second pass fills it: 8·E + 4·G
// bytes for E entries and G groups) if that is less than streaming it
// (4·G·Q bytes for Q query groups naming the sensitive column, 8·G·Q past
// N = 2^32 − 1 rows: EndScan's pass). Either way it holds a byte a group
// for sizeOf (4 past 256 distinct sizes), and 12 more during the first
// pass. It refuses an unknown
// group id or label, a count outside 1 … 2^32 − 1 and a group without
// entries.
func (p *Plan) ReadAnatomyGroups(open func(columns []string) (table.Reader, error)) error {
	rel := p.rel
	if err := rel.checkAnatomy(); err != nil {
		return err
	}
	t := &anatomyTable{open: open}
	for _, g := range p.groups {
		if len(g.sens) > 0 {
			g.anatQ = len(t.queries)
			t.queries = append(t.queries, g)
		}
	}
	// Pass 1: n_g, and group g's entries at start[g+1].
	var per []int64
	var entries int64
	name, err := t.pass(rel, false, func() {
		per = make([]int64, rel.Groups)
		t.start = make([]uint32, rel.Groups+1)
	}, func(gid int64, _ int, cnt int64) error {
		per[gid] += cnt
		t.start[gid+1]++ // at most n_g ≤ N entries: past 2^32 the sum below says so
		entries++
		return nil
	})
	if err != nil {
		return err
	}
	if t.sizes, t.sizeOf, err = groupSizes(per, name); err != nil {
		return err
	}
	per = nil
	G, Q := int64(rel.Groups), int64(len(t.queries))
	small := rel.Rows > 0 && rel.Rows <= math.MaxUint32 // m_g fits in a uint32
	perM := int64(8)
	if small {
		perM = 4
	}
	held := entries <= math.MaxUint32 && 8*entries+4*G < perM*G*Q
	switch p.anatomyWay {
	case anatomyHeld:
		held = entries <= math.MaxUint32
	case anatomyStreamed:
		held = false
	}
	if !held {
		t.start, t.streamed, t.small = nil, true, small
		p.anat = t
		return nil
	}
	// Pass 2 fills the entries: start[g+1] is first group g's offset,
	// then, as its entries are written there, its end.
	var off uint32
	for g := range rel.Groups {
		off, t.start[g+1] = off+t.start[g+1], off
	}
	var filled int64
	_, err = t.pass(rel, true, func() {
		t.value = make([]uint32, entries)
		t.count = make([]uint32, entries)
	}, func(gid int64, val int, cnt int64) error {
		e := t.start[gid+1]
		if filled++; int64(e) >= entries {
			return fmt.Errorf("%s changed while it was read: give it unchanged", name)
		}
		t.value[e], t.count[e] = uint32(val), uint32(cnt)
		t.start[gid+1]++
		return nil
	})
	if err == nil && filled != entries {
		err = fmt.Errorf("%s changed while it was read: give it unchanged", name)
	}
	if err != nil {
		return err
	}
	p.anat = t
	return nil
}

// pass reads the sensitive table once (with its labels or without),
// allocating its tables with alloc once the table is open (opening may
// hold its metadata a while: ~30 MB for a codebook of 1M labels). It
// returns the table's name.
func (t *anatomyTable) pass(rel *Release, labels bool, alloc func(), f func(gid int64, val int, cnt int64) error) (string, error) {
	in, err := t.open(AnatomyGroupsColumns(rel, labels))
	if err != nil {
		return "", err
	}
	defer in.Close()
	alloc()
	var ferr error
	err = eachAnatomyEntry(in, rel, labels, func(gid int64, val int, cnt int64) {
		if ferr == nil {
			ferr = f(gid, val, cnt)
		}
	})
	if err == nil {
		err = ferr
	}
	return in.Name(), err
}

// addAnatomyRows adds the rows of one batch of an anatomy release (or of
// its count table, each row weighing w[row], when counted): a row of group
// g satisfying P holds value s with probability c_g(s)/n_g. Held, the
// row's c_g(s)·w go to the query group's anatSum at once; streamed, its w
// goes to m_g, which EndScan multiplies.
func (p *Plan) addAnatomyRows(a arrow.Array, file string, first int64, cls [][]int32, w []int64, counted bool) error {
	t, rel := p.anat, p.rel
	vals := table.ValuesOf(a)
	Q := len(t.queries)
	for row := range a.Len() {
		gid, err := rel.groupID(vals, row, file, first)
		if err != nil {
			return err
		}
		n := int64(1)
		if counted {
			n = w[row]
		}
		p.each(cls, row, func(g *group) {
			g.nP += n
			if len(g.sens) == 0 {
				return
			}
			if t.m32 != nil {
				// Wraps only if the parts hold more than N rows, which
				// EndScan refuses before reading m.
				t.m32[int(gid)*Q+g.anatQ] += uint32(n)
				return
			}
			if t.m64 != nil {
				t.m64[int(gid)*Q+g.anatQ] += n
				return
			}
			sum := g.anatomySum(len(t.sizes))
			base := t.sizeOf.at(gid) * g.size
			local, byIndex := g.local[0], p.slots[g.sens[0]].classOfIndex
			for e := t.start[gid]; e < t.start[gid+1]; e++ {
				sum[base+int(local[byIndex.get(int(t.value[e]))+1])] += int64(t.count[e]) * n
			}
		})
	}
	return nil
}

// anatomySum is the group's anatSum, made on first use (a group no row
// satisfies keeps none, and answers 0).
func (g *group) anatomySum(sizes int) []int64 {
	if g.anatSum == nil {
		g.anatSum = make([]int64, g.size*sizes)
	}
	return g.anatSum
}

// endAnatomy ends the scan of an anatomy release: streamed, a pass over
// the sensitive table adds c_g(s)·m_g to each query group's sums (for the
// groups with m_g > 0, as held adds only for rows read); then every query
// group's estimates are read from its sums.
func (p *Plan) endAnatomy() error {
	t, rel := p.anat, p.rel
	if t.streamed {
		t.alloc(rel.Groups) // no part scanned: EndScan refuses 0 rows before
		Q := len(t.queries)
		var byIndex *classTable
		if Q > 0 {
			byIndex = p.slots[t.queries[0].sens[0]].classOfIndex // anatomy's one sensitive column
		}
		// With no such query group the pass still checks the table, as
		// held does.
		_, err := t.pass(rel, true, func() {}, func(gid int64, val int, cnt int64) error {
			if Q == 0 {
				return nil
			}
			cls := byIndex.get(val) + 1
			base := t.sizeOf.at(gid)
			for q, g := range t.queries {
				m := t.m(int(gid)*Q + q)
				if m == 0 {
					continue
				}
				g.anatomySum(len(t.sizes))[base*g.size+int(g.local[0][cls])] += cnt * m
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, g := range p.groups {
		g.anatomySums(t.sizes)
	}
	// Only the estimates are read now: let the table and m_g go.
	p.anat = &anatomyTable{sizes: t.sizes}
	return nil
}

// anatomySums sets the group's estimates Σ_g m_g·c_g(s)/n_g from its
// integer sums, adding the terms of each group size in increasing order
// of size: the same float whatever the order in which rows were read.
func (g *group) anatomySums(sizes []int64) {
	if g.anatSum == nil {
		return
	}
	g.anat = make([]float64, g.size)
	for k, n := range sizes {
		for t := range g.size {
			g.anat[t] += float64(g.anatSum[k*g.size+t]) / float64(n)
		}
	}
}
