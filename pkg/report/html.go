package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"

	"github.com/pramkit/pramkit/pkg/report/chart"
)

// Report is one HTML page: a section per file.
type Report struct {
	Title    string
	Version  string // the pramkit that wrote the report
	Sections []*Section
}

// Section is what the report says about one file.
type Section struct {
	File    string
	Kind    string // "γ-diagonal release (decrypted)", …
	What    string // what the file is, in a sentence or two
	Privacy string // the privacy level in one plain sentence
	Facts   []Fact // mechanism, parameters, versions, hashes
	Blocks  []Block
}

// Fact is one row of a section's parameter table.
type Fact struct{ Name, Value string }

// Block is a part of a section: a heading with text, a table or a chart.
type Block struct {
	Heading string
	Text    string
	Table   *Table
	Chart   *Chart
}

// Table is an HTML table; Numeric columns are right-aligned.
type Table struct {
	Caption string
	Head    []string
	Numeric []bool
	Rows    [][]string
	Note    string // under the table, e.g. "the 40 largest of 1000 cells"
}

// Chart is a drawn chart: its SVG element (chart.Inline) and a caption.
type Chart struct {
	Caption string
	SVG     []byte
}

// bars draws b as a Chart block.
func barsBlock(b chart.Bars, caption string) (Block, error) {
	svg, err := b.SVG()
	if err != nil {
		return Block{}, err
	}
	return Block{Chart: &Chart{Caption: caption, SVG: chart.Inline(svg)}}, nil
}

// linesBlock draws l as a Chart block.
func linesBlock(l chart.Lines, caption string) (Block, error) {
	svg, err := l.SVG()
	if err != nil {
		return Block{}, err
	}
	return Block{Chart: &Chart{Caption: caption, SVG: chart.Inline(svg)}}, nil
}

// page is the report's template, XHTML-compatible (every element closed)
// so that tests can parse it strictly. html/template escapes every label and
// number; only the charts' SVG goes in unescaped (template.HTML), and it
// comes from vgsvg, which escapes its text. The style sheet is inline and
// names no font file or URL, so the page reads the same offline; @media
// print keeps charts and table rows whole across pages.
var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"svg":   func(b []byte) template.HTML { return template.HTML(b) },
	"align": func(t *Table, j int) bool { return j < len(t.Numeric) && t.Numeric[j] },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8" />
<meta name="viewport" content="width=device-width, initial-scale=1" />
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; max-width: 52rem; margin: 1.5rem auto; padding: 0 1rem; color: #111; line-height: 1.4; background: #fff; }
h1 { font-size: 1.5rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.25rem; border-bottom: 2px solid #0072b2; padding-bottom: 0.2rem; margin-top: 2.2rem; }
h3 { font-size: 1.05rem; margin: 1.4rem 0 0.4rem; }
.kind { color: #555; font-size: 0.95rem; }
.privacy { background: #eef6fb; border-left: 4px solid #0072b2; padding: 0.5rem 0.8rem; }
table { border-collapse: collapse; margin: 0.4rem 0 0.8rem; font-size: 0.85rem; }
caption { text-align: left; font-weight: bold; padding-bottom: 0.2rem; }
th, td { border: 1px solid #ccc; padding: 0.15rem 0.5rem; vertical-align: top; }
th { background: #f2f2f2; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.facts td:first-child { color: #333; white-space: nowrap; }
table.facts td { word-break: break-all; }
figure { margin: 0.6rem 0 1rem; }
figure svg { width: 100%; height: auto; display: block; }
figcaption { font-size: 0.85rem; color: #444; }
.note { font-size: 0.8rem; color: #555; }
footer { margin-top: 2.5rem; font-size: 0.8rem; color: #666; }
nav ol { padding-left: 1.4rem; font-size: 0.9rem; }
a { color: #0072b2; }
@media print {
  body { max-width: none; margin: 0; }
  h2 { break-before: page; }
  section:first-of-type h2 { break-before: auto; }
  figure, tr, .privacy { break-inside: avoid; }
}
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="kind">Written by pramkit report {{.Version}}; {{len .Sections}} file(s).</p>
{{if gt (len .Sections) 1}}<nav><ol>{{range $i, $s := .Sections}}<li><a href="#file-{{$i}}">{{$s.File}}</a>: {{$s.Kind}}</li>
{{end}}</ol></nav>
{{end}}{{range $i, $s := .Sections}}<section id="file-{{$i}}">
<h2>{{.File}}</h2>
<p class="kind">{{.Kind}}</p>
<p>{{.What}}</p>
<p class="privacy"><strong>Privacy:</strong> {{.Privacy}}</p>
<table class="facts"><caption>Mechanism and parameters</caption>
<thead><tr><th>item</th><th>value</th></tr></thead>
<tbody>{{range .Facts}}<tr><td>{{.Name}}</td><td>{{.Value}}</td></tr>
{{end}}</tbody></table>
{{range .Blocks}}{{if .Heading}}<h3>{{.Heading}}</h3>
{{end}}{{if .Text}}<p>{{.Text}}</p>
{{end}}{{with .Table}}<table>{{if .Caption}}<caption>{{.Caption}}</caption>{{end}}
<thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{$t := .}}{{range .Rows}}<tr>{{range $j, $c := .}}<td{{if align $t $j}} class="num"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</tbody></table>
{{if .Note}}<p class="note">{{.Note}}</p>
{{end}}{{end}}{{with .Chart}}<figure class="chart">
{{svg .SVG}}
{{if .Caption}}<figcaption>{{.Caption}}</figcaption>{{end}}
</figure>
{{end}}{{end}}</section>
{{end}}<footer>Self-contained: no script, font or image is loaded from anywhere. Print to PDF from the browser.</footer>
</body>
</html>
`))

// Write renders the report as one HTML page.
func (r *Report) Write(w io.Writer) error {
	var buf bytes.Buffer
	if err := page.Execute(&buf, r); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}
