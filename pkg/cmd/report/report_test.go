package report_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/report"
	"github.com/pramkit/pramkit/pkg/cmd/tools"
	"github.com/pramkit/pramkit/pkg/release"
	pkgreport "github.com/pramkit/pramkit/pkg/report"
	"github.com/pramkit/pramkit/pkg/table"
)

// evil is a codebook label that a report must show as text.
const evil = "<script>alert(1)</script>"

// kind is one kind of pramkit output in the fixture, the file a report
// reads, what its section must say, and how many charts it draws.
type kind struct {
	name   string
	file   string
	says   []string
	charts int
	labels bool // the section shows the labels of column a (evil among them)
}

var kinds = []kind{
	{"sample", "a.sample.csv", []string{"Sample (pramkit sample)", "m = 200 of the table&#39;s n = 400 rows"}, 0, false},
	{"encrypted", "a.enc.csv", []string{"Encrypted sample", "one-time pad"}, 0, false},
	{"perturbed", "rel.csv", []string{"still encrypted", "ε = 1 ", "Theorem III.4", "m* = "}, 1, false},
	{"decrypted", "dec.csv", []string{"γ-diagonal release, decrypted", "equals the person&#39;s true value with probability", "Release ledger", "Joint distribution of a × b", "Marginal distribution of b", "truth (--truth)"}, 4, true},
	{"counts", "counts.csv", []string{"as a count table (estimate --tabulate)", "Marginal distribution of a"}, 4, true},
	{"bitflip", "bf.csv", []string{"bitflip (K-randomization", "ε = 1.386 per bit", "anonymity A_p", "Distribution of a"}, 3, true},
	{"ddps", "dd.csv", []string{"DDPS", "estimated participants", "true count"}, 1, true},
	{"diverted", "an.csv", []string{"mechanism A′", "T_f = ", "Definition 5", "Count queries", "relative error"}, 3, true},
	{"anatomy", "anat.csv", []string{"Anatomy", "groups", "Count queries"}, 2, true},
	{"global", "glob.csv", []string{"global randomization", "keep probability p", "Count queries"}, 2, true},
	{"bitflip-counts", "bf.counts.csv", []string{"bitflip, as a count table", "released records</td><td>400"}, 3, true},
	{"ddps-counts", "dd.counts.csv", []string{"DDPS, as a count table", "people (reports per round)</td><td>400"}, 1, true},
}

var (
	fixOnce sync.Once
	fixDir  string
	fixErr  error
)

// fixture makes one output of every kind from a 400-row table whose
// column a has the label evil, once per test binary.
func fixture(t *testing.T) string {
	t.Helper()
	fixOnce.Do(func() {
		fixDir, fixErr = os.MkdirTemp("", "pramkit-report-test")
		if fixErr == nil {
			fixErr = makeFixture(fixDir)
		}
	})
	if fixErr != nil {
		t.Fatal(fixErr)
	}
	return fixDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fixDir != "" {
		os.RemoveAll(fixDir)
	}
	os.Exit(code)
}

func makeFixture(dir string) error {
	as := []string{"x", evil, "y&z", "w"}
	var data strings.Builder
	data.WriteString("a,b,c\n")
	for i := range 400 {
		b := "no"
		if i%3 == 0 {
			b = "yes"
		}
		fmt.Fprintf(&data, "%q,%s,%d\n", as[(i*7)%4], b, i%5)
	}
	cb := `{"columns":[{"name":"a","categories":["x","<script>alert(1)</script>","y&z","w"]},{"name":"b","categories":["no","yes"]},{"name":"c","categories":["0","1","2","3","4"]}]}`
	queries := "query\nb=yes\n\"a=y&z,b=no\"\nc=3\n"
	for name, content := range map[string]string{"data.csv": data.String(), "cb.json": cb, "queries.csv": queries} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	seed := []string{"--seed", "7", "--insecure-seed"}
	steps := [][]string{
		{"sample", "--new-secret", "s.secret"},
		{"sample", "--secret", "s.secret", "-m", "200", "--columns", "a", "data.csv", "-o", "a.sample.csv"},
		{"sample", "--secret", "s.secret", "-m", "200", "--columns", "b", "data.csv", "-o", "b.sample.csv"},
		append([]string{"encrypt", "--codebook", "cb.json", "--key-out", "a.key", "a.sample.csv", "-o", "a.enc.csv"}, seed...),
		append([]string{"encrypt", "--codebook", "cb.json", "--key-out", "b.key", "b.sample.csv", "-o", "b.enc.csv"}, seed...),
		append([]string{"perturb", "--ledger", "ledger.jsonl", "--epsilon", "1", "a.enc.csv", "b.enc.csv", "-o", "rel.csv"}, seed...),
		{"decrypt", "--key", "a.key", "--key", "b.key", "rel.csv", "-o", "dec.csv"},
		// A release perturbed again: estimated with the combined γ.
		append([]string{"perturb", "--ledger", "ledger.jsonl", "--allow-recompose", "--epsilon", "1", "rel.csv", "-o", "rel2.csv"}, seed...),
		{"decrypt", "--key", "a.key", "--key", "b.key", "rel2.csv", "-o", "dec2.csv"},
		{"estimate", "--tabulate", "dec.csv", "-o", "counts.csv"},
		append([]string{"perturb", "--mechanism", "bitflip", "--lie", "0.2", "--columns", "a,b", "--codebook", "cb.json", "data.csv", "-o", "bf.csv"}, seed...),
		append([]string{"perturb", "--mechanism", "ddps", "--column", "a", "--pi-s", "0.3", "--codebook", "cb.json", "data.csv", "-o", "dd.csv"}, seed...),
		{"estimate", "--tabulate", "bf.csv", "-o", "bf.counts.csv"},
		{"estimate", "--tabulate", "dd.csv", "-o", "dd.counts.csv"},
		append([]string{"anonymize", "--sensitive", "a", "--l", "2", "--codebook", "cb.json", "data.csv", "-o", "an.csv"}, seed...),
		append([]string{"anonymize", "--mechanism", "anatomy", "--sensitive", "a", "--l", "2", "--codebook", "cb.json", "data.csv", "-o", "anat.csv", "--groups", "anat.groups.csv"}, seed...),
		append([]string{"anonymize", "--mechanism", "global", "--sensitive", "a", "--l", "2", "--codebook", "cb.json", "data.csv", "-o", "glob.csv"}, seed...),
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	if err := os.Chdir(dir); err != nil {
		return err
	}
	defer os.Chdir(wd)
	for _, st := range steps {
		tool, ok := tools.Lookup(st[0])
		if !ok {
			return fmt.Errorf("no tool %s", st[0])
		}
		if res := cmdtest.Run(tool.New, nil, st[1:]...); res.Code != 0 {
			return fmt.Errorf("%s: exit %d: %s", strings.Join(st, " "), res.Code, res.Stderr)
		}
	}
	return nil
}

func newCmd(s *cli.Streams) *cobra.Command { return report.NewCmd(s, nil) }

// reportOf writes the report of k's file (with the truth, queries and
// ledger) and returns its path.
func reportOf(t *testing.T, dir string, k kind) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), k.name+".html")
	j := func(n string) string { return filepath.Join(dir, n) }
	res := cmdtest.Run(newCmd, nil, j(k.file), "--truth", j("data.csv"), "--queries", j("queries.csv"), "--codebook", j("cb.json"), "--ledger", j("ledger.jsonl"), "-o", out)
	if res.Code != 0 {
		t.Fatalf("report %s: exit %d: %s", k.file, res.Code, res.Stderr)
	}
	if res.Stdout != "" || res.Stderr != "" {
		t.Errorf("report %s printed %q %q; want nothing", k.file, res.Stdout, res.Stderr)
	}
	return out
}

// TestReportEachKind writes a report of each kind and checks it is
// well-formed, self-contained, escapes the evil label, and says and draws
// what the kind needs.
func TestReportEachKind(t *testing.T) {
	dir := fixture(t)
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			doc, err := os.ReadFile(reportOf(t, dir, k))
			if err != nil {
				t.Fatal(err)
			}
			charts := checkHTML(t, doc)
			if len(charts) != k.charts {
				t.Errorf("%d charts, want %d", len(charts), k.charts)
			}
			for _, s := range k.says {
				if !bytes.Contains(doc, []byte(s)) {
					t.Errorf("the report does not say %q", s)
				}
			}
			for _, s := range []string{"Privacy:", "written by pramkit", "Mechanism and parameters"} {
				if !bytes.Contains(doc, []byte(s)) {
					t.Errorf("the report does not say %q", s)
				}
			}
			if k.labels {
				if !bytes.Contains(doc, []byte("&lt;script&gt;alert(1)&lt;/script&gt;")) {
					t.Error("the label <script>alert(1)</script> is not shown escaped")
				}
				if !bytes.Contains(doc, []byte("codebook hash (SHA-256)")) {
					t.Error("no codebook hash")
				}
			}
		})
	}
}

// checkHTML parses doc as XML, strictly (the report is XHTML-compatible),
// checks that it loads nothing (no script, image, frame, link, src, href
// or url()) and that each chart is a figure holding one svg; it returns
// the charts' svg elements.
func checkHTML(t *testing.T, doc []byte) (charts [][]byte) {
	t.Helper()
	if len(doc) > 1<<20 {
		t.Errorf("the report has %d bytes, more than 1 MiB", len(doc))
	}
	if bytes.Contains(doc, []byte("url(")) {
		t.Error("the report holds url(…)")
	}
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	var stack []string
	var svgStart int64
	figures, tables, th := 0, 0, 0
	ids := map[string]bool{}
	var links []string
	for {
		off := d.InputOffset()
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			name := e.Name.Local
			switch name {
			case "script", "img", "image", "iframe", "object", "embed", "link", "base", "use", "audio", "video", "source":
				t.Errorf("element <%s> in the report", name)
			case "figure":
				figures++
			case "table":
				tables++
			case "th":
				th++
			case "svg":
				if len(stack) == 0 || stack[len(stack)-1] != "figure" {
					t.Errorf("an svg outside a figure, in %v", stack)
				}
				svgStart = off
			}
			for _, a := range e.Attr {
				switch strings.ToLower(a.Name.Local) {
				case "id":
					ids[a.Value] = true
				case "href":
					// Only links within the page (the contents of a report
					// of several files).
					if !strings.HasPrefix(a.Value, "#") || strings.ContainsAny(a.Value, ":/") {
						t.Errorf("<%s href=%q> in the report", name, a.Value)
					}
					links = append(links, a.Value[1:])
				case "src", "srcset", "action", "data", "xmlns", "formaction", "poster", "background":
					t.Errorf("<%s %s=%q> in the report", name, a.Name.Local, a.Value)
				}
				if strings.HasPrefix(strings.ToLower(a.Name.Local), "on") {
					t.Errorf("event handler <%s %s=…>", name, a.Name.Local)
				}
			}
			stack = append(stack, name)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
			if e.Name.Local == "svg" {
				charts = append(charts, doc[svgStart:d.InputOffset()])
			}
		}
	}
	if len(stack) != 0 {
		t.Errorf("unclosed elements %v", stack)
	}
	for _, l := range links {
		if !ids[l] {
			t.Errorf("a link to #%s, which the page does not have", l)
		}
	}
	if figures != len(charts) {
		t.Errorf("%d figures but %d charts", figures, len(charts))
	}
	if tables == 0 || th == 0 {
		t.Errorf("%d tables with %d header cells; want real tables", tables, th)
	}
	return charts
}

// TestReportRefuses checks the failures: one line naming the file and the
// fix, exit 1 for data and 2 for usage, and no output left behind.
func TestReportRefuses(t *testing.T) {
	dir := fixture(t)
	j := func(n string) string { return filepath.Join(dir, n) }
	out := filepath.Join(t.TempDir(), "r.html")
	cmdtest.ExpectFailures(t, newCmd, out, []cmdtest.Failure{
		{Name: "key file", Args: []string{j("a.key"), "-o", out}, Code: 1, Msg: "a.key"},
		{Name: "secret", Args: []string{j("s.secret"), "-o", out}, Code: 1, Msg: "s.secret"},
		{Name: "no metadata", Args: []string{j("data.csv"), "-o", out}, Code: 1, Msg: "has no pramkit metadata"},
		{Name: "sensitive table", Args: []string{j("anat.groups.csv"), "-o", out}, Code: 1, Msg: "report on the row table"},
		{Name: "missing", Args: []string{j("nope.csv"), "-o", out}, Code: 1, Msg: "nope.csv"},
		{Name: "truth is a release", Args: []string{j("dec.csv"), "--truth", j("bf.csv"), "-o", out}, Code: 1, Msg: "not an original table"},
		{Name: "level", Args: []string{j("dec.csv"), "--level", "1", "-o", out}, Code: 2, Msg: "--level"},
		{Name: "no file", Args: []string{"-o", out}, Code: 2, Msg: "arg"},
	})
	// Never over an input.
	res := cmdtest.Run(newCmd, nil, j("dd.csv"), "-o", j("dd.csv"))
	if res.Code == 0 || !strings.Contains(res.Stderr, "dd.csv") {
		t.Errorf("-o over the input: exit %d, %q", res.Code, res.Stderr)
	}
	if _, err := os.Stat(j("dd.csv")); err != nil {
		t.Fatal(err)
	}
	// Never over a key file.
	before, err := os.ReadFile(j("a.key"))
	if err != nil {
		t.Fatal(err)
	}
	res = cmdtest.Run(newCmd, nil, j("dd.csv"), "-o", j("a.key"))
	if after, _ := os.ReadFile(j("a.key")); res.Code == 0 || !bytes.Equal(before, after) {
		t.Errorf("-o over a key file: exit %d, %q; key changed: %v", res.Code, res.Stderr, !bytes.Equal(before, after))
	}
	// Not to a terminal.
	var o, e bytes.Buffer
	s := &cli.Streams{Out: &o, Err: &e, OutIsTerminal: true}
	if code := cli.Run(newCmd(s), []string{j("dd.csv")}, s); code != cli.ExitUsage || o.Len() != 0 {
		t.Errorf("to a terminal: exit %d, %d bytes written", code, o.Len())
	}
}

// TestReportOfSeveralFiles writes one page about every kind at once: one
// section each, with contents linking to them.
func TestReportOfSeveralFiles(t *testing.T) {
	dir := fixture(t)
	args := []string{"--truth", filepath.Join(dir, "data.csv")}
	for _, k := range kinds {
		args = append(args, filepath.Join(dir, k.file))
	}
	out := filepath.Join(t.TempDir(), "all.html")
	if res := cmdtest.Run(newCmd, nil, append(args, "-o", out)...); res.Code != 0 {
		t.Fatal(res.Stderr)
	}
	doc, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	checkHTML(t, doc)
	if n := bytes.Count(doc, []byte("<section id=")); n != len(kinds) {
		t.Errorf("%d sections, want %d", n, len(kinds))
	}
	if n := bytes.Count(doc, []byte(`<li><a href="#file-`)); n != len(kinds) {
		t.Errorf("%d entries in the contents, want %d", n, len(kinds))
	}
}

// TestReportOfManyValuesListsTheLargest: an anonymized column of 70,000
// values (more than countquery's 2^16 combinations, which answered each
// value's count query with a table of every value: O(V²), minutes) is
// reported in seconds, its table listing the 500 values of the largest
// counts with a note that says so, not all 70,000.
func TestReportOfManyValuesListsTheLargest(t *testing.T) {
	const V = 70000
	dir := t.TempDir()
	var data, cats strings.Builder
	data.WriteString("s,x\n")
	for i := range 2 * V {
		v := i % V
		if i%7 == 0 {
			v = i % 600 // 600 values of larger counts
		}
		if i%13 == 0 {
			v = 0 // the largest by far, listed whatever the draws of anonymize (v0 was left out of the 500 in 1 run of 6)
		}
		fmt.Fprintf(&data, "v%d,%d\n", v, i%3)
	}
	for v := range V {
		if v > 0 {
			cats.WriteByte(',')
		}
		fmt.Fprintf(&cats, "%q", fmt.Sprintf("v%d", v))
	}
	in := filepath.Join(dir, "t.csv")
	cb := filepath.Join(dir, "cb.json")
	an := filepath.Join(dir, "an.csv")
	if err := os.WriteFile(in, []byte(data.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cb, []byte(`{"columns":[{"name":"s","categories":[`+cats.String()+`]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tool, _ := tools.Lookup("anonymize")
	if res := cmdtest.Run(tool.New, nil, "--sensitive", "s", "--l", "3", "--codebook", cb, in, "-o", an); res.Code != 0 {
		t.Fatalf("anonymize: exit %d: %s", res.Code, res.Stderr)
	}
	out := filepath.Join(dir, "r.html")
	start := time.Now()
	if res := cmdtest.Run(newCmd, nil, an, "-o", out); res.Code != 0 {
		t.Fatalf("report: exit %d: %s", res.Code, res.Stderr)
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("report of %d values took %v", V, d)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if want := fmt.Sprintf("The 500 values of the largest counts, of %d", V); !strings.Contains(page, want) {
		t.Errorf("the page does not say %q", want)
	}
	if n := strings.Count(page, ">v"); n > 500+2*40+10 {
		t.Errorf("the page names %d values, want the 500 of the table and the charts' 40", n)
	}
	if !strings.Contains(page, ">v0<") {
		t.Errorf("v0, among the largest counts, is not listed")
	}
}

// An Anatomy release's groups table is checked with its codebook item read
// as a digest, and opened again with the text when the digest is not the
// release's: an edited item is refused with the file named — the damaged
// text with its parse error, and the release codebook's digest written in
// place of the text (which the digest comparison must not take for the
// text it stands for).
func TestReportAnatomyGroupsEditedCodebook(t *testing.T) {
	dir := fixture(t)
	relMeta := sidecarMeta(t, filepath.Join(dir, "anat.csv.meta.json"))
	for _, tc := range []struct {
		name, item, want string
	}{
		{"damaged text", `{"columns": [`, "ends early"},
		{"the release codebook's digest", release.CodebookDigest(relMeta["codebook"]), "not valid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := editedGroups(t, dir, tc.item)
			res := cmdtest.Run(newCmd, nil, filepath.Join(tmp, "anat.csv"), "-o", filepath.Join(tmp, "r.html"))
			if res.Code == 0 || !strings.Contains(res.Stderr, "anat.groups.csv") || !strings.Contains(res.Stderr, tc.want) {
				t.Errorf("exit %d, %q; want an error naming anat.groups.csv and %q", res.Code, res.Stderr, tc.want)
			}
		})
	}
	if res := cmdtest.Run(newCmd, nil, filepath.Join(dir, "anat.csv"), "-o", filepath.Join(t.TempDir(), "ok.html")); res.Code != 0 {
		t.Errorf("the release itself: exit %d, %q", res.Code, res.Stderr)
	}
}

// When the groups table, opened again for its codebook's text, cannot be
// opened the second time (removed or replaced meanwhile), report returns
// that error; it had closed a nil reader and panicked.
func TestReportAnatomyGroupsReopenFails(t *testing.T) {
	tmp := editedGroups(t, fixture(t), `{"columns": [`)
	opens := 0
	open := func(path string, opt table.ReadOptions) (table.Reader, error) {
		if filepath.Base(path) == "anat.groups.csv" {
			if opens++; opens == 2 {
				return nil, fmt.Errorf("%s: removed meanwhile", path)
			}
		}
		return table.Open(path, opt)
	}
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("panic: %v", r)
			}
		}()
		_, err = pkgreport.Build(pkgreport.Options{Files: []string{filepath.Join(tmp, "anat.csv")}, Open: open})
	}()
	if err == nil || !strings.Contains(err.Error(), "removed meanwhile") {
		t.Errorf("error %v, want the second open's", err)
	}
}

// sidecarMeta reads the "meta" items of a CSV sidecar.
func sidecarMeta(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]json.RawMessage
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	var meta map[string]string
	if err := json.Unmarshal(s["meta"], &meta); err != nil {
		t.Fatal(err)
	}
	return meta
}

// editedGroups copies the fixture's Anatomy release to a new directory,
// with item as its groups table's codebook item.
func editedGroups(t *testing.T, dir, item string) string {
	t.Helper()
	tmp := t.TempDir()
	for _, n := range []string{"anat.csv", "anat.csv.meta.json", "anat.groups.csv", "anat.groups.csv.meta.json"} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if n == "anat.groups.csv.meta.json" {
			var s map[string]json.RawMessage
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			meta := sidecarMeta(t, filepath.Join(dir, n))
			meta["codebook"] = item
			if s["meta"], err = json.Marshal(meta); err != nil {
				t.Fatal(err)
			}
			if b, err = json.Marshal(s); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(tmp, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tmp
}
