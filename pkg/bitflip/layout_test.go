package bitflip

import (
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
