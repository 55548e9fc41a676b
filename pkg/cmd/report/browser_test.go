package report_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pramkit/pramkit/internal/adulttest"
)

// chromium returns the path of Chromium (Debian's chromium, or
// chromium-browser), or skips the test when it is absent on a developer's
// machine. Under CI (the env CI set) a missing Chromium fails the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("Chromium not found (chromium or chromium-browser on PATH), and CI is set: the browser test must run in CI; .ci/run installs it with apt-get install chromium")
	}
	t.Skip("Chromium not found (chromium or chromium-browser on PATH): the reports were not rendered in a browser; apt-get install chromium to run this test")
	return ""
}

// screenshot renders page (an HTML file) in headless Chromium at w × h CSS
// pixels and returns the PNG.
func screenshot(bin, page, shot string, w, h int) (image.Image, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	profile, err := os.MkdirTemp("", "pramkit-chromium")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(profile)
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--no-first-run", "--disable-extensions", "--user-data-dir="+profile,
		"--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", w, h), "file://"+page)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s: %v\n%s", cmd, err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		return nil, fmt.Errorf("chromium wrote no screenshot: %v\n%s", err, out)
	}
	defer f.Close()
	return png.Decode(f)
}

// inked counts, in r, the pixels that are not (near) white and those in
// colour (a channel 60 or more above another: the charts' series, not the
// grey of text, axes and grid).
func inked(img image.Image, r image.Rectangle) (dark, colour int) {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c, g, b, _ := img.At(x, y).RGBA()
			c, g, b = c>>8, g>>8, b>>8
			if c < 235 || g < 235 || b < 235 {
				dark++
			}
			if max(c, g, b)-min(c, g, b) >= 60 {
				colour++
			}
		}
	}
	return dark, colour
}

// The test page: the reports side by side in frames of one window each,
// then every chart alone in a cell, all at known positions (CSS pixels).
const (
	frameW, frameH = 1000, 1400
	frameCols      = 2
	cellW, cellH   = 480, 330
	cellCols       = 4
	gap            = 10
)

// TestReportInBrowser renders a report of each kind in headless Chromium
// and checks the page is not blank; and every chart of every report alone,
// scaled into a cell, and checks each cell holds drawn, coloured content
// (bars, lines or markers). One Chromium run renders them all (its start
// costs more than the drawing): each report in a frame of one browser
// window, the charts below. With PRAMKIT_REPORT_SHOTS set, each report's
// screenshot is kept in out/report-shots/KIND.png (and charts.png).
func TestReportInBrowser(t *testing.T) {
	bin := chromium(t)
	dir := fixture(t)
	shots := ""
	if os.Getenv("PRAMKIT_REPORT_SHOTS") != "" {
		shots = filepath.Join(adulttest.RepoRoot(t), "out", "report-shots")
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	type chartOf struct {
		kind string
		svg  []byte
	}
	var charts []chartOf
	var pages []string
	var page strings.Builder
	page.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8" /><style>body{margin:0;background:#fff} div,iframe{position:absolute;overflow:hidden;border:0} svg{width:100%;height:100%}</style></head><body>`)
	frame := func(i int) image.Rectangle {
		x, y := (i%frameCols)*(frameW+gap), (i/frameCols)*(frameH+gap)
		return image.Rect(x, y, x+frameW, y+frameH)
	}
	top := (len(kinds) + frameCols - 1) / frameCols * (frameH + gap)
	cell := func(i int) image.Rectangle {
		x, y := (i%cellCols)*(cellW+gap), top+(i/cellCols)*(cellH+gap)
		return image.Rect(x, y, x+cellW, y+cellH)
	}
	for i, k := range kinds {
		path := reportOf(t, dir, k)
		pages = append(pages, path)
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range checkHTML(t, doc) {
			charts = append(charts, chartOf{k.name, c})
		}
		r := frame(i)
		fmt.Fprintf(&page, `<iframe scrolling="no" style="left:%dpx;top:%dpx;width:%dpx;height:%dpx" src="file://%s"></iframe>`, r.Min.X, r.Min.Y, frameW, frameH, path)
	}
	for i, c := range charts {
		r := cell(i)
		fmt.Fprintf(&page, `<div style="left:%dpx;top:%dpx;width:%dpx;height:%dpx">%s</div>`, r.Min.X, r.Min.Y, cellW, cellH, c.svg)
	}
	page.WriteString(`</body></html>`)
	pagePath := filepath.Join(t.TempDir(), "browser.html")
	if err := os.WriteFile(pagePath, []byte(page.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	w := max(frameCols*(frameW+gap), cellCols*(cellW+gap))
	h := cell(len(charts)-1).Max.Y + gap
	img, err := screenshot(bin, pagePath, filepath.Join(t.TempDir(), "browser.png"), w, h)
	if err != nil {
		t.Fatal(err)
	}
	// Chromium's screenshot is in device pixels: scale the positions.
	scale := float64(img.Bounds().Dx()) / float64(w)
	dev := func(r image.Rectangle) image.Rectangle {
		f := func(v int) int { return int(float64(v) * scale) }
		return image.Rect(f(r.Min.X), f(r.Min.Y), f(r.Max.X), f(r.Max.Y))
	}
	sub := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	for i, k := range kinds {
		r := dev(frame(i))
		dark, _ := inked(img, r)
		if dark < r.Dx()*r.Dy()/100 {
			t.Errorf("%s: the rendered report is blank: %d of %d pixels drawn", k.name, dark, r.Dx()*r.Dy())
		}
		if shots != "" {
			savePNG(t, filepath.Join(shots, k.name+".png"), sub.SubImage(r))
			if st, err := os.Stat(pages[i]); err == nil {
				t.Logf("%s: report %d bytes, screenshot %s", k.name, st.Size(), filepath.Join(shots, k.name+".png"))
			}
		}
	}
	for i, c := range charts {
		r := dev(cell(i))
		dark, colour := inked(img, r)
		area := r.Dx() * r.Dy()
		if dark < area/50 || colour < area/400 {
			t.Errorf("%s: chart %d is not drawn: %d of %d pixels inked, %d in colour", c.kind, i, dark, area, colour)
		}
	}
	if shots != "" {
		savePNG(t, filepath.Join(shots, "charts.png"), sub.SubImage(dev(image.Rect(0, top, w, h))))
		t.Logf("screenshots in %s", shots)
	}
}

func savePNG(t *testing.T, path string, img image.Image) {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
