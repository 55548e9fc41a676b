package estimate

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/estimate"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// pramSummary is the --json summary, and the output table's metadata.
type pramSummary struct {
	Method          string   `json:"method"`
	Columns         []string `json:"columns"`
	Marginal        []string `json:"marginal,omitempty"`
	Epsilon         float64  `json:"epsilon"`
	Gamma           float64  `json:"gamma"`
	N               int64    `json:"n"`
	M               int64    `json:"m"`
	K               uint64   `json:"K"`
	Bound           float64  `json:"bound"`
	Releases        int      `json:"releases"`
	SampleReleases  int      `json:"sample_releases,omitempty"`
	EpsilonComposed *float64 `json:"epsilon_composed,omitempty"`
	// The domain and γ the estimator worked with, when they are not the
	// release's (--columns, or a re-perturbed sample).
	KEstimated     uint64   `json:"K_estimated,omitempty"`
	GammaEstimated *float64 `json:"gamma_estimated,omitempty"`
	MOpt           int      `json:"m_opt"`
	BoundAtMOpt    float64  `json:"bound_at_m_opt"`
	ObservedValues int      `json:"observed_values"`
	CI             string   `json:"ci"`
	Level          float64  `json:"level,omitempty"`
	Iterations     int      `json:"iterations,omitempty"`
	Converged      *bool    `json:"converged,omitempty"`
	LoglikGap      *float64 `json:"loglik_gap,omitempty"`
	L2Error        *float64 `json:"l2_error,omitempty"`
	L2Marginal     *float64 `json:"l2_error_marginal,omitempty"`
}

func (o *Options) pramSummaryOf(rel *pramRelease, res *pramResult) (pramSummary, error) {
	s := pramSummary{
		Method:         res.set.method.String(),
		Epsilon:        rel.epsilon,
		Gamma:          rel.gammaLast,
		N:              rel.n,
		M:              rel.m,
		K:              rel.dom.Size(),
		Bound:          res.bound,
		Releases:       rel.releases,
		ObservedValues: int(res.fit.observed()),
		CI:             res.set.ci,
	}
	for _, j := range res.fit.cols {
		s.Columns = append(s.Columns, rel.names[j])
	}
	if res.marginal {
		for _, j := range res.out.cols {
			s.Marginal = append(s.Marginal, rel.names[j])
		}
	}
	if rel.releases > 1 || rel.sampleReleases > 1 {
		s.EpsilonComposed = &rel.epsComposed
	}
	s.SampleReleases = rel.sampleReleases
	if res.fit.dom.Size() != rel.dom.Size() {
		s.KEstimated = res.fit.dom.Size()
	}
	if res.fit.gamma != rel.gammaLast {
		s.GammaEstimated = &res.fit.gamma
	}
	plan, err := estimate.NewPlan(int(rel.n), rel.dom.Size(), rel.epsilon)
	if err != nil {
		return s, err
	}
	s.MOpt, s.BoundAtMOpt = plan.M, plan.Bound
	if res.set.ci != "none" {
		s.Level = res.set.level
	}
	if res.em != nil {
		s.Iterations, s.Converged, s.LoglikGap = res.em.Iterations, &res.em.Converged, &res.emGap
	}
	if res.fit.truth != nil {
		s.L2Error = &res.fit.l2
		if res.marginal {
			s.L2Marginal = &res.out.l2
		}
	}
	return s, nil
}

// writePRAM prints the summary (--json) and/or writes the table.
func (o *Options) writePRAM(rel *pramRelease, res *pramResult) error {
	sum, err := o.pramSummaryOf(rel, res)
	if err != nil {
		return err
	}
	js, err := json.Marshal(sum)
	if err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	toFile := !table.IsStdio(o.Output.Path)
	if o.JSON {
		if _, err := fmt.Fprintf(o.Streams.Out, "%s\n", js); err != nil {
			return err
		}
		if !toFile {
			return nil
		}
	}
	meta, err := pramSummaryMeta(js)
	if err != nil {
		return err
	}
	return o.writePRAMTable(rel, res, meta)
}

// pramSummaryMeta turns the summary into metadata items (numbers as written by
// encoding/json, which parse back exactly; lists as JSON).
func pramSummaryMeta(js []byte) (table.Meta, error) {
	var kv map[string]json.RawMessage
	if err := json.Unmarshal(js, &kv); err != nil {
		return nil, err
	}
	meta := table.Meta{release.KeyStage: release.StageEstimate}
	for k, v := range kv {
		var s string
		if json.Unmarshal(v, &s) == nil {
			meta[k] = s
		} else {
			meta[k] = string(v)
		}
	}
	return meta, nil
}

// pramLayout is the layout of the output table's columns after the labels.
type pramLayout struct {
	labels        int // label columns
	cells         int // -1 unless the rest is aggregated
	est, obs, cnt int
	lo, hi        int // -1 with --ci none
	truth         int // -1 without --truth
}

func (o *Options) writePRAMTable(rel *pramRelease, res *pramResult, meta table.Meta) error {
	v := res.out
	K := v.dom.Size()
	aggregate := K > pramMaxListed
	var fields []arrow.Field
	for _, j := range v.cols {
		fields = append(fields, arrow.Field{Name: rel.names[j], Type: arrow.BinaryTypes.String})
	}
	add := func(name string, t arrow.DataType) int {
		fields = append(fields, arrow.Field{Name: name, Type: t})
		return len(fields) - 1
	}
	lay := pramLayout{labels: len(v.cols), cells: -1, lo: -1, hi: -1, truth: -1}
	if aggregate {
		lay.cells = add("cells", arrow.PrimitiveTypes.Int64)
	}
	lay.est = add("estimate", arrow.PrimitiveTypes.Float64)
	lay.obs = add("observed", arrow.PrimitiveTypes.Float64)
	lay.cnt = add("count", arrow.PrimitiveTypes.Int64)
	if v.hasCI() {
		lay.lo = add("ci_low", arrow.PrimitiveTypes.Float64)
		lay.hi = add("ci_high", arrow.PrimitiveTypes.Float64)
	}
	if v.truth != nil {
		lay.truth = add("truth", arrow.PrimitiveTypes.Float64)
	}
	for _, f := range fields[:lay.labels] {
		if slices.ContainsFunc(fields[lay.labels:], func(g arrow.Field) bool { return g.Name == f.Name }) {
			return fmt.Errorf("%s: column %q has the name of an output column; rename it before estimating", rel.name, f.Name)
		}
	}
	schema := arrow.NewSchema(fields, nil)
	o.markInsecureSeed(meta)
	inputs := o.pramInputs()
	// The estimate is a small table for people: CSV unless asked otherwise.
	w, err := o.Streams.Create(o.Output, schema, meta, table.CSV, inputs)
	if err != nil {
		return err
	}
	defer w.Abort()
	tw := &pramTableWriter{bb: table.NewRowWriter(w, schema, 0), rel: rel, v: v, lay: lay, m: float64(v.m()), x: make([]uint32, len(v.cols))}
	defer tw.bb.Release()
	if v.rules != nil {
		err = tw.stream(aggregate)
	} else {
		err = tw.vectors(aggregate)
	}
	if err != nil {
		return err
	}
	if err := tw.bb.Flush(); err != nil {
		return err
	}
	return w.Commit()
}

// stream writes a streamed estimate's rows: every value, or with
// aggregate the observed ones and a line for the others, from one more
// walk over the tally.
func (t *pramTableWriter) stream(aggregate bool) error {
	r := t.v.rules
	cells, err := r.tally.cells()
	if err != nil {
		return err
	}
	c, ok := cells.next()
	if aggregate {
		for ; ok; c, ok = cells.next() {
			if err := t.ruleRow(c.g, c.n); err != nil {
				return err
			}
		}
		if cells.err != nil {
			return cells.err
		}
		if u := t.v.dom.Size() - r.observed; u > 0 {
			return t.rest(u)
		}
		return nil
	}
	for g := range t.v.dom.Size() {
		var n int64
		if ok && c.g == g {
			n = c.n
			c, ok = cells.next()
		}
		if err := t.ruleRow(g, n); err != nil {
			return err
		}
	}
	return cells.err
}

// vectors writes an estimate held whole (estimatePRAM).
func (t *pramTableWriter) vectors(aggregate bool) error {
	v := t.v
	if aggregate {
		for _, g := range v.est.Index {
			if err := t.row(g, 1); err != nil {
				return err
			}
		}
		if u := v.est.Unlisted(); u > 0 {
			return t.rest(u)
		}
		return nil
	}
	for g := range v.dom.Size() {
		if err := t.row(g, 1); err != nil {
			return err
		}
	}
	return nil
}

// pramTableWriter writes the output rows in increasing order of the value g,
// walking the sparse vectors with cursors (each lookup amortised O(1)).
type pramTableWriter struct {
	bb  *table.RowWriter
	rel *pramRelease
	v   *pramView
	lay pramLayout
	m   float64
	x   []uint32

	pe, pc, pi, pt int // cursors into est, counts, interval, truth
}

// pramSeek advances *p along idx to g and reports whether g is listed there.
func pramSeek(idx []uint64, p *int, g uint64) bool {
	for *p < len(idx) && idx[*p] < g {
		*p++
	}
	return *p < len(idx) && idx[*p] == g
}

// labels writes the labels of value g.
func (t *pramTableWriter) labels(g uint64) error {
	if err := t.v.dom.Decode(g, t.x); err != nil {
		return err
	}
	for a, j := range t.v.cols {
		t.bb.String(a, t.rel.label(j, t.x[a]))
	}
	return nil
}

// ruleRow writes the row of value g, released n times, of a streamed
// estimate.
func (t *pramTableWriter) ruleRow(g uint64, n int64) error {
	if err := t.labels(g); err != nil {
		return err
	}
	r := t.v.rules
	var lo, hi float64
	if r.ci {
		lo, hi = r.lo.At(n), r.hi.At(n)
	}
	return t.emit(1, r.est.At(n), n, lo, hi, 0)
}

func (t *pramTableWriter) row(g, cells uint64) error {
	v := t.v
	if err := t.labels(g); err != nil {
		return err
	}
	est := v.est.Rest
	if pramSeek(v.est.Index, &t.pe, g) {
		est = v.est.Value[t.pe]
	}
	var cnt int64
	if pramSeek(v.counts.Index, &t.pc, g) {
		cnt = v.counts.Count[t.pc]
	}
	lo, hi := 0.0, 0.0
	if v.iv != nil {
		lo, hi = v.iv.RestLo, v.iv.RestHi
		if pramSeek(v.iv.Index, &t.pi, g) {
			lo, hi = v.iv.Lo[t.pi], v.iv.Hi[t.pi]
		}
	}
	truth := 0.0
	if v.truth != nil {
		truth = v.truth.Rest
		if pramSeek(v.truth.Index, &t.pt, g) {
			truth = v.truth.Value[t.pt]
		}
	}
	return t.emit(cells, est, cnt, lo, hi, truth)
}

// rest writes the line for the u values never observed: empty labels,
// each value's estimate and interval, and the mean truth over them.
func (t *pramTableWriter) rest(u uint64) error {
	v := t.v
	for a := range v.cols {
		t.bb.String(a, "")
	}
	if r := v.rules; r != nil {
		return t.emit(u, r.est.Rest, 0, r.lo.Rest, r.hi.Rest, 0)
	}
	var lo, hi, truth float64
	if v.iv != nil {
		lo, hi = v.iv.RestLo, v.iv.RestHi
	}
	if v.truth != nil {
		// The truth lists the values it holds; those not in est.Index are
		// among the u, and unlisted ones hold truth.Rest.
		var listed, inRest float64
		var nListed uint64
		for i, g := range v.truth.Index {
			if _, ok := slices.BinarySearch(v.est.Index, g); !ok {
				listed += v.truth.Value[i]
				nListed++
			}
		}
		inRest = listed + float64(u-nListed)*v.truth.Rest
		truth = inRest / float64(u)
	}
	return t.emit(u, v.est.Rest, 0, lo, hi, truth)
}

func (t *pramTableWriter) emit(cells uint64, est float64, cnt int64, lo, hi, truth float64) error {
	lay := t.lay
	if lay.cells >= 0 {
		t.bb.Int64(lay.cells, int64(cells)) // K ≤ 2^62
	}
	t.bb.Float64(lay.est, est)
	t.bb.Float64(lay.obs, float64(cnt)/t.m)
	t.bb.Int64(lay.cnt, cnt)
	if lay.lo >= 0 {
		t.bb.Float64(lay.lo, lo)
		t.bb.Float64(lay.hi, hi)
	}
	if lay.truth >= 0 {
		t.bb.Float64(lay.truth, truth)
	}
	return t.bb.EndRow()
}
