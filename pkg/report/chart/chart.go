// Package chart draws pramkit's charts with gonum.org/v1/plot: grouped bar
// charts with intervals (estimates next to observed and true values) and
// line charts on log axes (errors against m or ε), rendered to SVG for
// reports (package report) or PNG for figures.
//
// scripts/figures' helpers live here too (NewPlot, LogAxis, AddSeries,
// AddLine, ConstTicks, Encode for PNG and SVG), so the reproduced figures
// and the reports share one look.
//
// The look is shared: the Okabe–Ito palette (distinguishable with
// colour-blindness), one glyph per series so lines stay apart in grey
// print, a light grid. SVG text is the plot's own: vgsvg escapes it
// (html.EscapeString), so a codebook label such as "<script>" is drawn as
// text, and no font is embedded or fetched: the browser draws the labels
// with its own serif font.
package chart

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Palette holds the series colours (Okabe–Ito), Glyphs the series glyphs.
var (
	Palette = []color.Color{
		color.RGBA{0, 114, 178, 255},   // blue
		color.RGBA{213, 94, 0, 255},    // vermilion
		color.RGBA{0, 158, 115, 255},   // green
		color.RGBA{204, 121, 167, 255}, // purple
		color.RGBA{230, 159, 0, 255},   // orange
		color.RGBA{86, 180, 233, 255},  // sky blue
	}
	Glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{}, draw.PyramidGlyph{}}
	Black  = color.Gray{0}
	Grey   = color.Gray{110}
)

// NewPlot returns a plot with the title and axis labels set and a light
// grid.
func NewPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		f.Typeface, f.Variant = "Liberation", "Sans"
	}
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{225}
	g.Horizontal.Color = color.Gray{225}
	p.Add(g)
	return p
}

// LogTicks marks a log axis at 1, 2 and 5 times the powers of ten
// (labelled) and at the other integers times them (minor), within [lo, hi].
type LogTicks struct{}

// Ticks implements plot.Ticker.
func (LogTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		base := math.Pow(10, e)
		for d := 1; d <= 9; d++ {
			v := float64(d) * base
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if d == 1 || d == 2 || d == 5 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// LogAxis sets a log scale on a with 1-2-5 ticks.
func LogAxis(a *plot.Axis) {
	a.Scale = plot.LogScale{}
	a.Tick.Marker = LogTicks{}
}

// Format is an output format of Encode.
type Format string

// Formats of Encode.
const (
	SVG Format = "svg"
	PNG Format = "png"
)

// DPI of PNG output: sharp on screens and in print.
const DPI = 150

// Encode draws the plots side by side on a w × h canvas, under title when
// it is not empty, in format f. The panels are not axis-aligned on
// purpose: their titles then stay level with each other. SVG output is a
// complete SVG document (an XML declaration first); Inline strips what an
// HTML page does not need.
func Encode(f Format, w, h vg.Length, title string, plots ...*plot.Plot) ([]byte, error) {
	return encode(f, w, h, title, 0, nil, plots...)
}

// encode is Encode with a left inset (room for labels drawn in a wider
// font than the one measured) and a legend drawn in its own strip above
// the plots, where it hides no data.
func encode(f Format, w, h vg.Length, title string, inset vg.Length, legend *plot.Legend, plots ...*plot.Plot) ([]byte, error) {
	var c vg.CanvasSizer
	var svg *vgsvg.Canvas
	var img *vgimg.Canvas
	switch f {
	case SVG:
		svg = vgsvg.NewWith(vgsvg.UseWH(w, h))
		c = svg
	case PNG:
		img = vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(DPI))
		c = img
	default:
		return nil, fmt.Errorf("chart.Encode: unknown format %q", f)
	}
	dc := draw.New(c)
	if title != "" {
		sty := plot.New().Title.TextStyle
		sty.Font.Size = vg.Points(11)
		sty.Font.Typeface, sty.Font.Variant = "Liberation", "Sans" // as NewPlot's
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		dc.FillText(sty, vg.Point{X: dc.Center().X, Y: dc.Max.Y - vg.Points(4)}, title)
		dc = draw.Crop(dc, 0, 0, 0, -(sty.Rectangle(title).Size().Y + vg.Points(10)))
	}
	if legend != nil {
		lh := legend.Rectangle(dc).Size().Y + vg.Points(6)
		legend.Top, legend.Left = true, false
		legend.YOffs = -vg.Points(4)
		legend.XOffs = -vg.Points(8)
		legend.Draw(dc)
		dc = draw.Crop(dc, 0, 0, 0, -lh)
	}
	dc = draw.Crop(dc, inset, 0, 0, 0)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Points(18), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	for i, p := range plots {
		p.Draw(tiles.At(dc, i, 0))
	}
	var buf bytes.Buffer
	var err error
	if svg != nil {
		_, err = svg.WriteTo(&buf)
	} else {
		_, err = (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf)
	}
	if err != nil {
		return nil, fmt.Errorf("chart.Encode: %w", err)
	}
	return buf.Bytes(), nil
}

// single draws one plot with its legend moved above it: the legend's
// height is added to h.
func single(f Format, w, h vg.Length, inset vg.Length, p *plot.Plot) ([]byte, error) {
	leg := p.Legend
	p.Legend = plot.NewLegend()
	p.Legend.TextStyle = leg.TextStyle
	var lp *plot.Legend
	if lh := leg.Rectangle(draw.New(vgsvg.NewWith(vgsvg.UseWH(w, h)))).Size().Y; lh > 0 {
		lp = &leg
		h += lh + vg.Points(6)
	}
	return encode(f, w, h, "", inset, lp, p)
}

// Inline returns an SVG document as an element to embed in HTML: from
// <svg on, without the XML declaration and comment, and without the
// namespace declarations, which HTML's parser supplies (so the page names
// no URL at all).
func Inline(svg []byte) []byte {
	i := bytes.Index(svg, []byte("<svg"))
	if i < 0 {
		return nil
	}
	out := bytes.Clone(svg[i:])
	for _, ns := range []string{`xmlns="http://www.w3.org/2000/svg"`, `xmlns:xlink="http://www.w3.org/1999/xlink"`} {
		out = bytes.Replace(out, []byte(ns), nil, 1)
	}
	return fontFallback(out)
}

// Standalone returns an SVG document of Encode ready to be served as a
// file of its own (an <img> of a README): the document whole, with the
// font fallbacks of Inline.
func Standalone(svg []byte) []byte { return fontFallback(svg) }

// fontFallback names fonts to fall back on after Liberation Sans, which
// is metric-compatible with Arial and Helvetica: a browser without it
// draws the labels at the widths they were laid out for.
func fontFallback(svg []byte) []byte {
	return bytes.ReplaceAll(svg, []byte("font-family:Liberation Sans;"), []byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"))
}

// errXYs is a series of points with ± error bars.
type errXYs struct {
	plotter.XYs
	plotter.YErrors
}

// AddSeries draws xys as a line with glyphs in style i (Palette, Glyphs),
// with ±errs bars when errs is non-nil, dashed when dashed, and names it in
// the legend when name is not empty: a measured curve of a figure.
func AddSeries(p *plot.Plot, name string, i int, xys plotter.XYs, errs []float64, dashed bool) error {
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("chart.AddSeries %s: %w", name, err)
	}
	c := Palette[i%len(Palette)]
	line.Color = c
	line.Width = vg.Points(1.3)
	if dashed {
		line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		line.Width = vg.Points(1)
	}
	points.Color = c
	points.Shape = Glyphs[i%len(Glyphs)]
	points.Radius = vg.Points(2.5)
	p.Add(line, points)
	if errs != nil {
		if len(errs) != len(xys) {
			return fmt.Errorf("chart.AddSeries %s: %d error bars for %d points", name, len(errs), len(xys))
		}
		ye := make(plotter.YErrors, len(errs))
		for k, e := range errs {
			ye[k].Low, ye[k].High = e, e
		}
		bars, err := plotter.NewYErrorBars(errXYs{xys, ye})
		if err != nil {
			return fmt.Errorf("chart.AddSeries %s: %w", name, err)
		}
		bars.Color = c
		bars.CapWidth = vg.Points(4)
		p.Add(bars)
	}
	if name != "" {
		p.Legend.Add(name, line, points)
	}
	return nil
}

// AddLine draws a plain line (a bound or a marker) in colour c.
func AddLine(p *plot.Plot, name string, xys plotter.XYs, c color.Color, dashes []vg.Length) error {
	line, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("chart.AddLine %s: %w", name, err)
	}
	line.Color = c
	line.Width = vg.Points(1.2)
	line.Dashes = dashes
	p.Add(line)
	if name != "" {
		p.Legend.Add(name, line)
	}
	return nil
}

// ConstTicks labels exactly the values vs.
func ConstTicks(vs ...float64) plot.ConstantTicks {
	t := make(plot.ConstantTicks, len(vs))
	for i, v := range vs {
		t[i] = plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)}
	}
	return t
}
