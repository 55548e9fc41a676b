package estimate

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/countquery"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// anatomyTable is Anatomy's sensitive table, by group: the entries of group
// g are start[g] ≤ e < start[g+1], each a value index and its share
// c_g(s)/n_g of the group.
type anatomyTable struct {
	start []int32
	value []uint32
	share []float64
}

// readAnatomyTable reads the sensitive table of an anatomy release: from
// --groups, else the file the metadata names next to the release.
func (o *Options) readAnatomyTable(rel *countRelease, p *countPlan) (*anatomyTable, error) {
	path := o.Counts.Groups
	if path == "" {
		if rel.dir == "" || rel.groupsTable == "" {
			return nil, fmt.Errorf("%s is an anatomy release: give its sensitive table with --groups FILE", rel.name)
		}
		path = filepath.Join(rel.dir, filepath.Base(rel.groupsTable))
	}
	in, err := o.Streams.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w (the sensitive table of the anatomy release %s; give it with --groups FILE)", err, rel.name)
	}
	defer in.Close()
	meta := in.Meta()
	if meta[release.KeyTable] != release.TableAnatomyGroups || meta[release.KeyReleaseID] != rel.releaseID {
		return nil, fmt.Errorf("%s is not the sensitive table of %s (their release ids differ); give the --groups file anonymize wrote with it", in.Name(), rel.name)
	}
	var groups release.AnatomyGroups
	if err := groups.Decode(meta, in.Name()); err != nil {
		return nil, err
	}
	col := rel.sensitive[0]
	idx := make([]int, 3)
	for i, name := range []string{rel.groupCol, col, "count"} {
		f := in.Schema().FieldIndices(name)
		if len(f) == 0 {
			return nil, fmt.Errorf("%s has no column %q; the file was edited: publish the original table again with anonymize", in.Name(), name)
		}
		idx[i] = f[0]
	}
	labels := map[string]uint32{}
	for i, l := range rel.cols[0].Labels() {
		labels[l] = uint32(i)
	}
	type entry struct {
		group, value uint32
		count        int64
	}
	var entries []entry
	per := make([]int64, rel.groups) // n_g
	for {
		rec, err := in.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		g, v, c := table.ValuesOf(rec.Column(idx[0])), table.ValuesOf(rec.Column(idx[1])), table.ValuesOf(rec.Column(idx[2]))
		first := in.RowsRead() - rec.NumRows() + 1
		for i := range int(rec.NumRows()) {
			edited := func(column, what string) error {
				return &table.DataError{File: in.Name(), Row: first + int64(i), Column: column,
					Err: fmt.Errorf("%s; the file was edited: publish the original table again with anonymize", what)}
			}
			gid, ok := g.Int(i)
			if !ok || gid < 0 || gid >= int64(rel.groups) {
				return nil, edited(rel.groupCol, fmt.Sprintf("%s is not a group id (0 to %d)", table.QuoteCell(g.String(i)), rel.groups-1))
			}
			val, ok := labels[v.String(i)]
			if !ok {
				return nil, edited(col, fmt.Sprintf("%s is not a category of %s", table.QuoteCell(v.String(i)), col))
			}
			cnt, ok := c.Int(i)
			if !ok || cnt < 1 {
				return nil, edited("count", fmt.Sprintf("%s is not a count ≥ 1", table.QuoteCell(c.String(i))))
			}
			entries = append(entries, entry{uint32(gid), val, cnt})
			per[gid] += cnt
		}
	}
	st := &anatomyTable{start: make([]int32, rel.groups+1), value: make([]uint32, len(entries)), share: make([]float64, len(entries))}
	for g, n := range per {
		if n == 0 {
			return nil, fmt.Errorf("%s: group %d has no entry; the file was edited: publish the original table again with anonymize", in.Name(), g)
		}
	}
	for _, e := range entries {
		st.start[e.group+1]++
	}
	for g := range rel.groups {
		st.start[g+1] += st.start[g]
	}
	next := append([]int32(nil), st.start[:rel.groups]...)
	for _, e := range entries {
		st.value[next[e.group]] = e.value
		st.share[next[e.group]] = float64(e.count) / float64(per[e.group])
		next[e.group]++
	}
	return st, nil
}

// countAnswer is the answer to one query.
type countAnswer struct {
	est        float64
	iterations int
	converged  bool
	truth      float64 // with --truth
}

func countNotConverged(answers []countAnswer) int {
	n := 0
	for _, a := range answers {
		if !a.converged {
			n++
		}
	}
	return n
}

// estimate answers every query from the counts gathered.
func (p *countPlan) estimate(rel *countRelease, co *countOptions) ([]countAnswer, error) {
	opt := countquery.Options{Tolerance: co.Tol, MaxIter: co.MaxIter, ExactDecoy: co.Decoy == decoyExact,
		UpdateFrequencies: co.Decoy == decoyPaper}
	out := make([]countAnswer, len(p.queries))
	for i := range p.queries {
		g := p.groups[p.qGroup[i]]
		a := &out[i]
		a.converged = true
		if g.truthP != nil {
			a.truth = float64(g.truthP[p.qTuple[i]])
		}
		w := len(g.sens)
		if w == 0 { // non-sensitive columns only: published unchanged
			a.est = float64(g.nP)
			continue
		}
		var err error
		switch rel.mech {
		case "anatomy":
			if g.anat != nil {
				a.est = g.anat[p.qTuple[i]]
			}
		case "global":
			a.est, err = p.globalEstimate(g, i, rel)
		default:
			if len(g.pred) == 0 && w == 1 {
				a.est = float64(g.all.counts[p.qTuple[i]]) // f′_s, Theorem 3
				continue
			}
			y := p.states(g, i)
			var e countquery.Estimate
			if w == 1 {
				e, err = countquery.Predicate([4]float64(y), rel.l, opt)
			} else {
				e, err = countquery.PredicateMulti(y, rel.l, opt)
			}
			a.est, a.iterations, a.converged = e.Count, e.Iterations, e.Converged
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", p.queries[i].Where(co.Queries), err)
		}
	}
	return out, nil
}

// hits splits combination t into the local value numbers of the group's
// sensitive columns and reports, as bits (the first column highest),
// which of them equal query i's.
func (p *countPlan) hits(g *countGroup, i, t int) int {
	bits := 0
	for k, l := range p.qLocal[i] {
		bits <<= 1
		if (t/g.stride[k])%g.radix[k] == int(l) {
			bits |= 1
		}
	}
	return bits
}

// states returns y, the release's counts of the 2^{w+1} states of query i
// (countquery.State order: P bit highest, then one bit per sensitive value).
func (p *countPlan) states(g *countGroup, i int) []float64 {
	w := len(g.sens)
	y := make([]float64, 1<<(w+1))
	for t := range g.size {
		bits := p.hits(g, i, t)
		y[1<<w|bits] += float64(g.counts[t])
		y[bits] += float64(g.all.counts[t] - g.counts[t])
	}
	return y
}

// globalEstimate inverts mechanism A for query i over the rows satisfying P.
func (p *countPlan) globalEstimate(g *countGroup, i int, rel *countRelease) (float64, error) {
	w := len(g.sens)
	z := make([]float64, 1<<w)
	for t := range g.size {
		z[p.hits(g, i, t)] += float64(g.counts[t])
	}
	v := make([]int, w)
	keep := make([]float64, w)
	for k, s := range g.sens {
		v[k] = rel.cols[p.slots[s].sens].K()
		keep[k] = rel.keep[p.slots[s].sens]
		if keep[k] == 0 {
			return 0, fmt.Errorf("%s was published with keep probability p = 0: its values carry no information to estimate from", p.slots[s].col)
		}
	}
	return countquery.GlobalCountMulti(z, v, keep)
}

// relativeError is |est − truth|/truth, NaN for a true count of 0.
func relativeError(est, truth float64) float64 {
	if truth == 0 {
		return math.NaN()
	}
	return math.Abs(est-truth) / truth
}

// countJSON is --json's shape.
type countJSONOut struct {
	Mechanism         string            `json:"mechanism"`
	L                 int               `json:"l,omitempty"`
	N                 int64             `json:"N"`
	Decoy             string            `json:"decoy,omitempty"`
	Queries           []countJSONAnswer `json:"queries"`
	MeanRelativeError *float64          `json:"mean_relative_error,omitempty"`
}

type countJSONAnswer struct {
	Query         string   `json:"query"`
	Estimate      float64  `json:"estimate"`
	Iterations    int      `json:"iterations"`
	True          *float64 `json:"true,omitempty"`
	RelativeError *float64 `json:"relative_error,omitempty"`
}

// writeCountAnswers writes the answers: JSON with --json, a CSV on stdout,
// or a table to -o.
func (o *Options) writeCountAnswers(rel *countRelease, p *countPlan, answers []countAnswer, hasTruth bool) error {
	if o.JSON {
		out := countJSONOut{Mechanism: rel.mech, L: rel.l, N: p.rows}
		if rel.mech == "diverted" {
			out.Decoy = o.Counts.Decoy
		}
		var sum float64
		var n int
		for i, a := range answers {
			ja := countJSONAnswer{Query: p.queries[i].Text, Estimate: a.est, Iterations: a.iterations}
			if hasTruth {
				tr := a.truth
				ja.True = &tr
				if re := relativeError(a.est, a.truth); !math.IsNaN(re) {
					ja.RelativeError = &re
					sum += re
					n++
				}
			}
			out.Queries = append(out.Queries, ja)
		}
		if n > 0 {
			m := sum / float64(n)
			out.MeanRelativeError = &m
		}
		enc := json.NewEncoder(o.Streams.Out)
		enc.SetEscapeHTML(false) // labels such as ">50K" as they are
		return enc.Encode(out)
	}
	if table.IsStdio(o.Output.Path) && o.Output.Format == "" {
		w := csv.NewWriter(o.Streams.Out)
		head := []string{"query", "estimate", "iterations"}
		if hasTruth {
			head = append(head, "true", "relative_error")
		}
		if err := w.Write(head); err != nil {
			return err
		}
		for i, a := range answers {
			row := []string{p.queries[i].Text, strconv.FormatFloat(a.est, 'f', 2, 64), strconv.Itoa(a.iterations)}
			if hasTruth {
				row = append(row, strconv.FormatFloat(a.truth, 'f', -1, 64), strconv.FormatFloat(relativeError(a.est, a.truth), 'f', 4, 64))
			}
			if err := w.Write(row); err != nil {
				return err
			}
		}
		w.Flush()
		return w.Error()
	}
	fields := []arrow.Field{
		{Name: "query", Type: arrow.BinaryTypes.String},
		{Name: "estimate", Type: arrow.PrimitiveTypes.Float64},
		{Name: "iterations", Type: arrow.PrimitiveTypes.Int64},
	}
	if hasTruth {
		fields = append(fields, arrow.Field{Name: "true", Type: arrow.PrimitiveTypes.Int64}, arrow.Field{Name: "relative_error", Type: arrow.PrimitiveTypes.Float64})
	}
	schema := arrow.NewSchema(fields, nil)
	meta := table.Meta{release.KeyStage: release.StageEstimate, release.KeyMechanism: rel.mech, release.KeyEstimator: release.EstimatorCounts}
	meta.SetInt(release.KeyRows, p.rows)
	if rel.l > 0 {
		meta.SetInt(release.KeyL, int64(rel.l))
	}
	if rel.mech == release.MechanismDiverted {
		meta[release.KeyDecoy] = o.Counts.Decoy
		meta.SetFloat(release.KeyIBUTol, o.Counts.Tol)
	}
	o.markInsecureSeed(meta)
	inputs := append([]string{o.Input, o.Counts.Queries, o.Counts.Groups}, o.Truth...)
	w, err := o.Streams.Create(o.Output, schema, meta, table.CSV, inputs)
	if err != nil {
		return err
	}
	defer w.Abort()
	rw := table.NewRowWriter(w, schema, 0)
	defer rw.Release()
	for i, a := range answers {
		rw.String(0, p.queries[i].Text)
		rw.Float64(1, a.est)
		rw.Int64(2, int64(a.iterations))
		if hasTruth {
			rw.Int64(3, int64(a.truth))
			rw.Float64(4, relativeError(a.est, a.truth))
		}
		if err := rw.EndRow(); err != nil {
			return err
		}
	}
	if err := rw.Flush(); err != nil {
		return err
	}
	return w.Commit()
}
