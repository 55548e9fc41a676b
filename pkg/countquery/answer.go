package countquery

import (
	"errors"
	"fmt"

	"github.com/pramkit/pramkit/pkg/release"
)

// Answer is the answer to one query.
type Answer struct {
	// Estimate is the estimated count: f′_s for a lone sensitive value
	// (Theorem 3), x_3 (the all-true state) of the Bayesian update for P and
	// sensitive values (Eq. 12 / Eq. 13), Anatomy's or mechanism A's
	// estimator for those releases, and the exact count for a query on
	// non-sensitive columns only.
	Estimate float64
	// Iterations is how many update steps ran (0 for direct counts), and
	// Converged false when the update stopped at Options.MaxIter.
	Iterations int
	Converged  bool
	Truth      float64 // the original table's count, after ScanTruth
}

// Answers answers every query, in input order, from the counts that
// ScanRelease (and ScanTruth) gathered. opt is the Bayesian update's
// stopping rule and decoy model (A′ only).
func (p *Plan) Answers(opt Options) ([]Answer, error) {
	if p.rows == 0 {
		return nil, errors.New("countquery: Answers needs the counts of ScanRelease")
	}
	rel := p.rel
	shrink := opt.Shrink && rel.Mechanism == release.MechanismDiverted
	switch {
	case shrink && !p.allValues:
		return nil, errors.New("countquery: Options.Shrink needs the counts of every value: make the plan with NewPlanFor and Shrink")
	case shrink && (!opt.ExactDecoy || opt.UpdateFrequencies):
		return nil, errors.New("countquery: Options.Shrink works with the exact a01 only (ExactDecoy, no UpdateFrequencies)")
	}
	shrunk := map[*group][]float64{} // ShrinkPredicate's estimates by local value
	out := make([]Answer, len(p.queries))
	for i := range p.queries {
		g := p.groups[p.qGroup[i]]
		a := &out[i]
		a.Converged = true
		if g.truthP != nil {
			a.Truth = float64(g.truthP[p.qTuple[i]])
		}
		w := len(g.sens)
		if w == 0 { // non-sensitive columns only: published unchanged
			a.Estimate = float64(g.nP)
			continue
		}
		var err error
		switch rel.Mechanism {
		case release.MechanismAnatomy:
			if g.anat != nil {
				a.Estimate = g.anat[p.qTuple[i]]
			}
		case release.MechanismGlobal:
			a.Estimate, err = p.globalEstimate(g, i, rel)
		default:
			if len(g.pred) == 0 && w == 1 {
				a.Estimate = float64(g.all.counts[p.qTuple[i]]) // f′_s, Theorem 3
				continue
			}
			if shrink && w == 1 {
				x, ok := shrunk[g]
				if !ok {
					if x, err = p.shrink(g); err != nil {
						return nil, fmt.Errorf("%s: %v", p.queries[i].Where(p.file), err)
					}
					shrunk[g] = x
				}
				a.Estimate = x[p.qLocal[i][0]]
				continue
			}
			y := p.states(g, i)
			var e Estimate
			if w == 1 {
				e, err = Predicate([4]float64(y), rel.L, opt)
			} else {
				e, err = PredicateMulti(y, rel.L, opt)
			}
			a.Estimate, a.Iterations, a.Converged = e.Count, e.Iterations, e.Converged
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", p.queries[i].Where(p.file), err)
		}
	}
	return out, nil
}

// shrink runs ShrinkPredicate on the counts of group g (one sensitive
// column, every value numbered: NewPlanFor) and returns its estimates by
// local value number (index 0, the values not numbered, is unused).
func (p *Plan) shrink(g *group) ([]float64, error) {
	if g.counts[0] != 0 || g.all.counts[0] != 0 {
		return nil, fmt.Errorf("countquery: %d rows hold a value of %s outside its codebook", g.all.counts[0], p.slots[g.sens[0]].col)
	}
	yP := make([]float64, g.size-1)
	f := make([]float64, g.size-1)
	for t := 1; t < g.size; t++ {
		yP[t-1], f[t-1] = float64(g.counts[t]), float64(g.all.counts[t])
	}
	x, err := ShrinkPredicate(yP, f, p.rel.L)
	if err != nil {
		return nil, err
	}
	return append([]float64{0}, x...), nil
}

// Rows is the number of rows of the release, after ScanRelease.
func (p *Plan) Rows() int64 { return p.rows }

// hits splits combination t into the local value numbers of the group's
// sensitive columns and reports, as bits (the first column highest),
// which of them equal query i's.
func (p *Plan) hits(g *group, i, t int) int {
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
// (State order: P bit highest, then one bit per sensitive value).
func (p *Plan) states(g *group, i int) []float64 {
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
func (p *Plan) globalEstimate(g *group, i int, rel *Release) (float64, error) {
	w := len(g.sens)
	z := make([]float64, 1<<w)
	for t := range g.size {
		z[p.hits(g, i, t)] += float64(g.counts[t])
	}
	v := make([]int, w)
	keep := make([]float64, w)
	for k, s := range g.sens {
		v[k] = rel.Columns[p.slots[s].sens].K()
		var err error
		if keep[k], err = rel.keep(p.slots[s].sens); err != nil {
			return 0, err
		}
	}
	return GlobalCountMulti(z, v, keep)
}

// keep is mechanism A's keep probability p of sensitive column k,
// refusing p = 0.
func (rel *Release) keep(k int) (float64, error) {
	if rel.Keep[k] == 0 {
		return 0, fmt.Errorf("%s was published with keep probability p = 0: its values carry no information to estimate from", rel.Sensitive[k])
	}
	return rel.Keep[k], nil
}
