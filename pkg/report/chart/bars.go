package chart

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is one set of bars of a Bars chart: a value per category and,
// when Lo and Hi are set, an interval [Lo[i], Hi[i]] drawn as an error bar.
// A NaN value draws no bar (a value the series does not have).
type Series struct {
	Name   string
	Values []float64
	Lo, Hi []float64
}

// Ref is a reference line across the value axis (a threshold such as
// Lemma 4's T_f).
type Ref struct {
	Name  string
	Value float64
}

// Bars is a grouped horizontal bar chart: one row per category, top to
// bottom in the order given, one bar per series in each row. Horizontal
// bars keep long codebook labels readable.
type Bars struct {
	Title      string
	ValueLabel string // the value axis' label
	Categories []string
	Series     []Series
	Refs       []Ref
	// Max, when positive, fixes the value axis' upper end (1 for
	// probabilities); otherwise it fits the data.
	Max float64
}

// Width is the width of every report chart.
const Width = 6.5 * vg.Inch

// Size returns the chart's natural size: Width wide, tall enough for every
// bar to be at least a few points thick.
func (b Bars) Size() (w, h vg.Length) {
	rows := float64(len(b.Categories))
	per := 4 + 7*float64(max(1, len(b.Series))) // points per category row
	h = vg.Points(110 + rows*per)
	return Width, max(h, 2.2*vg.Inch)
}

// Plot builds the chart's plot.
func (b Bars) Plot() (*plot.Plot, error) {
	nc := len(b.Categories)
	if nc == 0 {
		return nil, fmt.Errorf("chart.Bars %q: no categories", b.Title)
	}
	for _, s := range b.Series {
		if len(s.Values) != nc || (s.Lo != nil && len(s.Lo) != nc) || (s.Hi != nil && len(s.Hi) != nc) {
			return nil, fmt.Errorf("chart.Bars %q: series %q has %d values for %d categories", b.Title, s.Name, len(s.Values), nc)
		}
	}
	p := NewPlot(b.Title, b.ValueLabel, "")
	// Category i sits at y = nc−1−i, so the first is on top.
	names := make([]string, nc)
	for i, c := range b.Categories {
		names[nc-1-i] = c
	}
	p.NominalY(names...)
	p.Y.Tick.Label.Font.Size = vg.Points(8)
	ns := float64(len(b.Series))
	band := 0.8 / ns
	for s, ser := range b.Series {
		c := Palette[s%len(Palette)]
		h := &hbars{color: c, half: band / 2}
		var errs xyErrs
		for i, v := range ser.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			y := float64(nc-1-i) + 0.4 - band*(float64(s)+0.5)
			h.bars = append(h.bars, plotter.XY{X: v, Y: y})
			if ser.Lo != nil && ser.Hi != nil && !math.IsNaN(ser.Lo[i]) && !math.IsNaN(ser.Hi[i]) {
				errs.XYs = append(errs.XYs, plotter.XY{X: v, Y: y})
				errs.XErrors = append(errs.XErrors, struct{ Low, High float64 }{v - min(ser.Lo[i], v), max(ser.Hi[i], v) - v})
			}
		}
		p.Add(h)
		if ser.Name != "" {
			p.Legend.Add(ser.Name, h)
		}
		if len(errs.XYs) > 0 {
			eb, err := plotter.NewXErrorBars(errs)
			if err != nil {
				return nil, fmt.Errorf("chart.Bars %q: %w", b.Title, err)
			}
			eb.Color = Black
			eb.Width = vg.Points(0.8)
			eb.CapWidth = vg.Points(min(4, 0.6*band*7*ns))
			p.Add(eb)
		}
	}
	for k, r := range b.Refs {
		l, err := plotter.NewLine(plotter.XYs{{X: r.Value, Y: -0.5}, {X: r.Value, Y: float64(nc) - 0.5}})
		if err != nil {
			return nil, fmt.Errorf("chart.Bars %q: reference %q: %w", b.Title, r.Name, err)
		}
		l.Color = Palette[(len(b.Series)+k)%len(Palette)]
		l.Width = vg.Points(1.2)
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(l)
		if r.Name != "" {
			p.Legend.Add(r.Name, l)
		}
	}
	p.Y.Min, p.Y.Max = -0.5, float64(nc)-0.5
	if p.X.Min > 0 {
		p.X.Min = 0
	}
	if b.Max > 0 {
		p.X.Max = b.Max
	}
	if p.X.Max <= p.X.Min {
		p.X.Max = p.X.Min + 1
	}
	p.Y.Padding = 0
	return p, nil
}

// inset is the room left of the plot for category labels drawn wider than
// measured (a browser without Liberation Sans or a metric-compatible font):
// a fifth of the longest label.
func (b Bars) inset(p *plot.Plot) vg.Length {
	var w vg.Length
	for _, c := range b.Categories {
		w = max(w, p.Y.Tick.Label.Rectangle(c).Size().X)
	}
	return w / 5
}

// SVG renders the chart at its natural size.
func (b Bars) SVG() ([]byte, error) {
	p, err := b.Plot()
	if err != nil {
		return nil, err
	}
	w, h := b.Size()
	return single(SVG, w, h, b.inset(p), p)
}

// xyErrs is a set of points with horizontal error bars.
type xyErrs struct {
	plotter.XYs
	plotter.XErrors
}

// hbars draws horizontal bars from 0 to each point's X, centred on its Y,
// 2·half data units thick: bars and error bars then share data
// coordinates (plotter.BarChart offsets bars in canvas lengths).
type hbars struct {
	bars  plotter.XYs
	half  float64
	color color.Color
}

func (h *hbars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, b := range h.bars {
		x0, x1 := trX(0), trX(b.X)
		if x1 < x0 {
			x0, x1 = x1, x0
		}
		y0, y1 := trY(b.Y-h.half), trY(b.Y+h.half)
		if x1-x0 < vg.Points(0.5) { // a zero still shows as a hairline
			x1 = x0 + vg.Points(0.5)
		}
		c.FillPolygon(h.color, c.ClipPolygonXY([]vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}))
	}
}

func (h *hbars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = 0, 0
	for _, b := range h.bars {
		xmin, xmax = min(xmin, b.X), max(xmax, b.X)
	}
	return xmin, xmax, math.Inf(1), math.Inf(-1)
}

// Thumbnail draws the legend's swatch.
func (h *hbars) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(h.color, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}
