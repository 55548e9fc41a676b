package codebook

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/pkg/rng"
)

func mustEncoder(t testing.TB, cb *Codebook, name string, p Policy) *Encoder {
	t.Helper()
	c, ok := cb.Column(name)
	if !ok {
		t.Fatalf("no column %q", name)
	}
	e, err := c.Encoder(p)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestIndexInvertsLabel(t *testing.T) {
	cb := mustParse(t, docExample)
	encs, err := cb.Encoders(Policy{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range encs {
		c := e.Column()
		if c.IsNumeric() {
			continue // bucket labels are not values; see TestNumericIndexFindsTheBucket
		}
		for i := range c.K() {
			got, err := e.Index(c.Label(i))
			if err != nil || got != uint32(i) {
				t.Errorf("%s: Index(Label(%d) = %q) = %d, %v", c.Name(), i, c.Label(i), got, err)
			}
		}
	}
}

func TestNumericIndexFindsTheBucket(t *testing.T) {
	// Buckets of cuts 25, 35, 45, 55, 65: (−∞,25) [25,35) [35,45) [45,55) [55,65) [65,∞).
	cb := mustParse(t, `{"columns": [{"name": "age", "cuts": [25, 35, 45, 55, 65], "missing": "?"}]}`)
	e := mustEncoder(t, cb, "age", Policy{})
	below := func(x float64) string { return strconv.FormatFloat(math.Nextafter(x, math.Inf(-1)), 'g', -1, 64) }
	tests := []struct {
		value string
		want  uint32
	}{
		{"-1e300", 0},
		{"0", 0},
		{"-0", 0},
		{below(25), 0},
		{"25", 1}, // exactly on a cut: the bucket above
		{"25.0", 1},
		{"2.5e1", 1},
		{"0x19p0", 1}, // hexadecimal, as strconv.ParseFloat reads it
		{"34.999", 1},
		{below(35), 1},
		{"35", 2},
		{"44", 2},
		{"45", 3},
		{"55", 4},
		{below(65), 4},
		{"65", 5}, // on the last cut
		{"90", 5},
		{"1e300", 5},
		{"?", 6}, // missing token
		{"", 6},  // empty is missing
	}
	for _, tt := range tests {
		got, err := e.Index(tt.value)
		if err != nil || got != tt.want {
			t.Errorf("Index(%q) = %d, %v; want %d", tt.value, got, err, tt.want)
		}
	}
	// Every bucket's label names the bucket its lower cut falls in.
	c := e.Column()
	for i, cut := range c.Cuts() {
		got, _ := e.Index(strconv.FormatFloat(cut, 'g', -1, 64))
		if c.Label(int(got)) != c.Label(i+1) {
			t.Errorf("cut %v encodes to %q, want %q", cut, c.Label(int(got)), c.Label(i+1))
		}
	}
}

func TestNumericIndexRejectsNonNumbers(t *testing.T) {
	cb := mustParse(t, `{"columns": [{"name": "age", "cuts": [25, 35]}]}`)
	e := mustEncoder(t, cb, "age", Policy{})
	for _, v := range []string{"abc", "NaN", "nan", "Inf", "-Inf", "+Infinity", "1e400", "-1e400", " 25", "25 ", "25,5", "?"} {
		_, err := e.Index(v)
		var ve *ValueError
		if !errors.As(err, &ve) || ve.Kind != KindNotNumber || ve.Value != v || ve.Column != "age" {
			t.Errorf("Index(%q): error %v, want a KindNotNumber *ValueError", v, err)
		}
	}
}

func TestPoliciesDecideMissingAndUnknownValues(t *testing.T) {
	cb := mustParse(t, `{"columns": [
	  {"name": "workclass", "categories": ["Private", "State-gov"], "missing": "?"},
	  {"name": "sex", "categories": ["Female", "Male"]},
	  {"name": "age", "cuts": [25], "missing": "?"},
	  {"name": "hours", "cuts": [40]}]}`)
	const (
		ok   = iota // index returned
		drop        // ErrDrop
		fail        // *ValueError of kind wantKind
	)
	keep, dropP, failP := MissingKeep, MissingDrop, MissingFail
	tests := []struct {
		column   string
		value    string
		unknown  UnknownPolicy
		missing  MissingPolicy
		outcome  int
		want     uint32
		wantKind ErrorKind
	}{
		// Known values ignore the policies.
		{"workclass", "State-gov", UnknownFail, failP, ok, 1, 0},
		{"age", "30", UnknownFail, failP, ok, 1, 0},
		// Missing values (token or empty).
		{"workclass", "?", UnknownFail, keep, ok, 2, 0},
		{"workclass", "", UnknownFail, keep, ok, 2, 0},
		{"workclass", "?", UnknownFail, dropP, drop, 0, 0},
		{"workclass", "", UnknownFail, failP, fail, 0, KindMissing},
		{"workclass", "?", UnknownFail, failP, fail, 0, KindMissing},
		{"age", "?", UnknownFail, keep, ok, 2, 0},
		{"age", "", UnknownFail, dropP, drop, 0, 0},
		{"age", "?", UnknownFail, failP, fail, 0, KindMissing},
		{"sex", "", UnknownFail, keep, fail, 0, KindMissing}, // no missing category to keep it in
		{"sex", "", UnknownFail, dropP, drop, 0, 0},
		{"hours", "", UnknownFail, keep, fail, 0, KindMissing},
		// Unknown values.
		{"workclass", "Never-worked", UnknownFail, keep, fail, 0, KindUnknown},
		{"workclass", "Never-worked", UnknownMissing, keep, ok, 2, 0},
		{"workclass", "Never-worked", UnknownMissing, dropP, drop, 0, 0},
		{"workclass", "Never-worked", UnknownMissing, failP, fail, 0, KindUnknown},
		{"sex", "?", UnknownFail, keep, fail, 0, KindUnknown}, // "?" is not this column's token
		{"sex", "Other", UnknownMissing, keep, fail, 0, KindUnknown},
		{"sex", "Other", UnknownMissing, dropP, drop, 0, 0},
		{"age", "old", UnknownFail, keep, fail, 0, KindNotNumber},
		{"age", "NaN", UnknownMissing, keep, ok, 2, 0},
		{"age", "old", UnknownMissing, dropP, drop, 0, 0},
		{"hours", "many", UnknownMissing, keep, fail, 0, KindNotNumber},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%s=%q/unknown=%v/missing=%v", tt.column, tt.value, tt.unknown, tt.missing)
		e := mustEncoder(t, cb, tt.column, Policy{Unknown: tt.unknown, Missing: tt.missing})
		got, err := e.Index(tt.value)
		var ve *ValueError
		switch tt.outcome {
		case ok:
			if err != nil || got != tt.want {
				t.Errorf("%s: got %d, %v; want %d", name, got, err, tt.want)
			}
		case drop:
			if err != ErrDrop {
				t.Errorf("%s: got %d, %v; want ErrDrop", name, got, err)
			}
		case fail:
			if !errors.As(err, &ve) || ve.Kind != tt.wantKind || ve.Column != tt.column || ve.Value != tt.value {
				t.Errorf("%s: got %d, %v; want a *ValueError of kind %d", name, got, err, tt.wantKind)
			}
		}
	}
}

func TestValueErrorsSayTheFix(t *testing.T) {
	cb := mustParse(t, `{"columns": [
	  {"name": "sex", "categories": ["Female", "Male"]},
	  {"name": "workclass", "categories": ["Private", "State-gov"], "missing": "?"},
	  {"name": "country", "categories": ["a","b","c","d","e","f","g","h","i","j","k","l","m","n"]},
	  {"name": "age", "cuts": [25]}]}`)
	tests := []struct {
		column string
		value  string
		policy Policy
		want   string
	}{
		{"sex", "Foo", Policy{}, `value "Foo" is not in the codebook for column "sex" (known: Female, Male); add it to the codebook, or give the column a "missing" token in the codebook (for example "missing": "?") and pass --unknown missing`},
		{"workclass", "Foo", Policy{}, `value "Foo" is not in the codebook for column "workclass" (known: Private, State-gov, ?); add it to the codebook or pass --unknown missing`},
		{"sex", " Male", Policy{}, `(it has leading or trailing spaces: trim the data)`},
		{"country", "z", Policy{}, `(known: a, b, c, d, e, f, g, h, i, j, k, l, and 2 more)`},
		{"sex", "Foo", Policy{Unknown: UnknownMissing}, `--unknown missing needs a missing category, which the column lacks`},
		{"workclass", "Foo", Policy{Unknown: UnknownMissing, Missing: MissingFail}, `--unknown missing treats it as missing, which --missing fail refuses`},
		{"sex", "", Policy{}, `empty value in column "sex", which has no missing category; give the column a "missing" token in the codebook (for example "missing": "?"), or pass --missing drop`},
		{"workclass", "?", Policy{Missing: MissingFail}, `missing value "?" in column "workclass"; --missing fail refuses missing values: pass --missing keep`},
		{"age", "x", Policy{}, `value "x" in numeric column "age" is not a finite number; fix the value, or give the column a "missing" token`},
	}
	for _, tt := range tests {
		_, err := mustEncoder(t, cb, tt.column, tt.policy).Index(tt.value)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %q: error\n%v\nwant it to contain\n%s", tt.column, tt.value, err, tt.want)
		}
	}
}

func TestEncoderRejectsInvalidPolicies(t *testing.T) {
	cb := mustParse(t, docExample)
	c, _ := cb.Column("sex")
	for _, p := range []Policy{{Unknown: 2}, {Missing: 3}} {
		if _, err := c.Encoder(p); err == nil {
			t.Errorf("Encoder(%+v) accepted", p)
		}
	}
	var zero Column
	if _, err := zero.Encoder(Policy{}); err == nil {
		t.Error("the zero Column gave an encoder")
	}
}

func TestPolicyFlagSpellingsRoundTrip(t *testing.T) {
	for _, s := range []string{"fail", "missing"} {
		var p UnknownPolicy
		if err := p.Set(s); err != nil || p.String() != s {
			t.Errorf("UnknownPolicy.Set(%q): %v, String() = %q", s, err, p.String())
		}
	}
	for _, s := range []string{"keep", "drop", "fail"} {
		var p MissingPolicy
		if err := p.Set(s); err != nil || p.String() != s {
			t.Errorf("MissingPolicy.Set(%q): %v, String() = %q", s, err, p.String())
		}
	}
	var u UnknownPolicy
	if err := u.Set("ignore"); err == nil || !strings.Contains(err.Error(), "use fail or missing") {
		t.Errorf("UnknownPolicy.Set(ignore): %v", err)
	}
	var m MissingPolicy
	if err := m.Set("Keep"); err == nil || !strings.Contains(err.Error(), "use keep, drop, fail") {
		t.Errorf("MissingPolicy.Set(Keep): %v", err)
	}
	if (Policy{}) != (Policy{Unknown: UnknownFail, Missing: MissingKeep}) {
		t.Error("the zero Policy is not fail/keep")
	}
}

func TestIndexDoesNotAllocate(t *testing.T) {
	cb := mustParse(t, `{"columns": [
	  {"name": "workclass", "categories": ["Private", "State-gov", "Local-gov"], "missing": "?"},
	  {"name": "age", "cuts": [25, 35, 45, 55, 65], "missing": "?"}]}`)
	values := map[string][]string{
		"workclass": {"Private", "Local-gov", "?", "", "Never-worked"},
		"age":       {"17", "25", "38.5", "90", "?", ""},
	}
	for _, p := range []Policy{{}, {Unknown: UnknownMissing}, {Unknown: UnknownMissing, Missing: MissingDrop}} {
		for name, vs := range values {
			e := mustEncoder(t, cb, name, p)
			var sink uint32
			allocs := testing.AllocsPerRun(100, func() {
				for _, v := range vs {
					if v == "Never-worked" && p.Unknown == UnknownFail {
						continue // the error path may allocate
					}
					i, _ := e.Index(v)
					sink += i
				}
			})
			if allocs != 0 {
				t.Errorf("%s under %+v: %v allocations per run, want 0", name, p, allocs)
			}
		}
	}
}

var benchSink uint32

func BenchmarkIndexCategorical(b *testing.B) {
	cb := mustParse(b, adultCountries)
	e := mustEncoder(b, cb, "native-country", Policy{})
	values := cb.Columns[0].Labels()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		v, err := e.Index(values[i%len(values)])
		if err != nil {
			b.Fatal(err)
		}
		benchSink += v
	}
}

func BenchmarkIndexNumeric(b *testing.B) {
	cb := mustParse(b, `{"columns": [{"name": "age", "cuts": [25, 35, 45, 55, 65], "missing": "?"}]}`)
	e := mustEncoder(b, cb, "age", Policy{})
	values := make([]string, 0, 80)
	for a := 17; a <= 90; a++ {
		values = append(values, strconv.Itoa(a))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		v, err := e.Index(values[i%len(values)])
		if err != nil {
			b.Fatal(err)
		}
		benchSink += v
	}
}

// adultCountries is native-country from adult.names, the largest Adult
// column (k = 42).
const adultCountries = `{"columns": [{"name": "native-country", "categories": ["United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany", "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba", "Iran", "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam", "Mexico", "Portugal", "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan", "Haiti", "Columbia", "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand", "Yugoslavia", "El-Salvador", "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands"], "missing": "?"}]}`

func TestParseSmallIntAgreesWithParseFloat(t *testing.T) {
	values := []string{"0", "-0", "7", "-7", "007", "90", "999999999999999", "-999999999999999",
		"1000000000000000", "", "-", "+5", "5.", "1e3", "12a", "--1", "0x10", " 5"}
	r := rng.NewSeeded(3)
	for range 2000 {
		values = append(values, strconv.FormatInt(r.Int64N(2e15)-1e15, 10))
	}
	for _, v := range values {
		got, ok := parseSmallInt(v)
		want, err := strconv.ParseFloat(v, 64)
		if ok && (err != nil || got != want || math.Signbit(got) != math.Signbit(want)) {
			t.Errorf("parseSmallInt(%q) = %v, ParseFloat gives %v, %v", v, got, want, err)
		}
		digits := strings.TrimPrefix(v, "-")
		short := len(digits) > 0 && len(digits) <= 15 && strings.Trim(digits, "0123456789") == ""
		if ok != short {
			t.Errorf("parseSmallInt(%q) ok = %v, want %v", v, ok, short)
		}
	}
}

// IndexAll codes from the label table what Index codes so, and leaves the
// rest (missing, unknown, a numeric column's values) to Index: ok only
// where Index gives that same index without an error.
func TestIndexAllIsIndex(t *testing.T) {
	var cats []string
	for i := range 3000 {
		cats = append(cats, fmt.Sprintf("c%d", i))
	}
	for _, spec := range []Spec{
		{Name: "large", Categories: cats, Missing: "?"},
		{Name: "small", Categories: []string{"a", "?", "b"}, Missing: "?"},
		{Name: "n", Cuts: []float64{10, 20}, Missing: "NA"},
	} {
		col, err := NewColumn(spec)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := col.Encoder(Policy{Unknown: UnknownMissing})
		if err != nil {
			t.Fatal(err)
		}
		ss := []string{"c5", "?", "", "zz", "c2999", "a", "b", "15", "NA", "c17"}
		out, ok := make([]uint32, len(ss)), make([]bool, len(ss))
		enc.IndexAll(ss, out, ok)
		for i, s := range ss {
			x, err := enc.Index(s)
			missing, _ := col.MissingIndex()
			if ok[i] && (err != nil || x != out[i] || int(x) == missing) {
				t.Errorf("%s: IndexAll(%q) = %d; Index %d, %v", spec.Name, s, out[i], x, err)
			}
			if !ok[i] && !col.IsNumeric() && err == nil && int(x) != missing {
				t.Errorf("%s: IndexAll left %q, which Index codes %d from the table", spec.Name, s, x)
			}
		}
	}
}
