package codebook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// TestEmittedJSONIsTheWholeJSON: the pieces EmitFileJSON and
// EmitCompactJSON give make FileJSON's and CompactJSON's bytes — labels
// with escapes and multi-byte runes, a missing token, a binned column —
// in pieces of jsonPiece bytes and at most one label more, and an error
// from emit stops the writing and is returned.
func TestEmittedJSONIsTheWholeJSON(t *testing.T) {
	defer func(old int) { jsonPiece = old }(jsonPiece)
	jsonPiece = 100
	var cats []string
	for i := range 500 {
		cats = append(cats, fmt.Sprintf("v%d é\"<%d>", i, i))
	}
	a, err := NewColumn(Spec{Name: "s", Categories: cats, Missing: "?"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewColumn(Spec{Name: "age", Cuts: []float64{25, 35}})
	if err != nil {
		t.Fatal(err)
	}
	cb, err := New(a, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		emit  func(func([]byte) error) error
		whole string
	}{
		{"file", cb.EmitFileJSON, cb.FileJSON()},
		{"compact", cb.EmitCompactJSON, cb.CompactJSON()},
	} {
		var got []byte
		pieces := 0
		err := tc.emit(func(p []byte) error {
			if len(p) > jsonPiece+40 {
				t.Errorf("%s: a piece of %d bytes", tc.name, len(p))
			}
			got = append(got, p...)
			pieces++
			return nil
		})
		if err != nil || string(got) != tc.whole {
			t.Errorf("%s: %d pieces, error %v; same bytes: %v", tc.name, pieces, err, string(got) == tc.whole)
		}
		if pieces < 10 {
			t.Errorf("%s: %d pieces", tc.name, pieces)
		}
		stop := errors.New("stop")
		calls := 0
		if err := tc.emit(func([]byte) error { calls++; return stop }); err != stop || calls != 1 {
			t.Errorf("%s: emit failing: %v after %d calls", tc.name, err, calls)
		}
	}
}
