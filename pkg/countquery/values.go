package countquery

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// Values answers, for every value s of every sensitive column, the count
// query "column=s" alone (no predicate), as Plan.Answers answers it, from
// one table of V counts per column instead of V queries:
//
//   - A′: f′_s, the rows publishing s (Theorem 3);
//   - Anatomy: Σ_g m_g·c_g(s)/n_g (Xiao and Tao), from m_g, the rows of
//     group g in the row table, the terms of each group size n_g summed
//     as integers and added in increasing order of size, as Plan does
//     (anatomySums);
//   - global (mechanism A): GlobalCountMulti of z = (N − y_s, y_s), y_s
//     the rows publishing s.
//
// A Plan of the V queries held about 350 bytes a value (the queries, their
// classes, local numbers and answers): over 400 MB at 1M values (report,
// issue 11). Values holds 8 bytes a value per column (its count), and 8
// more for the truth.
type Values struct {
	rel  *Release
	plan *Plan // one slot per sensitive column, each codebook index its own class
	// counts[k][s] are the rows publishing value s of sensitive column k
	// (A′, global); groupRows[g] is m_g (anatomy).
	counts    [][]int64
	groupRows []uint32 // m_g ≤ 2^32 − 1, as Plan holds them
	rows      int64
	truth     [][]int64
	// anat is anatomy's estimates by codebook index, from
	// ScanAnatomyGroups.
	anat []float64
	// est[k] is column k's estimates once Estimates made them, in the
	// memory of its counts (A′, global).
	est [][]float64
}

// NewValues prepares the value counts of rel's sensitive columns.
func NewValues(rel *Release) (*Values, error) {
	if err := rel.check(); err != nil {
		return nil, err
	}
	p := &Plan{rel: rel}
	for k, name := range rel.Sensitive {
		p.slots = append(p.slots, &slot{col: name, sens: k, cb: rel.Columns[k]}) // each index its own class
	}
	return &Values{rel: rel, plan: p}, nil
}

// ScanRelease counts, in one pass over the published table in, the rows
// publishing each value (for anatomy, the rows of each group m_g, whose
// sensitive table ScanAnatomyGroups streams next); when countColumn is
// not "", in is a count table (estimate --tabulate) whose rows weigh
// their count, as in Plan.ScanPart. It refuses what Plan.ScanRelease
// refuses: a label outside the codebook, a group id outside the
// release's, and a number of rows other than N.
func (v *Values) ScanRelease(in table.Reader, countColumn string) error {
	rel := v.rel
	anatomy := rel.Mechanism == release.MechanismAnatomy
	cells, err := v.plan.bind(in, rel, false, func(*slot) bool { return anatomy })
	if err != nil {
		return err
	}
	groupCol, err := rel.groupColumn(in)
	if err != nil {
		return err
	}
	countCol := -1
	if countColumn != "" {
		idx := in.Schema().FieldIndices(countColumn)
		if len(idx) == 0 {
			return fmt.Errorf("%s is a count table without a %q column; tabulate the release again with estimate --tabulate", in.Name(), countColumn)
		}
		countCol = idx[0]
	}
	if anatomy {
		v.groupRows = make([]uint32, rel.Groups)
	} else {
		v.counts = v.alloc()
	}
	cls := make([][]int32, len(v.plan.slots))
	var weight []int64
	err = table.EachBatch(in, func(rec arrow.RecordBatch, first int64) error {
		n := int(rec.NumRows())
		w := func(int) int64 { return 1 }
		if countCol >= 0 {
			var err error
			if weight, err = readCounts(rec.Column(countCol), in.Name(), countColumn, first, v.rows, weight); err != nil {
				return err
			}
			w = func(row int) int64 { return weight[row] }
		}
		for row := range n {
			v.rows += w(row)
		}
		if anatomy {
			vals := table.ValuesOf(rec.Column(groupCol))
			for row := range n {
				gid, err := rel.groupID(vals, row, in.Name(), first)
				if err != nil {
					return err
				}
				m := uint64(v.groupRows[gid]) + uint64(w(row))
				if m > math.MaxUint32 {
					return fmt.Errorf("%s: group %d has over %d rows, more than a group of a release holds; the release was edited: publish the original table again with anonymize", in.Name(), gid, uint32(math.MaxUint32))
				}
				v.groupRows[gid] = uint32(m)
			}
			return nil
		}
		if err := classify(cells, rec, first, cls); err != nil {
			return err
		}
		for k, c := range cls {
			for row, x := range c {
				v.counts[k][x] += w(row)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return rel.checkRows(v.rows)
}

// alloc makes a table of counts per value of each sensitive column.
func (v *Values) alloc() [][]int64 {
	c := make([][]int64, len(v.rel.Columns))
	for k, col := range v.rel.Columns {
		c[k] = make([]int64, col.K())
	}
	return c
}

// ScanTruth counts, in one pass over in, the original table the release
// was made from (--truth), the rows holding each value of each sensitive
// column, read with the release's Policy; rows anonymize left out
// (--missing drop) are skipped, as Plan.ScanTruth skips them.
func (v *Values) ScanTruth(in table.Reader) error {
	rel := v.rel
	cells, err := v.plan.bind(in, rel, true, func(*slot) bool { return false })
	if err != nil {
		return err
	}
	v.truth = v.alloc()
	cls := make([][]int32, len(v.plan.slots))
	err = table.EachBatch(in, func(rec arrow.RecordBatch, first int64) error {
		if err := classify(cells, rec, first, cls); err != nil {
			return err
		}
	rows:
		for row := range int(rec.NumRows()) {
			for k := range cls {
				if cls[k][row] == classDrop {
					continue rows // left out by anonymize --missing drop
				}
			}
			for k := range cls {
				v.truth[k][cls[k][row]]++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if in.RowsRead() == 0 {
		return fmt.Errorf("--truth %s has no data rows", in.Name())
	}
	return nil
}

// Estimates returns the estimated count of every value of sensitive
// column k (by codebook index), after ScanRelease (and for anatomy
// ScanAnatomyGroups). For A′ and global they are made from column k's
// counts in the counts' own memory (8 bytes a value, not 16: 16 MB at 2M
// values, report's peak), so the scans are over; a later call returns the
// same estimates.
func (v *Values) Estimates(k int) ([]float64, error) {
	rel := v.rel
	V := rel.Columns[k].K()
	if rel.Mechanism == release.MechanismAnatomy {
		if v.anat == nil {
			return nil, fmt.Errorf("countquery: %s is an anatomy release: its estimates need its sensitive table (ScanAnatomyGroups)", rel.Name)
		}
		return v.anat, nil
	}
	if v.est == nil {
		v.est = make([][]float64, len(rel.Columns))
	}
	if v.est[k] != nil {
		return v.est[k], nil
	}
	counts := v.counts[k]
	if len(counts) != V {
		return nil, fmt.Errorf("countquery: %s: Estimates needs the counts of ScanRelease", rel.Name)
	}
	// Each count is read before its slot is written.
	est := unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(counts))), V)
	if rel.Mechanism == release.MechanismGlobal {
		keep, err := rel.keep(k)
		if err != nil {
			return nil, err
		}
		for s, y := range counts {
			e, err := GlobalCountMulti([]float64{float64(v.rows - y), float64(y)}, []int{V}, []float64{keep})
			if err != nil {
				v.counts[k] = nil // counts[:s] are estimates already
				return nil, err
			}
			est[s] = e
		}
	} else {
		for s, y := range counts {
			est[s] = float64(y) // f′_s, Theorem 3
		}
	}
	v.est[k], v.counts[k] = est, nil
	return est, nil
}

// anatomySumsMax bounds the integer sums, (group sizes)·V, that a pass of
// ScanAnatomyGroups holds: past it, the sizes take several passes.
var anatomySumsMax = 1 << 22

// ScanAnatomyGroups computes, after ScanRelease, Anatomy's estimates Σ_g m_g·c_g(s)/n_g from the sensitive table
// streamed: open opens it, reading the columns named, once per pass. A
// first pass sums each group's counts, n_g; then, for the group sizes in
// increasing order (as many as anatomySumsMax allows per pass), a pass sums
// m_g·c_g(s) per size and value as integers, and each size's sums are
// divided by n_g and added in that order: bit for bit the floats of Plan's
// queries "column=s" (anatomySums), without holding the table's entries.
// It refuses what Plan.ReadAnatomyGroups refuses.
func (v *Values) ScanAnatomyGroups(open func(columns []string) (table.Reader, error)) error {
	rel := v.rel
	if err := rel.checkAnatomy(); err != nil {
		return err
	}
	m := v.groupRows // m_g
	if m == nil {
		return fmt.Errorf("countquery: %s: ScanAnatomyGroups needs the group rows of ScanRelease", rel.Name)
	}
	// A pass allocates its tables once the table is open: opening may
	// hold its metadata a while (a codebook of 1M labels: ~30 MB).
	pass := func(labels bool, alloc func(), f func(gid int64, val int, cnt int64)) (string, error) {
		in, err := open(AnatomyGroupsColumns(rel, labels))
		if err != nil {
			return "", err
		}
		defer in.Close()
		alloc()
		return in.Name(), eachAnatomyEntry(in, rel, labels, f)
	}
	var per []int64 // n_g
	name, err := pass(false, func() { per = make([]int64, rel.Groups) }, func(gid int64, _ int, cnt int64) { per[gid] += cnt })
	if err != nil {
		return err
	}
	sizes, sizeOf, err := groupSizes(per, name)
	if err != nil {
		return err
	}
	per = nil
	V := rel.Columns[0].K()
	var est []float64
	step := max(1, anatomySumsMax/V)
	for k0 := 0; k0 < len(sizes); k0 += step {
		k1 := min(len(sizes), k0+step)
		var sums []int64 // Σ m_g·c_g(s) of the groups of size k0+i at i·V+s
		_, err := pass(true, func() { sums = make([]int64, (k1-k0)*V) }, func(gid int64, s int, c int64) {
			if k := sizeOf.at(gid); k >= k0 && k < k1 {
				sums[(k-k0)*V+s] += c * int64(m[gid])
			}
		})
		if err != nil {
			return err
		}
		k := k0
		if est == nil {
			// The first size's sums become the estimates in place
			// (8 bytes a value less): 0 + x/n is x/n bit for bit (x an
			// integer, so never −0), and each sum is read before its
			// slot is written.
			est = unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(sums))), V)
			n := float64(sizes[k])
			for s, x := range sums[:V] {
				est[s] = float64(x) / n
			}
			k++
		}
		for ; k < k1; k++ {
			n := float64(sizes[k])
			for s, x := range sums[(k-k0)*V : (k-k0+1)*V] {
				est[s] += float64(x) / n
			}
		}
	}
	v.anat, v.groupRows = est, nil // m_g are read: let them go
	return nil
}

// Truth returns the true count of every value of sensitive column k, after
// ScanTruth (nil before).
func (v *Values) Truth(k int) []int64 {
	if v.truth == nil {
		return nil
	}
	return v.truth[k]
}
