package main

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/adulttest"
)

// docsFigures is the folder of the committed figures, shown by the README.
func docsFigures(t *testing.T) string {
	return filepath.Join(adulttest.RepoRoot(t), "docs", "figures")
}

// checkSVG fails unless b is a well-formed XML document whose root is an
// <svg> element with drawn content (paths and text).
func checkSVG(t *testing.T, name string, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	var root string
	elems := map[string]int{}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: not well-formed XML: %v", name, err)
		}
		if s, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = s.Name.Local
			}
			elems[s.Name.Local]++
		}
	}
	if root != "svg" || elems["path"] < 20 || elems["text"] < 10 {
		t.Errorf("%s: root <%s>, %d paths, %d texts: want an <svg> with a drawn chart", name, root, elems["path"], elems["text"])
	}
	if bytes.Contains(b, []byte("font-family:Liberation Sans;")) {
		t.Errorf("%s: names Liberation Sans without a fallback font (chart.Standalone)", name)
	}
}

// checkPNG fails unless b decodes as a PNG of at least 600 × 400 pixels.
func checkPNG(t *testing.T, name string, b []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if r := img.Bounds(); r.Dx() < 600 || r.Dy() < 400 {
		t.Errorf("%s is %v, want at least 600×400", name, r)
	}
}

// The committed SVGs are what the current code draws from the committed
// CSVs, byte for byte: a change of the chart code or of a figure's drawing
// that is not followed by `go run ./scripts/figures -replot -out
// docs/figures` (or make figures) fails here. The PNGs are drawn too.
func TestCommittedFiguresAreRedrawnFromTheirCSVs(t *testing.T) {
	docs := docsFigures(t)
	dir := t.TempDir()
	for _, f := range figures {
		csvData, err := os.ReadFile(filepath.Join(docs, f.name+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.name+".csv"), csvData, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stderr bytes.Buffer
	if code := run([]string{"-replot", "-out", dir}, io.Discard, &stderr); code != 0 {
		t.Fatalf("-replot: exit %d: %s", code, stderr.String())
	}
	for _, f := range figures {
		got, err := os.ReadFile(filepath.Join(dir, f.name+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		checkSVG(t, f.name+".svg", got)
		want, err := os.ReadFile(filepath.Join(docs, f.name+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("docs/figures/%s.svg is not what the code draws from docs/figures/%s.csv: run go run ./scripts/figures -replot -out docs/figures", f.name, f.name)
		}
		if len(want) > 64<<10 {
			t.Errorf("docs/figures/%s.svg is %d bytes, want a few tens of KB at most", f.name, len(want))
		}
		b, err := os.ReadFile(filepath.Join(dir, f.name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		checkPNG(t, f.name+".png", b)
	}
}

// Every figure is shown in the README from a committed image, and every
// image the README shows from docs/figures is there and valid.
func TestREADMEShowsEveryCommittedFigure(t *testing.T) {
	root := adulttest.RepoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var linked []string
	for _, m := range regexp.MustCompile(`!\[[^\]]*\]\((docs/figures/[^)\s]+)\)`).FindAllStringSubmatch(string(readme), -1) {
		linked = append(linked, m[1])
	}
	for _, f := range figures {
		if !slices.Contains(linked, "docs/figures/"+f.name+".svg") {
			t.Errorf("README shows no ![…](docs/figures/%s.svg)", f.name)
		}
	}
	for _, l := range linked {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(l)))
		if err != nil {
			t.Errorf("README: %v", err)
			continue
		}
		switch {
		case strings.HasSuffix(l, ".svg"):
			checkSVG(t, l, b)
		case strings.HasSuffix(l, ".png"):
			checkPNG(t, l, b)
		default:
			t.Errorf("README shows %s, neither SVG nor PNG", l)
		}
	}
}

// A replot of a CSV that lacks a column fails, naming the file and the
// column, and leaves no image behind.
func TestReplotOfABadCSVFailsWithoutOutput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "error_vs_m.csv")
	if err := os.WriteFile(path, []byte("epsilon,m\n1,100\n1,200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := run([]string{"-replot", "-out", dir}, io.Discard, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, stderr.String())
	}
	if msg := stderr.String(); !strings.Contains(msg, "error_vs_m.csv") || !strings.Contains(msg, `no column "n"`) {
		t.Errorf("message %q names neither the file nor the column", msg)
	}
	for _, ext := range []string{".svg", ".png"} {
		if _, err := os.Stat(filepath.Join(dir, "error_vs_m"+ext)); err == nil {
			t.Errorf("error_vs_m%s written from a bad CSV", ext)
		}
	}
}
