package main

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/pramkit/pramkit/pkg/estimate"
	"github.com/pramkit/pramkit/pkg/pram"
	"github.com/pramkit/pramkit/pkg/report/chart"
	"github.com/pramkit/pramkit/pkg/table"
)

// A figure is drawn from its CSV alone, never from the measurements in
// memory: a run and a -replot of its CSV then draw the same image, so the
// committed images (docs/figures) can be checked against the committed
// numbers, and a change of the chart code redraws them in a second.
type figure struct {
	name string
	w, h vg.Length
	// draw builds the figure's panels from its CSV, with the title above
	// them all ("" for none).
	draw func(t *csvTable) (title string, panels []*plot.Plot, err error)
}

// Figure sizes.
const (
	figW = 16 * vg.Centimeter
	figH = 11 * vg.Centimeter
)

var figures = []figure{
	{"error_vs_m", figW, figH, drawErrorVsM},
	{"error_vs_epsilon", figW, figH, drawErrorVsEpsilon},
	{"anonymize_error_vs_l", 26 * vg.Centimeter, figH, drawAnonymizeErrorVsL},
}

// drawFigure reads dir/NAME.csv of f and writes dir/NAME.svg and
// dir/NAME.png, each through a temporary file (no partial output).
func drawFigure(dir string, f figure) error {
	t, err := readTable(filepath.Join(dir, f.name+".csv"))
	if err != nil {
		return err
	}
	for _, format := range []chart.Format{chart.SVG, chart.PNG} {
		// Drawn anew per format: a plot is not drawn twice.
		title, panels, err := f.draw(t)
		if err != nil {
			return fmt.Errorf("%s: %w", t.file, err)
		}
		b, err := chart.Encode(format, f.w, f.h, title, panels...)
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		if format == chart.SVG {
			b = chart.Standalone(b)
		}
		if err := table.WriteFileAtomic(filepath.Join(dir, f.name+"."+string(format)), b, 0o644, nil); err != nil {
			return err
		}
	}
	return nil
}

// csvTable is a figure's CSV: a header and rows. Its first failed lookup
// is kept in err, so a drawer reads every cell and checks once.
type csvTable struct {
	file   string
	header []string
	rows   [][]string
	err    error
}

func readTable(path string) (*csvTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) < 2 {
		return nil, fmt.Errorf("%s: no rows under the header", path)
	}
	return &csvTable{file: path, header: recs[0], rows: recs[1:]}, nil
}

// str returns column col of row i.
func (t *csvTable) str(i int, col string) string {
	k := slices.Index(t.header, col)
	if k < 0 {
		if t.err == nil {
			t.err = fmt.Errorf("%s: no column %q; rerun the figures (make figures)", t.file, col)
		}
		return ""
	}
	return t.rows[i][k]
}

// num returns column col of row i as a finite number.
func (t *csvTable) num(i int, col string) float64 {
	s := t.str(i, col)
	x, err := strconv.ParseFloat(s, 64)
	if (err != nil || math.IsNaN(x) || math.IsInf(x, 0)) && t.err == nil {
		t.err = fmt.Errorf("%s: row %d, column %s: %q is not a finite number", t.file, i+2, col, s)
	}
	return x
}

// drawErrorVsM draws error_vs_m: mean ℓ2 error against m, one series per
// estimator with ±1 standard error, the Theorem III.4 bound over m (γ tied
// to ε by Theorem III.2) and m* marked.
func drawErrorVsM(t *csvTable) (string, []*plot.Plot, error) {
	n, K, eps, runs := int(t.num(0, "n")), uint64(t.num(0, "K")), t.num(0, "epsilon"), int(t.num(0, "releases"))
	ms := make([]float64, len(t.rows))
	means, ses := make([][]float64, len(methods)), make([][]float64, len(methods))
	for k := range t.rows {
		ms[k] = t.num(k, "m")
		for i, m := range methods {
			means[i] = append(means[i], t.num(k, m.String()+"_mean"))
			ses[i] = append(ses[i], t.num(k, m.String()+"_se"))
		}
	}
	if t.err != nil {
		return "", nil, t.err
	}
	plan, err := estimate.NewPlan(n, K, eps)
	if err != nil {
		return "", nil, err
	}
	p := chart.NewPlot(fmt.Sprintf("Sampling + PRAM on Adult, education × income (K = %d, n = %d), ε = %g\nmean over %d releases per m, bars ±1 standard error; both axes log scale", K, n, eps, runs),
		"sample size m (log scale)", "mean ℓ2 error")
	chart.LogAxis(&p.X)
	chart.LogAxis(&p.Y)
	lo, hi := math.Inf(1), 0.0
	for i, method := range methods {
		xys := make(plotter.XYs, len(ms))
		for k := range ms {
			xys[k] = plotter.XY{X: ms[k], Y: means[i][k]}
			lo = min(lo, means[i][k]-ses[i][k])
		}
		if err := chart.AddSeries(p, method.String(), i, xys, ses[i], false); err != nil {
			return "", nil, err
		}
	}
	var bound plotter.XYs
	for k := range 121 {
		m := int(math.Round(math.Exp(math.Log(ms[0]) + float64(k)/120*math.Log(float64(n)/ms[0]))))
		m = min(max(m, 1), n)
		g, err := pram.GammaFromEpsilon(n, m, eps)
		if err != nil {
			return "", nil, err
		}
		b, err := estimate.Bound(K, g, m)
		if err != nil {
			return "", nil, err
		}
		bound = append(bound, plotter.XY{X: float64(m), Y: b})
		hi = max(hi, b)
	}
	if err := chart.AddLine(p, "Theorem III.4 bound (inverse)", bound, chart.Black, []vg.Length{vg.Points(6), vg.Points(3)}); err != nil {
		return "", nil, err
	}
	p.Y.Min, p.Y.Max = lo*0.85, hi*2.2 // headroom for the legend
	mark := plotter.XYs{{X: plan.MStar, Y: p.Y.Min}, {X: plan.MStar, Y: p.Y.Max}}
	if err := chart.AddLine(p, fmt.Sprintf("m* = %d, the bound's minimum", plan.M), mark, chart.Grey, []vg.Length{vg.Points(2), vg.Points(2)}); err != nil {
		return "", nil, err
	}
	last := len(ms) - 1
	labels, err := plotter.NewLabels(plotter.XYLabels{
		XYs:    plotter.XYs{{X: ms[last], Y: means[0][last] * 1.1}},
		Labels: []string{"m = n:\nPRAM alone"},
	})
	if err != nil {
		return "", nil, err
	}
	labels.TextStyle[0].XAlign = -1 // right-aligned: the point sits at the axis's end
	labels.TextStyle[0].Font.Size = vg.Points(8)
	labels.TextStyle[0].Font.Typeface, labels.TextStyle[0].Font.Variant = "Liberation", "Sans" // as chart.NewPlot's
	p.Add(labels)
	p.X.Min, p.X.Max = ms[0]/1.15, float64(n)*1.15
	p.Legend.Top, p.Legend.Left = true, false
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), -vg.Points(8)
	return "", []*plot.Plot{p}, nil
}

// drawErrorVsEpsilon draws error_vs_epsilon: each estimator at m = m*(ε)
// and at m = n (PRAM alone), with the bound at m*(ε).
func drawErrorVsEpsilon(t *csvTable) (string, []*plot.Plot, error) {
	n, K, runs := int(t.num(0, "n")), int(t.num(0, "K")), int(t.num(0, "releases"))
	eps := make([]float64, len(t.rows))
	bound := make(plotter.XYs, len(t.rows))
	for k := range t.rows {
		eps[k] = t.num(k, "epsilon")
		bound[k] = plotter.XY{X: eps[k], Y: t.num(k, "bound")}
	}
	clamped := ""
	if last := len(eps) - 1; t.num(last, "m") == float64(n) {
		clamped = fmt.Sprintf("\nm*(%g) ≥ n, so it is clamped to n", eps[last])
	}
	p := chart.NewPlot(fmt.Sprintf("Adult education × income (K = %d, n = %d): error at the planned m*(ε)\nand with PRAM alone (m = n), mean over %d releases each; log–log%s", K, n, runs, clamped),
		"privacy ε (log scale)", "mean ℓ2 error")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = chart.ConstTicks(eps...)
	chart.LogAxis(&p.Y)
	for i, method := range methods {
		for _, s := range []struct {
			prefix, name string
			dashed       bool
		}{{"", ", m = m*(ε)", false}, {"n_", ", m = n (PRAM alone)", true}} {
			xys, se := make(plotter.XYs, len(eps)), make([]float64, len(eps))
			for k := range eps {
				xys[k] = plotter.XY{X: eps[k], Y: t.num(k, s.prefix+method.String()+"_mean")}
				se[k] = t.num(k, s.prefix+method.String()+"_se")
			}
			if err := chart.AddSeries(p, method.String()+s.name, i, xys, se, s.dashed); err != nil {
				return "", nil, err
			}
		}
	}
	if t.err != nil {
		return "", nil, t.err
	}
	if err := chart.AddLine(p, "Theorem III.4 bound at m*(ε)", bound, chart.Black, []vg.Length{vg.Points(6), vg.Points(3)}); err != nil {
		return "", nil, err
	}
	p.X.Min, p.X.Max = eps[0]/1.12, eps[len(eps)-1]*1.12
	p.Legend.Top, p.Legend.Left = false, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(6), vg.Points(4)
	return "", []*plot.Plot{p}, nil
}

// drawAnonymizeErrorVsL draws anonymize_error_vs_l: mean relative error of
// count queries against ℓ′, A′ beside Anatomy and global randomization,
// one panel per count range.
func drawAnonymizeErrorVsL(t *csvTable) (string, []*plot.Plot, error) {
	var ls []float64
	for k := range t.rows {
		if l := t.num(k, "l"); !slices.Contains(ls, l) {
			ls = append(ls, l)
		}
	}
	slices.Sort(ls)
	var errs [numRanges][numSeries][]float64
	for rg := range numRanges {
		for sr := range numSeries {
			errs[rg][sr] = make([]float64, len(ls))
			for i := range ls {
				errs[rg][sr][i] = math.NaN()
			}
		}
	}
	for k := range t.rows {
		rg := slices.Index(rangeKeys[:], t.str(k, "counts"))
		sr := slices.Index(seriesKeys[:], t.str(k, "mechanism"))
		l, e := t.num(k, "l"), t.num(k, "mean_relative_error")
		if (rg < 0 || sr < 0) && t.err == nil {
			t.err = fmt.Errorf("%s: row %d: unknown counts %q or mechanism %q", t.file, k+2, t.str(k, "counts"), t.str(k, "mechanism"))
		}
		if t.err != nil {
			return "", nil, t.err
		}
		errs[rg][sr][slices.Index(ls, l)] = e
	}
	v, preds, releases := int(t.num(0, "values")), int(t.num(0, "predicates")), int(t.num(0, "releases"))
	if t.err != nil {
		return "", nil, t.err
	}
	var panels []*plot.Plot
	for rg, title := range []string{
		"utility: selectivity 2–5 % (lower is better)",
		"small-count privacy: true count 1–10, log scale (higher is more private)",
	} {
		p := chart.NewPlot(title, "ℓ′ (decoy group size; Anatomy's ℓ)", "mean relative error")
		p.Title.TextStyle.Font.Size = vg.Points(10)
		p.X.Tick.Marker = chart.ConstTicks(ls...)
		p.X.Min, p.X.Max = ls[0]-0.3, ls[len(ls)-1]+0.3
		if rg == rangeLarge {
			p.Y.Min = 0
		}
		top, bottom := 0.0, math.Inf(1)
		for sr := range numSeries {
			xys := make(plotter.XYs, len(ls))
			for i, l := range ls {
				if math.IsNaN(errs[rg][sr][i]) {
					return "", nil, fmt.Errorf("%s: no row for ℓ′ = %g, %s, %s", t.file, l, rangeKeys[rg], seriesKeys[sr])
				}
				xys[i] = plotter.XY{X: l, Y: errs[rg][sr][i]}
				top, bottom = max(top, xys[i].Y), min(bottom, xys[i].Y)
			}
			name := seriesNames[sr]
			if rg == rangeSmall {
				name = "" // one legend, in the left panel
			}
			if err := chart.AddSeries(p, name, seriesStyle[sr], xys, nil, seriesDashed(sr)); err != nil {
				return "", nil, err
			}
		}
		if rg == rangeLarge {
			// SPEC §6's reading of the paper (§9.2, Figure 4): ≈ 20 % at
			// selectivity 2–5 %.
			claim := plotter.XYs{{X: p.X.Min, Y: 0.2}, {X: p.X.Max, Y: 0.2}}
			if err := chart.AddLine(p, "paper: ≈ 20 % (§9.2)", claim, chart.Grey, []vg.Length{vg.Points(2), vg.Points(2)}); err != nil {
				return "", nil, err
			}
			p.Y.Max = top * 1.35 // headroom for the legend, top right
			p.Legend.Top, p.Legend.Left = true, false
		} else {
			chart.LogAxis(&p.Y)
			p.Y.Min = min(bottom, 1) * 0.9 // so that 1 (an error of 100 %) is marked
		}
		panels = append(panels, p)
	}
	title := fmt.Sprintf("Count queries on Adult, occupation sensitive (V = %d): %d random predicates × every occupation, %d publication%s per ℓ′ and mechanism",
		v, preds, releases, plural(releases))
	return title, panels, nil
}
