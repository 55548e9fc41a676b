package bitflip

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

func TestLayoutEncodesOneHotAndBinaryGroups(t *testing.T) {
	l, err := NewLayout([]Group{
		{Name: "sex", Kind: Binary, Labels: []string{"Female", "Male"}},
		{Name: "race", Labels: []string{"White", "Black", "Asian", "Other"}},
		{Name: "const", Labels: []string{"only"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if l.Width() != 6 || l.Words() != 1 || l.Offset(1) != 1 || l.Offset(2) != 5 {
		t.Fatalf("width %d words %d offsets %d %d, want 6 1 1 5", l.Width(), l.Words(), l.Offset(1), l.Offset(2))
	}
	if l.MaxDistance() != 3 { // binary 1 + one-hot 2 + single-label 0
		t.Errorf("MaxDistance = %d, want 3", l.MaxDistance())
	}
	cases := []struct {
		values []int
		want   uint64
	}{
		{[]int{0, 0, 0}, 0b100010},
		{[]int{1, 2, 0}, 0b101001},
		{[]int{1, 3, 0}, 0b110001},
	}
	row := []uint64{^uint64(0)} // Encode must clear it
	for _, c := range cases {
		if err := l.Encode(c.values, row); err != nil || row[0] != c.want {
			t.Errorf("Encode(%v) = %b, %v; want %b", c.values, row[0], err, c.want)
		}
	}
	for _, bad := range [][]int{{2, 0, 0}, {0, 4, 0}, {0, -1, 0}, {0, 0}} {
		if err := l.Encode(bad, row); err == nil {
			t.Errorf("Encode(%v) accepted", bad)
		}
	}
	if err := l.Encode([]int{0, 0, 0}, make([]uint64, 2)); err == nil {
		t.Error("Encode into a 2-word row accepted for a 6-bit layout")
	}
}

func TestLayoutSpansWords(t *testing.T) {
	labels := make([]string, 70)
	for i := range labels {
		labels[i] = string(rune('A' + i))
	}
	l, err := NewLayout([]Group{{Name: "wide", Labels: labels}, {Name: "flag", Kind: Binary, Labels: []string{"n", "y"}}})
	if err != nil {
		t.Fatal(err)
	}
	row := make([]uint64, l.Words())
	if err := l.Encode([]int{66, 1}, row); err != nil {
		t.Fatal(err)
	}
	for i := range l.Width() {
		if Bit(row, i) != (i == 66 || i == 70) {
			t.Fatalf("bit %d = %v", i, Bit(row, i))
		}
	}
	SetBit(row, 66, false)
	SetBit(row, 3, true)
	if Bit(row, 66) || !Bit(row, 3) {
		t.Error("SetBit did not set")
	}
}

func TestNewLayoutRejectsInvalidGroups(t *testing.T) {
	cases := map[string][]Group{
		"no groups":         nil,
		"no name":           {{Labels: []string{"a", "b"}}},
		"duplicate name":    {{Name: "x", Labels: []string{"a"}}, {Name: "x", Labels: []string{"b"}}},
		"no labels":         {{Name: "x"}},
		"binary with three": {{Name: "x", Kind: Binary, Labels: []string{"a", "b", "c"}}},
		"duplicate label":   {{Name: "x", Labels: []string{"a", "a"}}},
		"unknown kind":      {{Name: "x", Kind: Kind(7), Labels: []string{"a"}}},
	}
	for name, groups := range cases {
		if _, err := NewLayout(groups); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestBitNameIsGroupEqualsLabelOfTheBit(t *testing.T) {
	l, err := NewLayout([]Group{
		{Name: "sex", Kind: Binary, Labels: []string{"Female", "Male"}},
		{Name: "color", Labels: []string{"red", "green", "blue"}},
		{Name: "flag", Kind: Binary, Labels: []string{"0", "1"}},
		{Name: "const", Labels: []string{"only"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"sex=Male", "color=red", "color=green", "color=blue", "flag=1", "const=only"}
	for i, w := range want {
		if got := l.BitName(i); got != w {
			t.Errorf("BitName(%d) = %q, want %q", i, got, w)
		}
	}
}

// The JSON form is the "layout" item of a bitflip release's metadata:
// perturb writes it, estimate reads it back.
func TestLayoutJSONRoundTrips(t *testing.T) {
	wide := make([]string, 70)
	for i := range wide {
		wide[i] = fmt.Sprintf("v%d", i)
	}
	cases := []struct {
		name   string
		groups []Group
		json   string // "" to skip the comparison
	}{
		{"binary, one-hot and a 0/1 column", []Group{
			{Name: "sex", Kind: Binary, Labels: []string{"Female", "Male"}},
			{Name: "color", Labels: []string{"red", "green", "blue"}},
			{Name: "flag", Kind: Binary, Labels: []string{"0", "1"}},
		}, `[{"name":"sex","kind":"binary","labels":["Female","Male"],"bits":["sex=Male"]},` +
			`{"name":"color","kind":"one-hot","labels":["red","green","blue"],"bits":["color=red","color=green","color=blue"]},` +
			`{"name":"flag","kind":"binary","labels":["0","1"],"bits":["flag=1"]}]`},
		{"single label", []Group{{Name: "const", Labels: []string{"only"}}},
			`[{"name":"const","kind":"one-hot","labels":["only"],"bits":["const=only"]}]`},
		{"labels needing escapes", []Group{{Name: "income", Kind: Binary, Labels: []string{">50K", `"<=50K"`}}},
			`[{"name":"income","kind":"binary","labels":["\u003e50K","\"\u003c=50K\""],"bits":["income=\"\u003c=50K\""]}]`},
		{"spanning two words", []Group{{Name: "wide", Labels: wide}, {Name: "y", Kind: Binary, Labels: []string{"n", "y"}}}, ""},
	}
	for _, c := range cases {
		l, err := NewLayout(c.groups)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.json != "" && string(b) != c.json {
			t.Errorf("%s: JSON\n%s\nwant\n%s", c.name, b, c.json)
		}
		var back Layout
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if back.Width() != l.Width() || back.NumGroups() != l.NumGroups() || back.MaxDistance() != l.MaxDistance() {
			t.Errorf("%s: read back width %d, %d groups, D = %d; want %d, %d, %d", c.name,
				back.Width(), back.NumGroups(), back.MaxDistance(), l.Width(), l.NumGroups(), l.MaxDistance())
		}
		for j := range l.NumGroups() {
			if !reflect.DeepEqual(back.Group(j), l.Group(j)) || back.Offset(j) != l.Offset(j) {
				t.Errorf("%s: group %d read back as %+v at %d, want %+v at %d", c.name, j, back.Group(j), back.Offset(j), l.Group(j), l.Offset(j))
			}
		}
		for i := range l.Width() {
			if back.BitName(i) != l.BitName(i) {
				t.Errorf("%s: bit %d read back as %q, want %q", c.name, i, back.BitName(i), l.BitName(i))
			}
		}
	}
}

func TestLayoutUnmarshalJSONRejectsInvalidLayouts(t *testing.T) {
	cases := map[string]string{
		"not JSON":                      `[{"name":`,
		"null":                          `null`,
		"no groups":                     `[]`,
		"unknown kind":                  `[{"name":"x","kind":"ternary","labels":["a","b","c"],"bits":["x=a","x=b","x=c"]}]`,
		"empty kind":                    `[{"name":"x","kind":"","labels":["a"],"bits":["x=a"]}]`,
		"binary with 3":                 `[{"name":"x","kind":"binary","labels":["a","b","c"],"bits":["x=b"]}]`,
		"duplicate name":                `[{"name":"x","kind":"one-hot","labels":["a"],"bits":["x=a"]},{"name":"x","kind":"one-hot","labels":["b"],"bits":["x=b"]}]`,
		"a bit missing":                 `[{"name":"x","kind":"one-hot","labels":["a","b"],"bits":["x=a"]}]`,
		"a bit renamed":                 `[{"name":"x","kind":"one-hot","labels":["a","b"],"bits":["x=a","x=c"]}]`,
		"bits reordered":                `[{"name":"x","kind":"one-hot","labels":["a","b"],"bits":["x=b","x=a"]}]`,
		"binary bit of the first label": `[{"name":"x","kind":"binary","labels":["a","b"],"bits":["x=a"]}]`,
	}
	for name, js := range cases {
		var l Layout
		if err := json.Unmarshal([]byte(js), &l); err == nil {
			t.Errorf("%s: %s accepted", name, js)
		}
	}
	if _, err := json.Marshal(Kind(7)); err == nil {
		t.Error("an unknown Kind marshalled")
	}
}
