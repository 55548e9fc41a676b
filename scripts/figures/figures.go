package main

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/pramkit/pramkit/internal/adultquery"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/estimate"
	"github.com/pramkit/pramkit/pkg/pram"
)

// jointColumns are the curators' columns of the release experiments
// (Alice holds education, Bob income): K = 16 · 2 = 32.
var jointColumns = []string{"education", "income"}

// epsilons of error_vs_epsilon.
var epsilons = []float64{0.25, 0.5, 1, 2, 4}

// Figure sizes.
const (
	figW = 16 * vg.Centimeter
	figH = 11 * vg.Centimeter
)

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
		rows = append(rows, append([]string{f6(eps), f6(float64(pt.M) / plan.MStar)}, pointCells(pt)...))
	}
	if err := writeCSV(filepath.Join(o.out, "error_vs_m.csv"), append([]string{"epsilon", "m_over_mstar"}, pointColumns("")...), rows); err != nil {
		return "", err
	}

	p := newPlot(fmt.Sprintf("Sampling + PRAM on Adult, education × income (K = %d, n = %d), ε = 1\nmean over %d releases per m, bars ±1 standard error; both axes log scale", K, n, o.runs),
		"sample size m (log scale)", "mean ℓ2 error")
	logAxis(&p.X)
	logAxis(&p.Y)
	lo, hi := math.Inf(1), 0.0
	for i, method := range methods {
		xys := make(plotter.XYs, len(pts))
		se := make([]float64, len(pts))
		for k, pt := range pts {
			xys[k] = plotter.XY{X: float64(pt.M), Y: pt.Mean[i]}
			se[k] = pt.SE[i]
			lo = min(lo, pt.Mean[i]-pt.SE[i])
		}
		if err := addSeries(p, method.String(), i, xys, se, false); err != nil {
			return "", err
		}
	}
	// The bound as a smooth curve over m, γ tied to ε by Theorem III.2.
	var bound plotter.XYs
	for k := range 121 {
		m := int(math.Round(math.Exp(math.Log(float64(grid[0])) + float64(k)/120*math.Log(float64(n)/float64(grid[0])))))
		m = min(max(m, 1), n)
		g, err := pram.GammaFromEpsilon(n, m, eps)
		if err != nil {
			return "", err
		}
		b, err := estimate.Bound(K, g, m)
		if err != nil {
			return "", err
		}
		bound = append(bound, plotter.XY{X: float64(m), Y: b})
		hi = max(hi, b)
	}
	if err := addLine(p, "Theorem III.4 bound (inverse)", bound, black, []vg.Length{vg.Points(6), vg.Points(3)}); err != nil {
		return "", err
	}
	p.Y.Min, p.Y.Max = lo*0.85, hi*2.2 // headroom for the legend
	mark := plotter.XYs{{X: plan.MStar, Y: p.Y.Min}, {X: plan.MStar, Y: p.Y.Max}}
	if err := addLine(p, fmt.Sprintf("m* = %d, the bound's minimum", plan.M), mark, grey, []vg.Length{vg.Points(2), vg.Points(2)}); err != nil {
		return "", err
	}
	last := pts[len(pts)-1]
	labels, err := plotter.NewLabels(plotter.XYLabels{
		XYs:    plotter.XYs{{X: float64(last.M), Y: last.Mean[0] * 1.1}},
		Labels: []string{"m = n:\nPRAM alone"},
	})
	if err != nil {
		return "", err
	}
	labels.TextStyle[0].XAlign = -1 // right-aligned: the point sits at the axis's end
	labels.TextStyle[0].Font.Size = vg.Points(8)
	p.Add(labels)
	p.X.Min, p.X.Max = float64(grid[0])/1.15, float64(n)*1.15
	p.Legend.Top, p.Legend.Left = true, false
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), -vg.Points(8)
	if err := savePNG(filepath.Join(o.out, "error_vs_m.png"), figW, figH, "", p); err != nil {
		return "", err
	}

	// Summary: where each estimator's error is least, and m* against m = n.
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
	return fmt.Sprintf("error_vs_m.png: %d sizes × %d releases", len(pts), o.runs), nil
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
		row := append([]string{f6(eps), f6(plans[i].MStar)}, pointCells(star[i])...)
		rows = append(rows, append(row, pointCells(alone[i])...))
	}
	header := append([]string{"epsilon", "m_star_unrounded"}, pointColumns("")...)
	if err := writeCSV(filepath.Join(o.out, "error_vs_epsilon.csv"), append(header, pointColumns("n_")...), rows); err != nil {
		return "", err
	}

	clamped := ""
	if last := len(epsilons) - 1; plans[last].M == n {
		clamped = fmt.Sprintf("; m*(%g) ≥ n, clamped to n", epsilons[last])
	}
	p := newPlot(fmt.Sprintf("Adult education × income (K = %d, n = %d): error at the planned m*(ε)\nand with PRAM alone (m = n), mean over %d releases each%s; log–log", K, n, o.runs, clamped),
		"privacy ε (log scale)", "mean ℓ2 error")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = constTicks(epsilons...)
	logAxis(&p.Y)
	for i, method := range methods {
		xs, xn := make(plotter.XYs, len(epsilons)), make(plotter.XYs, len(epsilons))
		se, sn := make([]float64, len(epsilons)), make([]float64, len(epsilons))
		for k, eps := range epsilons {
			xs[k], se[k] = plotter.XY{X: eps, Y: star[k].Mean[i]}, star[k].SE[i]
			xn[k], sn[k] = plotter.XY{X: eps, Y: alone[k].Mean[i]}, alone[k].SE[i]
		}
		if err := addSeries(p, method.String()+", m = m*(ε)", i, xs, se, false); err != nil {
			return "", err
		}
		if err := addSeries(p, method.String()+", m = n (PRAM alone)", i, xn, sn, true); err != nil {
			return "", err
		}
	}
	var bound plotter.XYs
	for k, eps := range epsilons {
		bound = append(bound, plotter.XY{X: eps, Y: star[k].Bound})
	}
	if err := addLine(p, "Theorem III.4 bound at m*(ε)", bound, black, []vg.Length{vg.Points(6), vg.Points(3)}); err != nil {
		return "", err
	}
	p.X.Min, p.X.Max = epsilons[0]/1.12, epsilons[len(epsilons)-1]*1.12
	p.Legend.Top, p.Legend.Left = false, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(6), vg.Points(4)
	if err := savePNG(filepath.Join(o.out, "error_vs_epsilon.png"), figW, figH, "", p); err != nil {
		return "", err
	}

	fmt.Fprintf(sum, "error_vs_epsilon (%d releases each): mle mean ℓ2 at m*(ε) vs m = n:", o.runs)
	mle := slices.Index(methods, estimate.MethodMLE)
	for i, eps := range epsilons {
		fmt.Fprintf(sum, " ε=%g m*=%d %.4f vs %.4f (bound %.3f);", eps, plans[i].M, star[i].Mean[mle], alone[i].Mean[mle], star[i].Bound)
	}
	fmt.Fprintln(sum)
	return fmt.Sprintf("error_vs_epsilon.png: %d values of ε × %d releases", len(epsilons), o.runs), nil
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
				rows = append(rows, []string{strconv.Itoa(pt.L), rangeKeys[rg], seriesKeys[sr], f6(e.mean()), strconv.Itoa(e.queries), strconv.Itoa(pt.Releases)})
			}
		}
	}
	if err := writeCSV(filepath.Join(o.out, "anonymize_error_vs_l.csv"), []string{"l", "counts", "mechanism", "mean_relative_error", "queries", "releases"}, rows); err != nil {
		return "", err
	}

	var panels []*plot.Plot
	for rg, title := range []string{
		"utility: selectivity 2–5 % (lower is better)",
		"small-count privacy: true count 1–10, log scale (higher is more private)",
	} {
		p := newPlot(title, "ℓ′ (decoy group size; Anatomy's ℓ)", "mean relative error")
		p.Title.TextStyle.Font.Size = vg.Points(10)
		p.X.Tick.Marker = constTicks(floats(ls)...)
		p.X.Min, p.X.Max = float64(ls[0])-0.3, float64(ls[len(ls)-1])+0.3
		if rg == rangeLarge {
			p.Y.Min = 0
		}
		top, bottom := 0.0, math.Inf(1)
		for sr := range numSeries {
			xys := make(plotter.XYs, len(pts))
			for k, pt := range pts {
				xys[k] = plotter.XY{X: float64(pt.L), Y: pt.Err[rg][sr].mean()}
				top, bottom = max(top, xys[k].Y), min(bottom, xys[k].Y)
			}
			name := seriesNames[sr]
			if rg == rangeSmall {
				name = "" // one legend, in the left panel
			}
			if err := addSeries(p, name, seriesStyle[sr], xys, nil, seriesDashed(sr)); err != nil {
				return "", err
			}
		}
		if rg == rangeLarge {
			// SPEC §6's reading of the paper (§9.2, Figure 4): ≈ 20 % at
			// selectivity 2–5 %.
			claim := plotter.XYs{{X: p.X.Min, Y: 0.2}, {X: p.X.Max, Y: 0.2}}
			if err := addLine(p, "paper: ≈ 20 % (§9.2)", claim, grey, []vg.Length{vg.Points(2), vg.Points(2)}); err != nil {
				return "", err
			}
			p.Y.Max = top * 1.35 // headroom for the legend, top right
			p.Legend.Top, p.Legend.Left = true, false
		} else {
			logAxis(&p.Y)
			p.Y.Min = min(bottom, 1) * 0.9 // so that 1 (an error of 100 %) is marked
		}
		panels = append(panels, p)
	}
	title := fmt.Sprintf("Count queries on Adult, occupation sensitive (V = %d): %d random predicates × every occupation, %d publication%s per ℓ′ and mechanism",
		t.V, len(preds), o.releases, plural(o.releases))
	if err := savePNG(filepath.Join(o.out, "anonymize_error_vs_l.png"), 26*vg.Centimeter, 11*vg.Centimeter, title, panels...); err != nil {
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
	return fmt.Sprintf("anonymize_error_vs_l.png: ℓ′ = %d…%d × %d publication%s, %d predicates", ls[0], lmax, o.releases, plural(o.releases), len(preds)), nil
}

func floats(xs []int) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
