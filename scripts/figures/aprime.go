package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/pramkit/pramkit/internal/adultquery"

	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/countquery"
)

// predicateAttrs are the non-sensitive attributes of the random predicates,
// as in pkg/countquery's and pkg/cmd/estimate's Adult tests (age and hours
// by the codebook's buckets, which are the tests' buckets too).
var predicateAttrs = []string{"age", "workclass", "education", "marital-status", "relationship", "race", "sex", "hours-per-week", "income"}

// sensitiveAttr is the sensitive attribute (paper §9: occupation).
const sensitiveAttr = "occupation"

// countTable is Adult as the count-query experiment sees it: the sensitive
// column S (V values, "?" one of them) and the predicate attributes NSA in
// predicateAttrs order.
type countTable = adultquery.Table

func newCountTable(a *adult) *countTable {
	s, c := a.column(sensitiveAttr)
	t := &countTable{N: a.n, S: s, V: c.K()}
	for _, name := range predicateAttrs {
		t.NSA = append(t.NSA, a.cols[name])
	}
	return t
}

// Series of anonymize_error_vs_l, in legend order: A′ with exact a01 for
// each decoy grouping × stopping rule of the Bayesian update, then the
// baselines.
const (
	seriesExact        = iota // Anatomy's grouping, the paper's 1 % rule (anonymize's and estimate's behaviour before issue 12)
	seriesAnatomyConv         // Anatomy's grouping, converged
	seriesRandom              // random grouping, 1 % rule
	seriesRandomConv          // random grouping, converged
	seriesRandomDisc          // random grouping, discrepancy principle (estimate's default on such releases)
	seriesRandomShrink        // random grouping, James–Stein shrinkage toward independence (--ibu-stop shrink)
	seriesAnatomy
	seriesGlobal
	numSeries
)

var seriesNames = [numSeries]string{
	"A′, Anatomy's groups, 1 % rule", "A′, Anatomy's groups, converged",
	"A′, random groups, 1 % rule", "A′, random groups, converged", "A′, random groups, discrepancy",
	"A′, random groups, shrink",
	"Anatomy (ℓ = ℓ′)", "global randomization (retention 1/ℓ′)",
}

// seriesKeys name the series in the CSV.
var seriesKeys = [numSeries]string{"aprime_exact", "aprime_exact_converged", "aprime_random", "aprime_random_converged", "aprime_random_discrepancy", "aprime_random_shrink", "anatomy", "global"}

// seriesStyle is each series' colour and glyph (a grouping's two rules
// share one, the converged one dashed; the discrepancy rule has its own).
var seriesStyle = [numSeries]int{0, 0, 2, 2, 4, 5, 1, 3}

func seriesDashed(sr int) bool { return sr == seriesAnatomyConv || sr == seriesRandomConv }

// publishStream publishes column s (values < v) at ℓ′ = l with grouping g
// through anonymize's two-pass Plan, as anonymize does: the published value
// index of every row, anonymize.NotPublished for the N mod ℓ′ dropped.
func publishStream(s []uint32, v, l int, g anonymize.Grouping, r *rand.Rand) ([]uint32, error) {
	p, err := anonymize.NewPlan([]int{v}, l, g)
	if err != nil {
		return nil, err
	}
	val := make([]uint32, 1)
	for _, x := range s {
		val[0] = x
		if err := p.Count(val, r); err != nil {
			return nil, err
		}
	}
	if err := p.Finish(r); err != nil {
		return nil, err
	}
	pub := make([]uint32, len(s))
	out := make([]uint32, 1)
	for row, x := range s {
		val[0] = x
		ok, err := p.Divert(val, out, r)
		if err != nil {
			return nil, err
		}
		pub[row] = anonymize.NotPublished
		if ok {
			pub[row] = out[0]
		}
	}
	return pub, p.Done()
}

// relErr accumulates |est − truth|/truth over queries.
type relErr struct {
	sum     float64
	queries int
}

func (e *relErr) add(est, truth float64) { e.sum += math.Abs(est-truth) / truth; e.queries++ }
func (e relErr) mean() float64           { return e.sum / float64(e.queries) }

// Count ranges of anonymize_error_vs_l.
const (
	rangeLarge = iota // selectivity 2–5 % of the published rows
	rangeSmall        // true count 1–10
	numRanges
)

var rangeNames = [numRanges]string{"selectivity 2–5 %", "true count 1–10"}
var rangeKeys = [numRanges]string{"large", "small"}

// bounds returns the true-count range of r for a table of n published rows.
func bounds(r int, n float64) (lo, hi float64) {
	if r == rangeLarge {
		return 0.02 * n, 0.05 * n
	}
	return 1, 10
}

// countRelease publishes the sensitive column once per mechanism at ℓ′ = l
// and answers every query of both ranges: the error sums [range][series].
// A′ is published with each decoy grouping (anonymize --grouping) and
// estimated with the exact a01 by the iterative Bayesian update stopped by
// the paper's 1 % rule (countquery.DefaultTolerance) and run to convergence
// (countquery.PredicateMLE, the converged update's limit), as estimate
// --ibu-stop paper|converged, and on random groups also stopped by the
// discrepancy principle (countquery.Options.Discrepancy), as --ibu-stop
// discrepancy (auto on such releases), and by James–Stein shrinkage of
// the predicate's converged estimates toward independence
// (countquery.ShrinkPredicate, --ibu-stop shrink);
// Anatomy with Xiao and Tao's estimator; global randomization, with
// keep = (V/ℓ′ − 1)/(V − 1) so that a row retains its value with
// probability 1/ℓ′ as in §9.4, with the unbiased inverse.
func countRelease(t *countTable, preds []adultquery.Predicate, l int, seed uint64, name string) (res [numRanges][numSeries]relErr, err error) {
	paper := countquery.Options{ExactDecoy: true}
	disc := countquery.Options{ExactDecoy: true, Tolerance: countquery.ConvergedTolerance, MaxIter: countquery.ConvergedMaxIter, Discrepancy: true}
	for _, g := range []struct {
		grouping                  anonymize.Grouping
		stream                    string
		seriesP, seriesC, seriesD int // seriesD < 0: no discrepancy curve
	}{
		{anonymize.GroupingAnatomy, "/aprime", seriesExact, seriesAnatomyConv, -1},
		{anonymize.GroupingRandom, "/aprime-random", seriesRandom, seriesRandomConv, seriesRandomDisc},
	} {
		pub, err := publishStream(t.S, t.V, l, g.grouping, stream(seed, name+g.stream))
		if err != nil {
			return res, fmt.Errorf("countRelease: %w", err)
		}
		n := float64(len(pub) - anonymize.DropCount(len(pub), l))
		var shrink shrinkCache
		if g.seriesD >= 0 {
			shrink = newShrinkCache(pub, t.V, l)
		}
		for rg := range numRanges {
			lo, hi := bounds(rg, n)
			for _, q := range adultquery.Observe(t, preds, pub, lo, hi) {
				e, err := countquery.Predicate(q.Y, l, paper)
				if err != nil {
					return res, fmt.Errorf("countRelease: %w", err)
				}
				res[rg][g.seriesP].add(e.Count, q.Truth)
				// The converged update's limit, in closed form (as fast
				// for thousands of queries; countquery tests they agree).
				mle, err := countquery.PredicateMLE(q.Y, l, true)
				if err != nil {
					return res, fmt.Errorf("countRelease: %w", err)
				}
				res[rg][g.seriesC].add(mle, q.Truth)
				if g.seriesD >= 0 {
					d, err := countquery.Predicate(q.Y, l, disc)
					if err != nil {
						return res, fmt.Errorf("countRelease: %w", err)
					}
					res[rg][g.seriesD].add(d.Count, q.Truth)
					est, err := shrink.estimate(preds, q.Pred)
					if err != nil {
						return res, fmt.Errorf("countRelease: %w", err)
					}
					res[rg][seriesRandomShrink].add(est[q.S], q.Truth)
				}
			}
		}
	}

	// Anatomy: est = Σ_g m_g · c_g(s)/n_g over the published groups.
	an, err := anonymize.Anatomize(t.S, t.V, l, stream(seed, name+"/anatomy"))
	if err != nil {
		return res, fmt.Errorf("countRelease: %w", err)
	}
	groups := len(an.ST) / an.L
	sizes := make([]int64, groups)
	perValue := make([][]int64, t.V) // [s][g] = c_g(s)
	for s := range perValue {
		perValue[s] = make([]int64, groups)
	}
	for _, e := range an.ST {
		sizes[e.Group] += int64(e.Count)
		perValue[e.Value][e.Group] += int64(e.Count)
	}
	kept := slices.Clone(t.S) // the truth over the rows Anatomy kept
	for _, row := range an.Dropped {
		kept[row] = anonymize.NotPublished
	}
	n := float64(len(an.Order))
	matches := make([]int64, groups)
	for rg := range numRanges {
		lo, hi := bounds(rg, n)
		last := -1
		for _, q := range adultquery.Observe(t, preds, kept, lo, hi) {
			if q.Pred != last {
				clear(matches)
				for _, row := range preds[q.Pred].Rows {
					if g := an.GroupOf[row]; g != anonymize.NotPublished {
						matches[g]++
					}
				}
				last = q.Pred
			}
			est, err := countquery.AnatomyCount(matches, perValue[q.S], sizes)
			if err != nil {
				return res, fmt.Errorf("countRelease: %w", err)
			}
			res[rg][seriesAnatomy].add(est, q.Truth)
		}
	}

	// Global randomization (mechanism A), every row published.
	keep := (float64(t.V)/float64(l) - 1) / float64(t.V-1)
	pub, err := anonymize.Randomize(t.S, t.V, keep, stream(seed, name+"/global"))
	if err != nil {
		return res, fmt.Errorf("countRelease: %w", err)
	}
	for rg := range numRanges {
		lo, hi := bounds(rg, float64(t.N))
		for _, q := range adultquery.Observe(t, preds, pub, lo, hi) {
			est, err := countquery.GlobalCount(int64(q.Y[3]), int64(q.Y[2]+q.Y[3]), t.V, keep)
			if err != nil {
				return res, fmt.Errorf("countRelease: %w", err)
			}
			res[rg][seriesGlobal].add(est, q.Truth)
		}
	}
	return res, nil
}

// shrinkCache answers every value of a predicate at once, as estimate
// --ibu-stop shrink does: ShrinkPredicate from the published counts of
// each value among the predicate's rows and in the whole release.
type shrinkCache struct {
	pub  []uint32
	l    int
	f    []float64 // f′_v over the published rows
	yP   []float64
	last int
	est  []float64
}

func newShrinkCache(pub []uint32, v, l int) shrinkCache {
	c := shrinkCache{pub: pub, l: l, f: make([]float64, v), yP: make([]float64, v), last: -1}
	for _, x := range pub {
		if x != anonymize.NotPublished {
			c.f[x]++
		}
	}
	return c
}

// estimate returns the shrunk estimates of predicate k for every value.
func (c *shrinkCache) estimate(preds []adultquery.Predicate, k int) ([]float64, error) {
	if k == c.last {
		return c.est, nil
	}
	clear(c.yP)
	for _, row := range preds[k].Rows {
		if x := c.pub[row]; x != anonymize.NotPublished {
			c.yP[x]++
		}
	}
	est, err := countquery.ShrinkPredicate(c.yP, c.f, c.l)
	if err != nil {
		return nil, err
	}
	c.last, c.est = k, est
	return est, nil
}

// countPoint is anonymize_error_vs_l at one ℓ′: the error per range and
// series, summed over the releases.
type countPoint struct {
	L        int
	Releases int
	Err      [numRanges][numSeries]relErr
}

// measureCounts runs releases publications per ℓ′ in ls, spread over
// workers; publication k at ℓ′ draws from stream(seed, "anonymize/l=…/release=k/…").
func measureCounts(t *countTable, preds []adultquery.Predicate, ls []int, releases, workers int, seed uint64) ([]countPoint, error) {
	raw := make([][numRanges][numSeries]relErr, len(ls)*releases)
	err := parallel(len(raw), workers, func(_, k int) error {
		l := ls[k/releases]
		var err error
		raw[k], err = countRelease(t, preds, l, seed, fmt.Sprintf("anonymize/l=%d/release=%d", l, k%releases))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("measureCounts: %w", err)
	}
	out := make([]countPoint, len(ls))
	for i, l := range ls {
		out[i] = countPoint{L: l, Releases: releases}
		for k := range releases {
			for rg := range numRanges {
				for sr := range numSeries {
					e := raw[i*releases+k][rg][sr]
					out[i].Err[rg][sr].sum += e.sum
					out[i].Err[rg][sr].queries += e.queries
				}
			}
		}
	}
	return out, nil
}
