package main

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/pramkit/pramkit/pkg/table"
)

// dpi of the PNGs: sharp on screens and in print at the sizes below.
const dpi = 150

// Colours (Okabe–Ito palette, distinguishable with colour-blindness) and
// glyphs, one per series, so lines stay apart in grey print too.
var (
	palette = []color.Color{
		color.RGBA{0, 114, 178, 255},   // blue
		color.RGBA{213, 94, 0, 255},    // vermilion
		color.RGBA{0, 158, 115, 255},   // green
		color.RGBA{204, 121, 167, 255}, // purple
		color.RGBA{230, 159, 0, 255},   // orange
	}
	glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{}}
	black  = color.Gray{0}
	grey   = color.Gray{110}
)

// newPlot returns a plot with the title and axis labels set and a light
// grid.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{225}
	g.Horizontal.Color = color.Gray{225}
	p.Add(g)
	return p
}

// errXYs is a series of points with ± error bars.
type errXYs struct {
	plotter.XYs
	plotter.YErrors
}

// addSeries draws xys as a line with glyphs in style i, with ±err bars when
// errs is non-nil, dashed when dashed, and names it in the legend.
func addSeries(p *plot.Plot, name string, i int, xys plotter.XYs, errs []float64, dashed bool) error {
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("addSeries %s: %w", name, err)
	}
	c := palette[i%len(palette)]
	line.Color = c
	line.Width = vg.Points(1.3)
	if dashed {
		line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		line.Width = vg.Points(1)
	}
	points.Color = c
	points.Shape = glyphs[i%len(glyphs)]
	points.Radius = vg.Points(2.5)
	p.Add(line, points)
	if errs != nil {
		ye := make(plotter.YErrors, len(errs))
		for k, e := range errs {
			ye[k].Low, ye[k].High = e, e
		}
		bars, err := plotter.NewYErrorBars(errXYs{xys, ye})
		if err != nil {
			return fmt.Errorf("addSeries %s: %w", name, err)
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

// addLine draws a plain line (a bound or a marker) in colour c.
func addLine(p *plot.Plot, name string, xys plotter.XYs, c color.Color, dashes []vg.Length) error {
	line, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("addLine %s: %w", name, err)
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

// logTicks marks a log axis at 1, 2 and 5 times the powers of ten (labelled)
// and at the other integers times them (minor), within [min, max].
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
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

// constTicks labels exactly the values vs.
func constTicks(vs ...float64) plot.ConstantTicks {
	t := make(plot.ConstantTicks, len(vs))
	for i, v := range vs {
		t[i] = plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)}
	}
	return t
}

// logAxis sets a log scale on a with 1-2-5 ticks.
func logAxis(a *plot.Axis) {
	a.Scale = plot.LogScale{}
	a.Tick.Marker = logTicks{}
}

// savePNG draws the plots side by side on a w × h canvas, under title when
// it is not empty, and writes the PNG to path through a temporary file (no
// partial output). The panels are not axis-aligned (plot.Align) on
// purpose: their titles then stay level with each other.
func savePNG(path string, w, h vg.Length, title string, plots ...*plot.Plot) error {
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi))
	dc := draw.New(img)
	if title != "" {
		sty := plot.New().Title.TextStyle
		sty.Font.Size = vg.Points(11)
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		dc.FillText(sty, vg.Point{X: dc.Center().X, Y: dc.Max.Y - vg.Points(4)}, title)
		dc = draw.Crop(dc, 0, 0, 0, -(sty.Rectangle(title).Size().Y + vg.Points(10)))
	}
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Points(18), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	for i, p := range plots {
		p.Draw(tiles.At(dc, i, 0))
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return fmt.Errorf("savePNG %s: %w", path, err)
	}
	if err := table.WriteFileAtomic(path, buf.Bytes(), 0o644, nil); err != nil {
		return fmt.Errorf("savePNG: %w", err)
	}
	return nil
}
