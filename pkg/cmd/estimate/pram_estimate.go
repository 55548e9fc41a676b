package estimate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/estimate"
	"github.com/pramkit/pramkit/pkg/pram"
)

// pramView is a distribution over some of the release's columns: the estimated
// domain (all columns, or --columns) or the printed marginal.
type pramView struct {
	cols   []int       // release column numbers, increasing
	dom    pram.Domain // Z_{k_j} over cols
	gamma  float64     // γ′ of the restricted release
	counts estimate.Counts
	est    estimate.Vector
	iv     *estimate.Interval // nil with --ci none
	truth  *estimate.Vector   // with --truth
	l2     float64
	rules  *pramRules // a streamed estimate: est, iv and counts are unset
}

// pramRules is a streamed estimate (estimatePRAMStream): the estimate and
// interval of a value are functions of its count, and the counts are
// walked from the tally.
type pramRules struct {
	tally    *pramTally
	m        int64
	observed uint64
	est      estimate.Rule
	lo, hi   estimate.Rule // with ci
	ci       bool
}

// observed returns the number of observed values of v.
func (v *pramView) observed() uint64 {
	if v.rules != nil {
		return v.rules.observed
	}
	return uint64(len(v.counts.Index))
}

// hasCI reports whether v has intervals.
func (v *pramView) hasCI() bool {
	if v.rules != nil {
		return v.rules.ci
	}
	return v.iv != nil
}

// m returns the number of released rows v counts.
func (v *pramView) m() int64 {
	if v.rules != nil {
		return v.rules.m
	}
	return v.counts.M()
}

// pramResult is the outcome of one estimation.
type pramResult struct {
	set      pramSettings
	fit      pramView  // the estimated domain
	out      *pramView // what is printed: &fit, or the marginal
	marginal bool
	bound    float64
	em       *estimate.EMResult // for mle
	emGap    float64            // for mle: pramEMGap of the estimate
}

// pramMaxEMGap is the log-likelihood gap below which an EM stopped by
// --max-iter is as good as the maximum: a likelihood ratio of e^0.001, far
// inside any confidence region (the 95% likelihood-ratio region reaches
// χ²₁(0.95)/2 ≈ 1.92).
const pramMaxEMGap = 1e-3

// pramEMGap is estimate.LoglikGap of the estimate x of the counts c.
func pramEMGap(c estimate.Counts, gamma float64, x estimate.Vector) float64 {
	h := estimate.HistogramOf(c)
	return estimate.LoglikGap(h, gamma, estimate.RuleOf(h, c, x))
}

// pramRestrict returns the view of c (over d, γ) kept to the columns keep
// (increasing positions among d's components), with the counts summed over
// the others.
func pramRestrict(c estimate.Counts, d pram.Domain, gamma float64, keep []int) (pramView, error) {
	ks := d.Alphabets()
	if len(keep) == len(ks) {
		return pramView{dom: d, gamma: gamma, counts: c}, nil
	}
	sub := make([]uint32, len(keep))
	for i, j := range keep {
		sub[i] = ks[j]
	}
	sd, err := pram.NewDomain(sub)
	if err != nil {
		return pramView{}, err
	}
	x := make([]uint32, len(ks))
	y := make([]uint32, len(keep))
	acc := map[uint64]int64{}
	for i, g := range c.Index {
		if err := d.Decode(g, x); err != nil {
			return pramView{}, err
		}
		for a, j := range keep {
			y[a] = x[j]
		}
		h, err := sd.Encode(y)
		if err != nil {
			return pramView{}, err
		}
		acc[h] += c.Count[i]
	}
	return pramView{dom: sd, gamma: pram.RestrictGamma(gamma, d.Size(), sd.Size()), counts: pramCountsFromMap(sd.Size(), acc)}, nil
}

// pramCountsFromMap returns the sorted Counts of a tally.
func pramCountsFromMap(K uint64, acc map[uint64]int64) estimate.Counts {
	c := estimate.Counts{K: K, Index: slices.Sorted(maps.Keys(acc))}
	c.Count = make([]int64, len(c.Index))
	for i, g := range c.Index {
		c.Count[i] = acc[g]
	}
	return c
}

// pramColumnNumbers maps column names to their positions among names, in
// increasing order; flag names the flag in errors.
func pramColumnNumbers(names, want []string, flag, file string) ([]int, error) {
	var out []int
	for _, w := range want {
		j := slices.Index(names, w)
		if j < 0 {
			return nil, cli.Usagef("%s %q: %s has no such column (its columns: %s)", flag, w, file, strings.Join(names, ", "))
		}
		if slices.Contains(out, j) {
			return nil, cli.Usagef("%s names %q twice", flag, w)
		}
		out = append(out, j)
	}
	slices.Sort(out)
	return out, nil
}

// pramShape is which columns are estimated (--columns) and which are
// printed (--marginal), as positions among the release's columns.
type pramShape struct {
	keep []int // estimated columns, increasing
	mk   []int // --marginal: positions among keep, increasing; nil for none
}

// pramShapeOf checks --columns and --marginal against the release before
// any row is read.
func (o *Options) pramShapeOf(rel *pramRelease) (pramShape, error) {
	var sh pramShape
	for j := range rel.names {
		sh.keep = append(sh.keep, j)
	}
	var err error
	if len(o.Columns) > 0 {
		if sh.keep, err = pramColumnNumbers(rel.names, o.Columns, "--columns", rel.name); err != nil {
			return sh, err
		}
	}
	names, err := o.pramOpts().marginalNames()
	if err != nil || len(names) == 0 {
		return sh, err
	}
	fitNames := make([]string, len(sh.keep))
	for i, j := range sh.keep {
		fitNames[i] = rel.names[j]
	}
	sh.mk, err = pramColumnNumbers(fitNames, names, "--marginal", rel.name)
	return sh, err
}

// estimatePRAM runs the estimator on the estimated domain, then marginalises
// and computes intervals and the bound.
func (o *Options) estimatePRAM(set pramSettings, rel *pramRelease, sh pramShape, counts estimate.Counts) (*pramResult, error) {
	res := &pramResult{set: set}
	keep := sh.keep
	fit, err := pramRestrict(counts, rel.dom, rel.gamma, keep)
	if err != nil {
		return nil, err
	}
	fit.cols = keep
	if !(fit.gamma > 1) {
		return nil, fmt.Errorf("--columns %s: these columns are %d of K = %d joint values, so little that the release says nothing about them alone (γ′ = 1 + (γ − 1)·K′/K rounds to 1); estimate with more columns", strings.Join(o.Columns, ","), fit.dom.Size(), rel.dom.Size())
	}
	if set.method == estimate.MethodMLE {
		em, err := estimate.MLE(fit.counts, fit.gamma, set.em)
		if err != nil {
			return nil, err
		}
		res.em, fit.est = &em, em.Estimate
		res.emGap = pramEMGap(fit.counts, fit.gamma, em.Estimate)
		if !em.Converged && res.emGap > pramMaxEMGap {
			o.pramWarnf("the MLE's EM stopped after --max-iter %d iterations, and its log-likelihood may still be %.3g below the maximum; the estimate may be off: raise --max-iter, or leave out --max-iter and --tol for the exact MLE", set.em.MaxIter, res.emGap)
		}
	} else if fit.est, err = estimate.Run(set.method, fit.counts, fit.gamma, set.em); err != nil {
		return nil, err
	}
	if res.bound, err = estimate.Bound(fit.dom.Size(), fit.gamma, int(fit.counts.M())); err != nil {
		return nil, err
	}
	res.fit = fit
	res.out = &res.fit

	if mk := sh.mk; mk != nil {
		mv, err := pramRestrict(fit.counts, fit.dom, fit.gamma, mk)
		if err != nil {
			return nil, err
		}
		for _, a := range mk {
			mv.cols = append(mv.cols, keep[a])
		}
		if mv.est, _, err = estimate.Marginal(fit.est, fit.dom, mk); err != nil {
			return nil, err
		}
		res.out, res.marginal = &mv, true
	}
	if res.out.iv, err = o.pramInterval(set, res.out); err != nil {
		return nil, err
	}
	return res, nil
}

// pramInterval computes the --ci intervals of v from its own counts: the
// release restricted to v's columns is γ′-diagonal, so the same methods
// apply.
func (o *Options) pramInterval(set pramSettings, v *pramView) (*estimate.Interval, error) {
	var iv estimate.Interval
	var err error
	switch {
	case set.ci == "none":
		return nil, nil
	case !(v.gamma > 1):
		// K/K′ so large that γ′ rounds to 1: the marginal release carries
		// no usable information, and [0, 1] is the honest interval.
		iv = estimate.Interval{Level: set.level, RestLo: 0, RestHi: 1}
	case set.ci == "wilson":
		iv, err = estimate.InverseInterval(v.counts, v.gamma, set.level)
	default:
		iv, err = estimate.BootstrapInterval(o.Seed.Rand(o.cmd), set.method, v.counts, v.gamma,
			estimate.BootstrapOptions{Replicates: set.reps, Level: set.level, EM: set.em})
	}
	if err != nil {
		return nil, err
	}
	return &iv, nil
}

// pramStreams reports whether the estimate is streamed
// (estimatePRAMStream): every value's estimate and interval are functions
// of its count, as for each method's closed form and Wilson's intervals
// over all the release's columns, and nothing needs every count at once
// (EM iterates over them, the bootstrap draws from them, --truth and
// --marginal add them up by value).
func (o *Options) pramStreams(set pramSettings, rel *pramRelease, sh pramShape) bool {
	return !pramHoldWhole && !set.em.Iterative && set.ci != "bootstrap" && len(o.Truth) == 0 && sh.mk == nil && len(sh.keep) == len(rel.names)
}

// pramHoldWhole makes every estimate hold its counts whole
// (estimatePRAM), for tests to compare the two.
var pramHoldWhole = false

// estimatePRAMStream estimates from the Histogram of the counts (one walk
// over the tally), in memory independent of the number of observed
// values: the same numbers as estimatePRAM, which holds every count and
// estimate (~60 bytes an observed value).
func (o *Options) estimatePRAMStream(set pramSettings, rel *pramRelease, sh pramShape, t *pramTally) (*pramResult, error) {
	cells, err := t.cells()
	if err != nil {
		return nil, err
	}
	var hb estimate.HistogramBuilder
	for c, ok := cells.next(); ok; c, ok = cells.next() {
		hb.Add(c.n)
	}
	if cells.err != nil {
		return nil, cells.err
	}
	h, err := hb.Histogram(t.K)
	if err != nil {
		return nil, err
	}
	r := &pramRules{tally: t, m: h.M(), observed: h.Observed()}
	res := &pramResult{set: set}
	gamma := rel.gamma
	switch set.method {
	case estimate.MethodMLE:
		rule, ll, err := estimate.MLERule(h, gamma)
		if err != nil {
			return nil, err
		}
		r.est = rule
		res.em = &estimate.EMResult{Converged: true, LogLikelihood: []float64{ll}}
		res.emGap = estimate.LoglikGap(h, gamma, rule)
	case estimate.MethodProjected:
		r.est, err = estimate.ProjectedRule(h, gamma)
	default:
		r.est, err = estimate.InverseRule(h, gamma)
	}
	if err != nil {
		return nil, err
	}
	if set.ci == "wilson" {
		if r.lo, r.hi, err = estimate.WilsonRule(h, gamma, set.level); err != nil {
			return nil, err
		}
		r.ci = true
	}
	if res.bound, err = estimate.Bound(rel.dom.Size(), gamma, int(r.m)); err != nil {
		return nil, err
	}
	res.fit = pramView{cols: sh.keep, dom: rel.dom, gamma: gamma, rules: r}
	res.out = &res.fit
	return res, nil
}
