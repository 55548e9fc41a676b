package codebook

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestCompactJSONIsJSONMarshal: AppendCompactJSON writes the bytes of
// json.Compact then json.HTMLEscape of MarshalJSON's (what json.Marshal
// writes for a Marshaler): categorical and binned columns, a missing
// token listed last and elsewhere, generated and given labels, and labels
// with quotes, backslashes, control characters, DEL, HTML characters,
// U+2028/U+2029 and other non-ASCII text. So does CompactJSON, as a
// string.
func TestCompactJSONIsJSONMarshal(t *testing.T) {
	var cols []Column
	for _, s := range []Spec{
		{Name: "sex", Categories: []string{"Female", "Male"}},
		{Name: "income", Categories: []string{"<=50K", ">50K", "a&b"}, Missing: "?"},
		{Name: "odd \"name\"", Categories: []string{"x\\y", "tab\there", "nl\nx", "del\x7f", "\x01", "é", "a\u2028b", "a\u2029b", "☃ <b>"}},
		{Name: "m", Categories: []string{"NA", "x"}, Missing: "NA"},
		{Name: "age", Cuts: []float64{-2e21, 1e-7, 25, 35.5, 2e21}},
		{Name: "hours", Cuts: []float64{10, 40}, Labels: []string{"<10", "10-40", ">=40"}, Missing: "?"},
	} {
		c, err := NewColumn(s)
		if err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	cb, err := New(cols...)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(cb)
	if err != nil {
		t.Fatal(err)
	}
	got := cb.AppendCompactJSON([]byte("prefix"))
	if !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Errorf("AppendCompactJSON:\n%s\njson.Marshal:\n%s", got, want)
	}
	if s := cb.CompactJSON(); s != string(want) {
		t.Errorf("CompactJSON:\n%s\njson.Marshal:\n%s", s, want)
	}
}

// TestFileJSONIsMarshalJSON: FileJSON is MarshalJSON's bytes, and each
// call's string is its own (a second call does not change the first).
func TestFileJSONIsMarshalJSON(t *testing.T) {
	c, err := NewColumn(Spec{Name: "income", Categories: []string{"<=50K", ">50K"}, Missing: "?"})
	if err != nil {
		t.Fatal(err)
	}
	cb, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := cb.MarshalJSON()
	a := cb.FileJSON()
	b := cb.FileJSON()
	if a != string(want) || b != a {
		t.Errorf("FileJSON %q, %q; MarshalJSON %q", a, b, want)
	}
}
