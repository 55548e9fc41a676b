package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/pramkit/pramkit/internal/adultquery"

	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/estimate"
)

// jointColumns are the curators' columns of the release experiments
// (Alice holds education, Bob income): K = 16 · 2 = 32.
var jointColumns = []string{"education", "income"}

// epsilons of error_vs_epsilon.
var epsilons = []float64{0.25, 0.5, 1, 2, 4}

func f6(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }

// pointColumns are the CSV columns of an errorPoint, each prefixed.
func pointColumns(prefix string) []string {
	cols := []string{prefix + "m", prefix + "gamma", prefix + "bound", prefix + "releases"}
	for _, m := range methods {
		cols = append(cols, prefix+m.String()+"_mean", prefix+m.String()+"_se")
	}
	return cols
}

func pointCells(pt errorPoint) []string {
	cells := []string{strconv.Itoa(pt.M), f6(pt.Gamma), f6(pt.Bound), strconv.Itoa(pt.Runs)}
	for i := range methods {
		cells = append(cells, f6(pt.Mean[i]), f6(pt.SE[i]))
	}
	return cells
}

// errorVsM draws error_vs_m: mean ℓ2 error against m at ε = 1.
func errorVsM(a *adult, o options, sum io.Writer) (string, error) {
	const eps = 1.0
	pop, err := newPopulation(a, jointColumns)
	if err != nil {
		return "", err
	}
	n, K := a.n, pop.domain.Size()
	plan, err := estimate.NewPlan(n, K, eps)
	if err != nil {
		return "", err
	}
	grid := sizeGrid(plan.MStar, n, o.perOctave)
	pts := make([]errorPoint, len(grid))
	for i, m := range grid {
		if pts[i], err = measure(pop, m, eps, o.runs, o.workers, o.seed, fmt.Sprintf("error_vs_m/m=%d", m)); err != nil {
			return "", err
		}
	}

	var rows [][]string
	for _, pt := range pts {
		rows = append(rows, append([]string{strconv.Itoa(n), strconv.FormatUint(K, 10), f6(eps), f6(float64(pt.M) / plan.MStar)}, pointCells(pt)...))
	}
	if err := writeCSV(filepath.Join(o.out, "error_vs_m.csv"), append([]string{"n", "K", "epsilon", "m_over_mstar"}, pointColumns("")...), rows); err != nil {
		return "", err
	}

	if err := drawFigure(o.out, figures[0]); err != nil {
		return "", err
	}

	// Summary: where each estimator's error is least, and m* against m = n.
	last := pts[len(pts)-1]
	atStar := slices.IndexFunc(pts, func(pt errorPoint) bool { return pt.M == plan.M })
	fmt.Fprintf(sum, "error_vs_m (ε = 1, K = %d, %d sizes × %d releases): m* = %d (γ = %.2f, bound %.3f).", K, len(pts), o.runs, plan.M, plan.Gamma, plan.Bound)
	under := true
	for i, method := range methods {
		best := 0
		for k, pt := range pts {
			if pt.Mean[i] < pts[best].Mean[i] {
				best = k
			}
			under = under && pt.Mean[i] < pt.Bound
		}
		fmt.Fprintf(sum, " %s: least %.4f at m = %d (%.2f·m*)", method, pts[best].Mean[i], pts[best].M, float64(pts[best].M)/plan.MStar)
		if atStar >= 0 {
			fmt.Fprintf(sum, ", %.4f at m*", pts[atStar].Mean[i])
		}
		fmt.Fprintf(sum, ", %.4f at m = n (%.2f× the error at m*).", last.Mean[i], last.Mean[i]/pts[max(atStar, 0)].Mean[i])
	}
	fmt.Fprintf(sum, " Every mean under the bound: %v.\n", under)
	return fmt.Sprintf("error_vs_m: %d sizes × %d releases", len(pts), o.runs), nil
}

// errorVsEpsilon draws error_vs_epsilon: each estimator at m = m*(ε) and at
// m = n (PRAM alone), with the bound at m*.
func errorVsEpsilon(a *adult, o options, sum io.Writer) (string, error) {
	pop, err := newPopulation(a, jointColumns)
	if err != nil {
		return "", err
	}
	n, K := a.n, pop.domain.Size()
	star := make([]errorPoint, len(epsilons))
	alone := make([]errorPoint, len(epsilons))
	plans := make([]estimate.Plan, len(epsilons))
	for i, eps := range epsilons {
		if plans[i], err = estimate.NewPlan(n, K, eps); err != nil {
			return "", err
		}
		if star[i], err = measure(pop, plans[i].M, eps, o.runs, o.workers, o.seed, fmt.Sprintf("error_vs_epsilon/eps=%g/m=%d", eps, plans[i].M)); err != nil {
			return "", err
		}
		alone[i] = star[i]
		if plans[i].M < n {
			if alone[i], err = measure(pop, n, eps, o.runs, o.workers, o.seed, fmt.Sprintf("error_vs_epsilon/eps=%g/m=%d", eps, n)); err != nil {
				return "", err
			}
		}
	}

	var rows [][]string
	for i, eps := range epsilons {
		row := append([]string{strconv.Itoa(n), strconv.FormatUint(K, 10), f6(eps), f6(plans[i].MStar)}, pointCells(star[i])...)
		rows = append(rows, append(row, pointCells(alone[i])...))
	}
	header := append([]string{"n", "K", "epsilon", "m_star_unrounded"}, pointColumns("")...)
	if err := writeCSV(filepath.Join(o.out, "error_vs_epsilon.csv"), append(header, pointColumns("n_")...), rows); err != nil {
		return "", err
	}

	if err := drawFigure(o.out, figures[1]); err != nil {
		return "", err
	}

	fmt.Fprintf(sum, "error_vs_epsilon (%d releases each): mle mean ℓ2 at m*(ε) vs m = n:", o.runs)
	mle := slices.Index(methods, estimate.MethodMLE)
	for i, eps := range epsilons {
		fmt.Fprintf(sum, " ε=%g m*=%d %.4f vs %.4f (bound %.3f);", eps, plans[i].M, star[i].Mean[mle], alone[i].Mean[mle], star[i].Bound)
	}
	fmt.Fprintln(sum)
	return fmt.Sprintf("error_vs_epsilon: %d values of ε × %d releases", len(epsilons), o.runs), nil
}

// anonymizeErrorVsL draws anonymize_error_vs_l: mean relative error of
// count queries against ℓ′, A′ beside Anatomy and global randomization.
func anonymizeErrorVsL(a *adult, o options, sum io.Writer) (string, error) {
	t := newCountTable(a)
	fc, err := anonymize.Counts(t.S, t.V)
	if err != nil {
		return "", err
	}
	lmax := anonymize.LargestFeasibleL(fc)
	if lmax < 2 {
		return "", fmt.Errorf("%s allows no ℓ′ ≥ 2", sensitiveAttr)
	}
	var ls []int
	for l := 2; l <= lmax; l++ {
		ls = append(ls, l)
	}
	preds := adultquery.RandomPredicates(t, o.predicates, stream(o.seed, "anonymize/predicates"))
	pts, err := measureCounts(t, preds, ls, o.releases, o.workers, o.seed)
	if err != nil {
		return "", err
	}

	var rows [][]string
	for _, pt := range pts {
		for rg := range numRanges {
			for sr := range numSeries {
				e := pt.Err[rg][sr]
				rows = append(rows, []string{strconv.Itoa(pt.L), rangeKeys[rg], seriesKeys[sr], f6(e.mean()), strconv.Itoa(e.queries), strconv.Itoa(pt.Releases), strconv.Itoa(t.V), strconv.Itoa(len(preds))})
			}
		}
	}
	if err := writeCSV(filepath.Join(o.out, "anonymize_error_vs_l.csv"), []string{"l", "counts", "mechanism", "mean_relative_error", "queries", "releases", "values", "predicates"}, rows); err != nil {
		return "", err
	}

	if err := drawFigure(o.out, figures[2]); err != nil {
		return "", err
	}

	fmt.Fprintf(sum, "anonymize_error_vs_l (%s sensitive, %d predicates × %d values, %d publications per ℓ′ and mechanism), mean relative error:\n", sensitiveAttr, len(preds), t.V, o.releases)
	for _, pt := range pts {
		fmt.Fprintf(sum, "  ℓ′ = %d:", pt.L)
		for rg := range numRanges {
			fmt.Fprintf(sum, " %s (%d queries):", rangeNames[rg], pt.Err[rg][seriesExact].queries)
			for sr := range numSeries {
				fmt.Fprintf(sum, " %s %.3f", seriesKeys[sr], pt.Err[rg][sr].mean())
			}
			fmt.Fprint(sum, ";")
		}
		fmt.Fprintln(sum)
	}
	return fmt.Sprintf("anonymize_error_vs_l: ℓ′ = %d…%d × %d publication%s, %d predicates", ls[0], lmax, o.releases, plural(o.releases), len(preds)), nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
