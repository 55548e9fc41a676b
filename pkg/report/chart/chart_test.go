package chart

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/png"
	"io"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// wellFormed parses an SVG element strictly and returns its text.
func wellFormed(t *testing.T, svg []byte) string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	d.Strict = true
	var text strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return text.String()
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%.300s", err, svg)
		}
		if c, ok := tok.(xml.CharData); ok {
			text.Write(c)
		}
	}
}

func TestBarsDrawLabelsAsText(t *testing.T) {
	b := Bars{Title: "t", ValueLabel: "share", Categories: []string{"<script>alert(1)</script>", "a&b", "c"},
		Series: []Series{
			{Name: "estimate", Values: []float64{0.2, 0.5, 0.3}, Lo: []float64{0.1, 0.4, 0.2}, Hi: []float64{0.3, 0.6, 0.4}},
			{Name: "truth", Values: []float64{0.25, math.NaN(), 0.3}},
		},
		Refs: []Ref{{Name: "T_f", Value: 0.4}}}
	svg, err := b.SVG()
	if err != nil {
		t.Fatal(err)
	}
	in := Inline(svg)
	if !bytes.HasPrefix(in, []byte("<svg")) || bytes.Contains(in, []byte("http")) {
		t.Fatalf("Inline left a declaration or a URL: %.200s", in)
	}
	if bytes.Contains(in, []byte("<script")) {
		t.Fatal("the label <script> is markup in the SVG")
	}
	text := wellFormed(t, in)
	for _, want := range []string{"<script>alert(1)</script>", "a&b", "estimate", "truth", "T_f"} {
		if !strings.Contains(text, want) {
			t.Errorf("the chart's text lacks %q", want)
		}
	}
	if !bytes.Contains(in, []byte("'Liberation Sans',Arial,Helvetica,sans-serif")) {
		t.Error("the font has no metric-compatible fallbacks")
	}
}

func TestBarsRefuseMismatchedSeries(t *testing.T) {
	if _, err := (Bars{Categories: []string{"a", "b"}, Series: []Series{{Values: []float64{1}}}}).SVG(); err == nil {
		t.Error("a series shorter than the categories was drawn")
	}
	if _, err := (Bars{}).SVG(); err == nil {
		t.Error("a chart without categories was drawn")
	}
}

func TestLinesAndPNG(t *testing.T) {
	l := Lines{Title: "bound", XLabel: "m", YLabel: "error", LogX: true, LogY: true,
		Lines:  []Line{{Name: "bound", X: []float64{1, 10, 100}, Y: []float64{3, 1, 0.5}}},
		Points: []Point{{Name: "m*", X: 50, Y: 0.4}}}
	svg, err := l.SVG()
	if err != nil {
		t.Fatal(err)
	}
	if text := wellFormed(t, Inline(svg)); !strings.Contains(text, "m*") {
		t.Error("the legend lacks m*")
	}
	p, err := l.Plot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(PNG, 3*vg.Inch, 2*vg.Inch, "title", p)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if w := img.Bounds().Dx(); w != 3*DPI {
		t.Errorf("PNG is %d pixels wide, want %d", w, 3*DPI)
	}
	if _, err := (Lines{Lines: []Line{{X: []float64{1}, Y: []float64{1}}}}).SVG(); err == nil {
		t.Error("a one-point line was drawn")
	}
}

// TestFigureHelpers draws a figure the way scripts/figures does: two
// panels of series with error bars and a bound, as PNG and SVG.
func TestFigureHelpers(t *testing.T) {
	var plots []*plot.Plot
	for k := range 2 {
		p := NewPlot(fmt.Sprintf("panel %d", k), "ε", "error")
		LogAxis(&p.X)
		p.Y.Tick.Marker = ConstTicks(0, 0.5, 1)
		xys := plotter.XYs{{X: 0.1, Y: 0.9}, {X: 1, Y: 0.4}, {X: 10, Y: 0.1}}
		if err := AddSeries(p, "measured", k, xys, []float64{0.05, 0.05, 0.02}, false); err != nil {
			t.Fatal(err)
		}
		if err := AddLine(p, "bound", plotter.XYs{{X: 0.1, Y: 1}, {X: 10, Y: 0.2}}, Grey, []vg.Length{vg.Points(2)}); err != nil {
			t.Fatal(err)
		}
		if err := AddSeries(p, "bad", k, xys, []float64{1}, false); err == nil {
			t.Error("AddSeries took 1 error bar for 3 points")
		}
		plots = append(plots, p)
	}
	for _, f := range []Format{PNG, SVG} {
		b, err := Encode(f, 7*vg.Inch, 3*vg.Inch, "title", plots...)
		if err != nil || len(b) < 1000 {
			t.Fatalf("%s: %d bytes, %v", f, len(b), err)
		}
		if f == SVG {
			if text := wellFormed(t, Inline(b)); !strings.Contains(text, "panel 1") || !strings.Contains(text, "measured") {
				t.Errorf("the SVG lacks the panels' text: %.200q", text)
			}
		}
	}
}

// Standalone keeps the document whole (declaration and namespaces, which
// an SVG served as a file needs) and gives every label fallback fonts,
// the figure's title included.
func TestStandaloneKeepsTheDocumentAndNamesFallbackFonts(t *testing.T) {
	p := NewPlot("panel", "x", "y")
	if err := AddLine(p, "line", plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}}, Black, nil); err != nil {
		t.Fatal(err)
	}
	raw, err := Encode(SVG, 4*vg.Inch, 3*vg.Inch, "figure title", p)
	if err != nil {
		t.Fatal(err)
	}
	b := Standalone(raw)
	if !bytes.HasPrefix(b, []byte("<?xml")) || !bytes.Contains(b, []byte(`xmlns="http://www.w3.org/2000/svg"`)) {
		t.Errorf("Standalone dropped the declaration or the namespace: %.200s", b)
	}
	if n := bytes.Count(b, []byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")); n < 4 || bytes.Contains(b, []byte("font-family:Liberation Sans;")) {
		t.Errorf("%d labels with fallback fonts, or one without: %.300s", n, b)
	}
	if text := wellFormed(t, b); !strings.Contains(text, "figure title") {
		t.Errorf("the title is missing: %.200q", text)
	}
	if bytes.Contains(raw, []byte("font-family:Liberation Serif;")) {
		t.Error("Encode's title is drawn in a serif font, unlike the panels")
	}
}
