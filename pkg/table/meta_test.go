package table

import (
	"encoding/json"
	"testing"
)

// spacedJSON is a json.Marshaler whose output has layout and characters
// that json.Marshal rewrites.
type spacedJSON string

func (s spacedJSON) MarshalJSON() ([]byte, error) { return []byte(s), nil }

// TestSetJSONOfAMarshalerIsJSONMarshal: SetJSON stores a Marshaler's
// output exactly as json.Marshal writes it — compacted, with '<', '>',
// '&', U+2028 and U+2029 escaped — though it copies it once.
func TestSetJSONOfAMarshalerIsJSONMarshal(t *testing.T) {
	for _, src := range []string{
		`{"columns": [` + "\n  " + `{"name": "age", "labels": ["<25", "25-34", ">=65"]}` + "\n]}",
		`{"a": "x & y", "b": ["\u2028", "\u2029", "\"q\""], "c": 1.5e3}`,
		`["plain", "ascii"]`,
		`""`,
	} {
		want, err := json.Marshal(spacedJSON(src))
		if err != nil {
			t.Fatal(err)
		}
		m := Meta{}
		if err := m.SetJSON("k", spacedJSON(src)); err != nil {
			t.Fatal(err)
		}
		if m["k"] != string(want) {
			t.Errorf("SetJSON of %q:\n got %s\nwant %s", src, m["k"], want)
		}
	}
	if err := (Meta{}).SetJSON("k", spacedJSON(`{"a": }`)); err == nil {
		t.Error("SetJSON accepted a Marshaler's invalid JSON")
	}
}
