package chart

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Line is one curve of a Lines chart.
type Line struct {
	Name   string
	X, Y   []float64
	Dashed bool
}

// Point is a marked point of a Lines chart (this release's m, m*).
type Point struct {
	Name string
	X, Y float64
}

// Lines is a line chart, on log axes when LogX / LogY.
type Lines struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	Lines                 []Line
	Points                []Point
}

// Size is the chart's natural size.
func (l Lines) Size() (w, h vg.Length) { return Width, 3.4 * vg.Inch }

// Plot builds the chart's plot.
func (l Lines) Plot() (*plot.Plot, error) {
	p := NewPlot(l.Title, l.XLabel, l.YLabel)
	if l.LogX {
		LogAxis(&p.X)
	}
	if l.LogY {
		LogAxis(&p.Y)
	}
	if len(l.Lines) == 0 && len(l.Points) == 0 {
		return nil, fmt.Errorf("chart.Lines %q: nothing to draw", l.Title)
	}
	for i, ln := range l.Lines {
		if len(ln.X) != len(ln.Y) || len(ln.X) < 2 {
			return nil, fmt.Errorf("chart.Lines %q: line %q needs as many x as y, at least 2", l.Title, ln.Name)
		}
		xys := make(plotter.XYs, len(ln.X))
		for k := range ln.X {
			xys[k] = plotter.XY{X: ln.X[k], Y: ln.Y[k]}
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("chart.Lines %q: line %q: %w", l.Title, ln.Name, err)
		}
		line.Color = Palette[i%len(Palette)]
		line.Width = vg.Points(1.4)
		if ln.Dashed {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(line)
		if ln.Name != "" {
			p.Legend.Add(ln.Name, line)
		}
	}
	for i, pt := range l.Points {
		sc, err := plotter.NewScatter(plotter.XYs{{X: pt.X, Y: pt.Y}})
		if err != nil {
			return nil, fmt.Errorf("chart.Lines %q: point %q: %w", l.Title, pt.Name, err)
		}
		k := len(l.Lines) + i
		sc.Color = Palette[k%len(Palette)]
		sc.Shape = Glyphs[(i+1)%len(Glyphs)]
		sc.Radius = vg.Points(4)
		p.Add(sc)
		if pt.Name != "" {
			p.Legend.Add(pt.Name, sc)
		}
	}
	return p, nil
}

// SVG renders the chart at its natural size.
func (l Lines) SVG() ([]byte, error) {
	p, err := l.Plot()
	if err != nil {
		return nil, err
	}
	w, h := l.Size()
	return single(SVG, w, h, 0, p)
}
