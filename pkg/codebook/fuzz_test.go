package codebook

import (
	"bytes"
	"math"
	"os"
	"strconv"
	"testing"
)

// FuzzParse checks that Parse never panics and that whatever it accepts
// survives Write → Parse with the same columns, hash and bytes, and encodes
// its own labels and cut points to the right indices.
//
//	go test -fuzz FuzzParse ./pkg/codebook
func FuzzParse(f *testing.F) {
	seeds := []string{
		docExample,
		adultCountries,
		`{"columns": [{"name": "m", "categories": ["?", "a"], "missing": "?"}]}`,
		`{"columns": [{"name": "w", "cuts": [-1e-7, 0.5, 1e21, 1.5e300], "missing": "NA"}]}`,
		`{"columns": [{"name": "x\"y", "categories": ["<=50K", "a\\b", "\u00e9", "\u2028"]}]}`,
		`{"columns": [{"name": "h", "cuts": [35, 41], "labels": ["<35", "35-40", "41+"]}]}`,
		`{"columns": [{"name": "a", "cuts": [-0]}, {"name": "b", "cuts": [0x10]}]}`,
		`{"columns": [{"name": "a", "categories": ["x"]}]} {}`,
		`{"columns": [{"name": "a", "categories": ["x"], "name": "b"}]}`,
		`{"columns": [{"name": "age", "cuts": [25, null]}]}`,
		`{"columns": []}`,
		`[]`,
		``,
	}
	if data, err := os.ReadFile(adultCodebook); err == nil {
		seeds = append(seeds, string(data))
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cb, err := Parse(data)
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := cb.Write(&out); err != nil {
			t.Fatal(err)
		}
		again, err := Parse(out.Bytes())
		if err != nil {
			t.Fatalf("Parse rejects Write's output %q: %v", out.Bytes(), err)
		}
		assertSameCodebook(t, cb, again)
		var out2 bytes.Buffer
		if err := again.Write(&out2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), out2.Bytes()) {
			t.Fatalf("Write is not idempotent:\n%s\n%s", out.Bytes(), out2.Bytes())
		}
		for i := range cb.Columns {
			checkEncodesItself(t, &cb.Columns[i])
		}
	})
}

// checkEncodesItself checks that a categorical column encodes each label to
// its index, and a numeric one each cut c_i to bucket i (and the number just
// below it to bucket i−1).
func checkEncodesItself(t *testing.T, c *Column) {
	t.Helper()
	e, err := c.Encoder(Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if !c.IsNumeric() {
		for i := range c.K() {
			if got, err := e.Index(c.Label(i)); err != nil || got != uint32(i) {
				t.Fatalf("%q: Index(%q) = %d, %v; want %d", c.Name(), c.Label(i), got, err, i)
			}
		}
		return
	}
	for i, x := range c.Cuts() {
		if got, err := e.Index(strconv.FormatFloat(x, 'g', -1, 64)); err != nil || got != uint32(i+1) {
			t.Fatalf("%q: cut %v → %d, %v; want %d", c.Name(), x, got, err, i+1)
		}
		below := math.Nextafter(x, math.Inf(-1))
		if got, err := e.Index(strconv.FormatFloat(below, 'g', -1, 64)); err != nil || got != uint32(i) {
			t.Fatalf("%q: %v (just below cut %v) → %d, %v; want %d", c.Name(), below, x, got, err, i)
		}
	}
	if mi, ok := c.MissingIndex(); ok {
		if got, err := e.Index(c.Label(mi)); err != nil || got != uint32(mi) {
			t.Fatalf("%q: missing token → %d, %v; want %d", c.Name(), got, err, mi)
		}
	}
}

// FuzzParsePlainListsAsTheDecoder checks that reading a list of plain
// strings without the decoder (plainStrings) changes nothing: Parse with
// and without that path accepts the same input into the same codebook, or
// refuses it with the same message, position included.
//
//	go test -fuzz FuzzParsePlainListsAsTheDecoder ./pkg/codebook
func FuzzParsePlainListsAsTheDecoder(f *testing.F) {
	for _, s := range []string{
		docExample,
		adultCountries,
		`{"columns": [{"name": "a", "categories": []}]}`,
		`{"columns": [{"name": "a", "categories": [ "x" ,"y"	,
"z" ], "missing": "?"}, {"name": "b", "categories": ["p"]}]}`,
		`{"columns": [{"name": "a", "categories": ["x",]}]}`,
		`{"columns": [{"name": "a", "categories": ["x" "y"]}]}`,
		`{"columns": [{"name": "a", "categories": ["x", "y\n"]}]}`,
		`{"columns": [{"name": "a", "categories": ["x", "\u00e9", "é", "` + "\xff" + `"]}]}`,
		`{"columns": [{"name": "a", "categories": ["x", "y` + "\x01" + `"]}]}`,
		`{"columns": [{"name": "a", "categories": ["x", ["y"]]}]}`,
		`{"columns": [{"name": "a", "categories": ["x", 1]}]}`,
		`{"columns": [{"name": "a", "categories": ["x", "x"]}]}`,
		`{"columns": [{"name": "a", "categories": ["x"] x}]}`,
		`{"columns": [{"name": "a", "categories": ["x"]}, ]}`,
		`{"columns": [{"name": "a", "categories": ["x"]}]} {}`,
		`{"columns": [{"name": "a", "categories": ["x"]`,
		`{"columns": [{"name": "a", "categories": ["x"`,
		`{"columns": [{"categories": ["x"], "categories": ["y"], "name": "a"}]}`,
		`{"columns": [{"name": "h", "cuts": [35, 41], "labels": ["<35", "35-40", "41+"]}]}`,
		`{"columns": [{"name": "h", "cuts": [35], "labels": ["a", "b"] , "missing": "a"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, errFast := parseWith(data, false)
		slow, errSlow := parseWith(data, true)
		if (errFast == nil) != (errSlow == nil) || (errFast != nil && errFast.Error() != errSlow.Error()) {
			t.Fatalf("%q:\nfast path: %v\ndecoder:   %v", data, errFast, errSlow)
		}
		if errFast == nil {
			assertSameCodebook(t, fast, slow)
		}
	})
}
