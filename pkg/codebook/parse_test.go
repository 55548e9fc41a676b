package codebook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// docExample is the example of the package documentation.
const docExample = `{"columns": [
  {"name": "sex", "categories": ["Female", "Male"]},
  {"name": "workclass", "categories": ["Private", "Self-emp-not-inc"], "missing": "?"},
  {"name": "age", "cuts": [25, 35, 45, 55, 65]},
  {"name": "hours-per-week", "cuts": [35, 41], "labels": ["part-time", "full-time", "over-time"]}
]}`

func mustParse(t testing.TB, s string) *Codebook {
	t.Helper()
	cb, err := Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cb
}

func TestParseBuildsTheDocumentedColumns(t *testing.T) {
	cb := mustParse(t, docExample)
	tests := []struct {
		name    string
		labels  []string
		numeric bool
		missing int // -1: none
	}{
		{"sex", []string{"Female", "Male"}, false, -1},
		{"workclass", []string{"Private", "Self-emp-not-inc", "?"}, false, 2},
		{"age", []string{"<25", "25-34", "35-44", "45-54", "55-64", "65+"}, true, -1},
		{"hours-per-week", []string{"part-time", "full-time", "over-time"}, true, -1},
	}
	if got := cb.Names(); !slices.Equal(got, []string{"sex", "workclass", "age", "hours-per-week"}) {
		t.Fatalf("Names() = %q", got)
	}
	for _, tt := range tests {
		c, ok := cb.Column(tt.name)
		if !ok {
			t.Fatalf("Column(%q) not found", tt.name)
		}
		if c.K() != len(tt.labels) || !slices.Equal(c.Labels(), tt.labels) {
			t.Errorf("%s: K=%d labels %q, want %q", tt.name, c.K(), c.Labels(), tt.labels)
		}
		if c.IsNumeric() != tt.numeric {
			t.Errorf("%s: IsNumeric() = %v", tt.name, c.IsNumeric())
		}
		mi, has := c.MissingIndex()
		if has != (tt.missing >= 0) || (has && mi != tt.missing) {
			t.Errorf("%s: MissingIndex() = %d, %v, want %d", tt.name, mi, has, tt.missing)
		}
		for i, l := range tt.labels {
			if c.Label(i) != l {
				t.Errorf("%s: Label(%d) = %q, want %q", tt.name, i, c.Label(i), l)
			}
		}
	}
	if _, ok := cb.Column("income"); ok {
		t.Error(`Column("income") found in a codebook without it`)
	}
}

func TestParseRejectsInvalidCodebooks(t *testing.T) {
	col := func(body string) string { return `{"columns": [` + body + `]}` }
	tests := []struct {
		name  string
		input string
		want  []string // substrings of the error
	}{
		{"not JSON", `{"columns": [}`, []string{"invalid JSON at line 1, column"}},
		{"truncated", `{"columns": [{"name": "a"`, []string{"ends early"}},
		{"empty file", " \n", []string{"the codebook is empty"}},
		{"top level list", `[{"name": "a"}]`, []string{`a codebook file is a JSON object`, "got a list"}},
		{"unknown top-level key", `{"columns": [], "version": 2}`, []string{`unknown key "version" at the top level`}},
		{"top-level key case", `{"Columns": []}`, []string{`unknown key "Columns"`}},
		{"columns twice", `{"columns": [{"name": "a", "categories": ["x"]}], "columns": []}`, []string{`"columns" appears twice`}},
		{"no columns", `{}`, []string{`no "columns" key`}},
		{"empty columns", `{"columns": []}`, []string{`"columns" is empty`}},
		{"columns not a list", `{"columns": {"name": "a"}}`, []string{`"columns" must be a list`}},
		{"columns null", `{"columns": null}`, []string{`"columns" must be a list`, "got null"}},
		{"trailing data", col(`{"name": "a", "categories": ["x"]}`) + ` {}`, []string{"unexpected data after the codebook"}},
		{"column not an object", col(`"sex"`), []string{"column #1 must be an object"}},
		{"unknown column key", col(`{"name": "sex", "catgories": ["F"]}`), []string{`column "sex" (#1): unknown key "catgories"`, "known: name, categories, cuts, labels, missing"}},
		{"column key case", col(`{"Name": "sex", "categories": ["F"]}`), []string{`column #1: unknown key "Name"`, "case-sensitive"}},
		{"duplicate column key", col(`{"name": "a", "name": "b", "categories": ["x"]}`), []string{`key "name" appears twice`}},
		{"null name", col(`{"name": null, "categories": ["x"]}`), []string{`"name" must be a string, got null`}},
		{"null in cuts", col(`{"name": "age", "cuts": [25, null]}`), []string{`"cuts" must be a list of numbers, but item #2 is null`}},
		{"string in cuts", col(`{"name": "age", "cuts": ["25"]}`), []string{`item #1 is the string "25"`}},
		{"number category", col(`{"name": "a", "categories": ["x", 2]}`), []string{`"categories" must be a list of strings, but item #2 is the number 2`}},
		{"categories not a list", col(`{"name": "a", "categories": "x"}`), []string{`"categories" must be a list of strings, got the string "x"`}},
		{"cut out of range", col(`{"name": "a", "cuts": [1e400]}`), []string{"item #1 (1e400) is out of the float64 range"}},
		{"no name", col(`{"categories": ["x"]}`), []string{`column "" (#1): has no "name"`}},
		{"name with spaces", col(`{"name": " sex", "categories": ["x"]}`), []string{"leading or trailing spaces"}},
		{"both kinds", col(`{"name": "a", "categories": ["x"], "cuts": [1]}`), []string{`column "a" (#1): has both "categories" and "cuts"`}},
		{"neither kind", col(`{"name": "a"}`), []string{`column "a" (#1): has neither "categories" nor "cuts"`}},
		{"labels on categories", col(`{"name": "a", "categories": ["x"], "labels": ["y"]}`), []string{`"labels" names the buckets of a numeric column`}},
		{"empty categories", col(`{"name": "a", "categories": []}`), []string{`column "a" (#1): "categories" is empty`}},
		{"only the missing token", col(`{"name": "a", "categories": ["?"], "missing": "?"}`), []string{`"categories" lists only the missing token "?"`}},
		{"numeric token in a numeric column", col(`{"name": "age", "cuts": [25], "missing": "-1"}`), []string{`missing token "-1" is a number`}},
		{"empty category", col(`{"name": "a", "categories": ["x", ""]}`), []string{"category #2 is empty", `declare a "missing" token`}},
		{"padded category", col(`{"name": "sex", "categories": [" Male"]}`), []string{`category #1 " Male" has leading or trailing spaces`}},
		{"duplicate category", col(`{"name": "sex", "categories": ["Male", "Female", "Male"]}`), []string{`column "sex" (#1): category "Male" appears twice (#1 and #3)`}},
		{"duplicate column", col(`{"name": "a", "categories": ["x"]}, {"name": "b", "categories": ["x"]}, {"name": "a", "cuts": [1]}`), []string{`column "a" appears twice (#1 and #3)`}},
		{"empty cuts", col(`{"name": "age", "cuts": []}`), []string{`column "age" (#1): "cuts" is empty`}},
		{"decreasing cuts", col(`{"name": "age", "cuts": [25, 35, 30]}`), []string{`column "age" (#1): cuts must be strictly increasing, but cut #3 (30) is not above cut #2 (35)`}},
		{"repeated cut", col(`{"name": "age", "cuts": [25, 25]}`), []string{"cut #2 (25) is not above cut #1 (25)"}},
		{"zero and minus zero", col(`{"name": "x", "cuts": [-0, 0]}`), []string{"cut #2 (0) is not above cut #1 (0)"}},
		{"too few labels", col(`{"name": "h", "cuts": [35, 41], "labels": ["a", "b"]}`), []string{"has 2 cuts, so 3 buckets, but 2 labels"}},
		{"duplicate labels", col(`{"name": "h", "cuts": [35], "labels": ["a", "a"]}`), []string{`label "a" names two buckets (#1 and #2)`}},
		{"empty label", col(`{"name": "h", "cuts": [35], "labels": ["a", ""]}`), []string{"label #2 is empty"}},
		{"empty missing token", col(`{"name": "a", "categories": ["x"], "missing": ""}`), []string{`column "a" (#1): "missing" is empty`}},
		{"padded missing token", col(`{"name": "a", "categories": ["x"], "missing": "? "}`), []string{`missing token "? " has leading or trailing spaces`}},
		{"missing token is a bucket", col(`{"name": "age", "cuts": [25], "missing": "25+"}`), []string{`missing token "25+" is also the label of bucket #2`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cb, err := Parse([]byte(tt.input))
			if err == nil {
				t.Fatalf("Parse accepted %s: %q", tt.input, cb.Names())
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "codebook.Parse: ") {
				t.Errorf("error %q does not start with the function name", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q\ndoes not contain %q", msg, w)
				}
			}
		})
	}
}

func TestParseErrorPositionsCountLines(t *testing.T) {
	_, err := Parse([]byte("{\"columns\": [\n  {\"name\": \"a\",\n   \"bogus\": 1}\n]}"))
	if err == nil || !strings.Contains(err.Error(), "line 3, column") {
		t.Fatalf("error %v does not point at line 3", err)
	}
}

func TestCheckKAllowsExactly2To31(t *testing.T) {
	// A codebook with 2^31 categories does not fit in a test's memory, so
	// the limit is checked on the function every constructor calls.
	if err := checkK(MaxK, "categories", "fix"); err != nil {
		t.Errorf("k = 2^31 rejected: %v", err)
	}
	err := checkK(MaxK+1, "categories", "bucket it")
	if err == nil || !strings.Contains(err.Error(), "2147483649 categories") || !strings.Contains(err.Error(), "bucket it") {
		t.Errorf("k = 2^31+1: error %v", err)
	}
}

func TestNewColumnRejectsNonFiniteCuts(t *testing.T) {
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := NewColumn(Spec{Name: "age", Cuts: []float64{1, x}})
		if err == nil || !strings.Contains(err.Error(), `codebook.NewColumn: column "age": cut #2`) {
			t.Errorf("cut %v: error %v", x, err)
		}
	}
	if _, err := NewColumn(Spec{Name: "a", Categories: []string{"\xff"}}); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Errorf("invalid UTF-8 category: error %v", err)
	}
}

func TestNewRejectsDuplicateAndZeroColumns(t *testing.T) {
	a, err := NewColumn(Spec{Name: "a", Categories: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(a, a); err == nil || !strings.Contains(err.Error(), `column "a" appears twice`) {
		t.Errorf("New(a, a): error %v", err)
	}
	if _, err := New(a, Column{}); err == nil || !strings.Contains(err.Error(), "column #2 was not built") {
		t.Errorf("New(a, zero): error %v", err)
	}
	if _, err := New(); err == nil {
		t.Error("New() accepted no columns")
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"columns": [{"name": "a", "cuts": [2, 1]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{bad, filepath.Join(dir, "absent.json")} {
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.HasPrefix(err.Error(), "codebook.Load: ") {
			t.Errorf("Load(%s): error %v does not name the file", path, err)
		}
	}
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(docExample), 0o644); err != nil {
		t.Fatal(err)
	}
	cb, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if cb.Hash() != mustParse(t, docExample).Hash() {
		t.Error("Load and Parse of the same bytes differ")
	}
}

func TestBucketLabelsFollowTheDocumentedStyles(t *testing.T) {
	tests := []struct {
		name string
		cuts []float64
		want []string
	}{
		{"ages", []float64{25, 35, 45, 55, 65}, []string{"<25", "25-34", "35-44", "45-54", "55-64", "65+"}},
		{"one cut", []float64{40}, []string{"<40", "40+"}},
		{"unit buckets", []float64{1, 2, 3}, []string{"<1", "1", "2", "3+"}},
		{"zero cut", []float64{0, 10}, []string{"<0", "0-9", "10+"}},
		{"large integers", []float64{1e6, 1 << 53}, []string{"<1000000", "1000000-9007199254740991", "9007199254740992+"}},
		{"beyond 2^53", []float64{1, 1<<53 + 2}, []string{"<1", "[1,9007199254740994)", ">=9007199254740994"}},
		{"fractions", []float64{0.5, 1, 2.25}, []string{"<0.5", "[0.5,1)", "[1,2.25)", ">=2.25"}},
		{"negative", []float64{-5, 0}, []string{"<-5", "[-5,0)", ">=0"}},
		{"tiny", []float64{1e-7}, []string{"<1e-7", ">=1e-7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := bucketLabels(tt.cuts); !slices.Equal(got, tt.want) {
				t.Errorf("bucketLabels(%v) = %q, want %q", tt.cuts, got, tt.want)
			}
		})
	}
}

func TestHashIgnoresLayoutAndSeesEveryLabel(t *testing.T) {
	base := mustParse(t, docExample)
	h := base.Hash()
	if len(h) != 64 {
		t.Fatalf("Hash() = %q, want 64 hex digits", h)
	}
	same := map[string]string{
		"one line":   strings.ReplaceAll(docExample, "\n", ""),
		"spread out": strings.NewReplacer("{", "{\n\t", ",", " ,\n ", ":", " : ").Replace(docExample),
		"keys reordered": `{"columns": [
			{"categories": ["Female", "Male"], "name": "sex"},
			{"missing": "?", "name": "workclass", "categories": ["Private", "Self-emp-not-inc"]},
			{"cuts": [25, 35, 45, 55, 65], "name": "age"},
			{"labels": ["part-time", "full-time", "over-time"], "cuts": [35, 41], "name": "hours-per-week"}]}`,
		"missing token listed last": strings.Replace(docExample, `"Self-emp-not-inc"], "missing"`, `"Self-emp-not-inc", "?"], "missing"`, 1),
		"generated labels written out": strings.Replace(docExample, `[25, 35, 45, 55, 65]}`,
			`[25, 35, 45, 55, 65], "labels": ["<25", "25-34", "35-44", "45-54", "55-64", "65+"]}`, 1),
		"cuts spelled differently": strings.Replace(docExample, `[25, 35, 45, 55, 65]`, `[2.5e1, 35.0, 45, 55, 65]`, 1),
		"escaped letters":          strings.Replace(docExample, `"Female"`, `"\u0046emale"`, 1),
	}
	for name, s := range same {
		if got := mustParse(t, s).Hash(); got != h {
			t.Errorf("%s: hash %s, want %s", name, got, h)
		}
	}
	different := map[string]string{
		"one label changed":      strings.Replace(docExample, `"Male"`, `"male"`, 1),
		"categories reordered":   strings.Replace(docExample, `["Female", "Male"]`, `["Male", "Female"]`, 1),
		"missing token moved":    strings.Replace(docExample, `["Private", "Self-emp-not-inc"]`, `["?", "Private", "Self-emp-not-inc"]`, 1),
		"missing token changed":  strings.Replace(docExample, `"missing": "?"`, `"missing": "NA"`, 1),
		"missing token dropped":  strings.Replace(docExample, `, "missing": "?"`, ``, 1),
		"cut moved":              strings.Replace(docExample, `[35, 41]`, `[35, 42]`, 1),
		"bucket label changed":   strings.Replace(docExample, `"over-time"`, `"overtime"`, 1),
		"column renamed":         strings.Replace(docExample, `"name": "sex"`, `"name": "gender"`, 1),
		"categorical vs numeric": strings.Replace(docExample, `{"name": "age", "cuts": [25, 35, 45, 55, 65]}`, `{"name": "age", "categories": ["<25", "25-34", "35-44", "45-54", "55-64", "65+"]}`, 1),
	}
	for name, s := range different {
		if got := mustParse(t, s).Hash(); got == h {
			t.Errorf("%s: hash unchanged", name)
		}
	}
	// Order-sensitive: the joint alphabet's order is part of the codebook.
	rev, err := base.Select([]string{"workclass", "sex", "age", "hours-per-week"})
	if err != nil {
		t.Fatal(err)
	}
	if rev.Hash() == h {
		t.Error("reordering the columns kept the hash")
	}
}

func TestSelectKeepsTheAskedOrder(t *testing.T) {
	cb := mustParse(t, docExample)
	sub, err := cb.Select([]string{"age", "sex"})
	if err != nil {
		t.Fatal(err)
	}
	if got := sub.Names(); !slices.Equal(got, []string{"age", "sex"}) {
		t.Errorf("Select names %q", got)
	}
	want := mustParse(t, `{"columns": [{"name": "age", "cuts": [25, 35, 45, 55, 65]}, {"name": "sex", "categories": ["Female", "Male"]}]}`)
	if sub.Hash() != want.Hash() {
		t.Error("Select's hash differs from the hash of a file with those columns")
	}
	_, err = cb.Select([]string{"sex", "income"})
	if err == nil || !strings.Contains(err.Error(), `no column "income" in the codebook (known: sex, workclass, age, hours-per-week)`) {
		t.Errorf("unknown column: error %v", err)
	}
	if _, err := cb.Select([]string{"sex", "sex"}); err == nil || !strings.Contains(err.Error(), "asked for twice") {
		t.Errorf("duplicate column: error %v", err)
	}
}

func TestWriteIsCanonicalAndRoundTrips(t *testing.T) {
	inputs := []string{
		docExample,
		strings.Replace(docExample, `"Self-emp-not-inc"], "missing"`, `"Self-emp-not-inc", "?"], "missing"`, 1),
		`{"columns": [{"name": "x\"y", "categories": ["<=50K", "a\\b", "tab\there", "é", "\u0001"], "missing": "?"},
		  {"name": "w", "cuts": [-1e-7, 0.5, 1e21, 1.5e300], "missing": "NA"},
		  {"name": "m", "categories": ["?", "a"], "missing": "?"}]}`,
	}
	for _, in := range inputs {
		cb := mustParse(t, in)
		var buf bytes.Buffer
		if err := cb.Write(&buf); err != nil {
			t.Fatal(err)
		}
		again := mustParse(t, buf.String())
		assertSameCodebook(t, cb, again)
		var buf2 bytes.Buffer
		if err := again.Write(&buf2); err != nil {
			t.Fatal(err)
		}
		if buf.String() != buf2.String() {
			t.Errorf("Write is not idempotent:\n%s\n%s", buf.String(), buf2.String())
		}
	}
	got := new(bytes.Buffer)
	if err := mustParse(t, docExample).Write(got); err != nil {
		t.Fatal(err)
	}
	if got.String() != docExample+"\n" {
		t.Errorf("Write of the documented example:\n%s\nwant:\n%s", got, docExample)
	}
	html := new(bytes.Buffer)
	if err := mustParse(t, `{"columns": [{"name": "income", "categories": [">50K", "<=50K"]}]}`).Write(html); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), `[">50K", "<=50K"]`) {
		t.Errorf("Write escaped a readable label: %s", html)
	}
}

// assertSameCodebook checks that a and b have the same columns and hash.
func assertSameCodebook(t testing.TB, a, b *Codebook) {
	t.Helper()
	if a.Hash() != b.Hash() {
		t.Errorf("hashes differ: %s vs %s", a.Hash(), b.Hash())
	}
	if len(a.Columns) != len(b.Columns) {
		t.Fatalf("%d vs %d columns", len(a.Columns), len(b.Columns))
	}
	for i := range a.Columns {
		ca, cb := &a.Columns[i], &b.Columns[i]
		ma, _ := ca.MissingIndex()
		mb, _ := cb.MissingIndex()
		if ca.Name() != cb.Name() || !slices.Equal(ca.Labels(), cb.Labels()) || !slices.Equal(ca.Cuts(), cb.Cuts()) ||
			ca.IsNumeric() != cb.IsNumeric() || ma != mb {
			t.Errorf("column #%d differs: %+v vs %+v", i+1, ca.Spec(), cb.Spec())
		}
	}
}

func TestCodebookEmbedsInJSON(t *testing.T) {
	type sidecar struct {
		Rows     int       `json:"rows"`
		Codebook *Codebook `json:"codebook"`
	}
	in := sidecar{Rows: 3, Codebook: mustParse(t, docExample)}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out sidecar
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("Unmarshal(%s): %v", data, err)
	}
	assertSameCodebook(t, in.Codebook, out.Codebook)
	bad := []byte(`{"rows": 3, "codebook": {"columns": [{"name": "a", "categories": ["x"], "extra": 1}]}}`)
	if err := json.Unmarshal(bad, &out); err == nil || !strings.Contains(err.Error(), `unknown key "extra"`) {
		t.Errorf("embedded codebook parsed loosely: error %v", err)
	}
}

func TestSpecRebuildsTheColumn(t *testing.T) {
	cb := mustParse(t, docExample)
	for i := range cb.Columns {
		c := &cb.Columns[i]
		again, err := NewColumn(c.Spec())
		if err != nil {
			t.Fatalf("%s: NewColumn(Spec()): %v", c.Name(), err)
		}
		a, _ := New(*c)
		b, _ := New(again)
		assertSameCodebook(t, a, b)
	}
}

// TestItemsCountsTheList: the capacity hint for a list counts its items
// by the commas outside strings and nested values, whatever the strings
// hold (commas, brackets, escaped quotes), and the bytes inside the
// strings, quotes left out, escapes as written.
func TestItemsCountsTheList(t *testing.T) {
	for _, tc := range []struct {
		list      string
		want, raw int
	}{
		{`[]`, 0, 0},
		{`[ ]`, 0, 0},
		{`["a"]`, 1, 1},
		{`["a", "b", "c"]`, 3, 3},
		{`["a,b", "c]", "{d"]`, 3, 7},
		{`["say \"hi\", ok", "x\\", "y"]`, 3, 18},
		{`[["x", "y"], {"k": [1, 2]}, "z"]`, 3, 4},
		{`[1, 2.5, -3]`, 3, 0},
	} {
		data := []byte(`{"v": ` + tc.list + `, "w": [9, 9]}`)
		p := &parser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
		for range 3 { // {, "v", [
			if _, err := p.dec.Token(); err != nil {
				t.Fatal(err)
			}
		}
		if got, raw := p.items(); got != tc.want || raw != tc.raw {
			t.Errorf("%s: items = %d, %d bytes; want %d, %d", tc.list, got, raw, tc.want, tc.raw)
		}
	}
}

// TestParseStringIsParse: ParseString gives what Parse gives of the same
// text, errors included, and a codebook that does not share the text's
// memory (its labels are copies, so the text may be freed).
func TestParseStringIsParse(t *testing.T) {
	for _, text := range []string{
		docExample,
		`{"columns": [{"name": "a", "categories": ["x\u00e9", "y\"z"], "missing": "?"}]}`,
		`{"columns": [{"name": "a", "categories": ["x", "x"]}]}`,
		`{"columns": [`,
		"",
	} {
		want, wantErr := Parse([]byte(text))
		got, err := ParseString(text)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Errorf("%q: error %v, want %v", text, err, wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if got.Hash() != want.Hash() || !slices.Equal(got.Names(), want.Names()) {
			t.Errorf("%q: ParseString gave %q (%s), Parse %q (%s)", text, got.Names(), got.Hash(), want.Names(), want.Hash())
		}
	}
	// The labels do not point into the text: text's bytes, changed after
	// the parse, are the string's.
	text := []byte(`{"columns": [{"name": "a", "categories": ["x", "y"]}]}`)
	cb, err := ParseString(unsafe.String(&text[0], len(text)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range text {
		text[i] = 'q'
	}
	if l := cb.Columns[0].Labels(); !slices.Equal(l, []string{"x", "y"}) {
		t.Errorf("labels %q after the text changed", l)
	}
}

// A syntax error names the line and column where the bad token or value
// starts, however many values came before it (the decoder's own offsets
// count only the bytes of the values it has decoded).
func TestSyntaxErrorNamesWhereTheBadValueStarts(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`{"columns": [{"name": "a", "categories": ["x", tru]}]}`, "line 1, column 48: invalid character ']'"},
		{`{"columns":[{"categories":[]},A0`, "line 1, column 31: invalid character 'A'"},
		{"{\"columns\": [\n  {\"name\": \"a\", \"categories\": [\"x\"]}\n  {\"name\": \"b\"}]}", "line 3, column 3: invalid character '{' after array element"},
		{`{"columns": [{"name": "a", "categories": ["x"] .}]}`, "line 1, column 48: invalid character '.' after object key:value pair"},
	} {
		for _, slow := range []bool{false, true} {
			_, err := parseWith([]byte(tc.text), slow)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s (decoder for every list: %v): %v; want %q", tc.text, slow, err, tc.want)
			}
		}
	}
}

// BenchmarkParseLargeCodebook parses a codebook of one column of 1M
// labels, as every tool does with a release of a high-cardinality column.
func BenchmarkParseLargeCodebook(b *testing.B) {
	const k = 1_000_000
	var buf bytes.Buffer
	buf.WriteString(`{"columns": [{"name": "id", "categories": [`)
	for i := range k {
		if i > 0 {
			buf.WriteString(", ")
		}
		fmt.Fprintf(&buf, `"v%07d"`, i)
	}
	buf.WriteString(`], "missing": "?"}]}`)
	for _, slow := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain-lists", true: "decoder"}[slow], func(b *testing.B) {
			for b.Loop() {
				if _, err := parseWith(buf.Bytes(), slow); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*k), "ns/label")
		})
	}
}

// TestParseLetsTheTextGoBeforeTheTables: once the text is read, the parser
// holds none of it, so a caller that passed its only reference (decrypt,
// estimate: a release's or a key file's item, taken out of the reader's
// Meta) has the text freed before the columns' label tables are built —
// at 4M labels, 45 MB of text that was live with 46 MB of labels and a
// 23 MB table. The finalizer of the text's memory must run while the
// columns are built, on both paths of the parser (plain lists from the
// bytes, and the decoder's).
func TestParseLetsTheTextGoBeforeTheTables(t *testing.T) {
	for _, slow := range []bool{false, true} {
		freed := make(chan struct{})
		var ranBeforeBuild bool
		afterScan = func() {
			for range 10 {
				runtime.GC()
				select {
				case <-freed:
					ranBeforeBuild = true
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
		cb, err := parseWith(freedText(t, freed), slow)
		afterScan = nil
		if err != nil {
			t.Fatal(err)
		}
		if !ranBeforeBuild {
			t.Errorf("slow = %v: the text was still reachable when the columns were built", slow)
		}
		if got := cb.Columns[0].K(); got != 3001 {
			t.Errorf("slow = %v: K = %d, want 3001", slow, got)
		}
	}
}

// freedText returns a codebook text of 3000 labels and a missing token
// in memory of its own, whose finalizer closes freed.
func freedText(t *testing.T, freed chan struct{}) []byte {
	t.Helper()
	var sb strings.Builder
	sb.WriteString(`{"columns": [{"name": "a", "categories": [`)
	for i := range 3000 {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "%q", fmt.Sprint("v", i))
	}
	sb.WriteString(`], "missing": "?"}]}`)
	b := make([]byte, sb.Len())
	copy(b, sb.String())
	runtime.SetFinalizer(&b[0], func(*byte) { close(freed) })
	return b
}
