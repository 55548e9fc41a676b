package release

import (
	"strings"
	"testing"

	"github.com/pramkit/pramkit/pkg/pad"
	"github.com/pramkit/pramkit/pkg/table"
)

func TestPartMetadataRoundTrip(t *testing.T) {
	const m = 100
	for _, p := range []Part{{0, 100}, {0, 40}, {40, 60}, {99, 1}} {
		meta := table.Meta{}
		p.Encode(meta, m)
		if _, ok := meta[KeyFirstRow]; ok == p.IsWhole(m) {
			t.Fatalf("%v: first_row present = %v, want %v (a whole file records no range)", p, ok, !p.IsWhole(m))
		}
		got, err := ReadPart(meta, "f", m)
		if err != nil || got != p {
			t.Fatalf("%v: read back %v, %v", p, got, err)
		}
	}
	for _, bad := range []table.Meta{
		{KeyFirstRow: "0"},
		{KeyFirstRow: "-1", KeyPartRows: "10"},
		{KeyFirstRow: "95", KeyPartRows: "10"},
		{KeyFirstRow: "0", KeyPartRows: "0"},
		{KeyFirstRow: "x", KeyPartRows: "1"},
	} {
		if _, err := ReadPart(bad, "f", m); err == nil || !strings.Contains(err.Error(), "f:") {
			t.Errorf("%v: accepted (%v)", bad, err)
		}
	}
}

func TestCheckPartsRefusesOverlapsAndGaps(t *testing.T) {
	names := []string{"a", "b", "c"}
	tests := []struct {
		parts []Part
		gaps  bool
		want  string // "" accepted
	}{
		{[]Part{{50, 50}, {0, 20}, {20, 30}}, false, ""},
		{[]Part{{0, 20}, {10, 30}, {40, 60}}, false, "a (rows [0, 20)) and b (rows [10, 40)) overlap"},
		{[]Part{{0, 20}, {30, 10}, {40, 60}}, false, "rows [20, 30) are in no part (b starts at row 30)"},
		{[]Part{{0, 20}, {20, 10}, {30, 60}}, false, "rows [90, 100) are in no part"},
		{[]Part{{0, 20}, {30, 10}, {40, 10}}, true, ""},
		{[]Part{{0, 20}, {0, 20}, {40, 10}}, true, "overlap"},
	}
	for _, tt := range tests {
		err := CheckParts(tt.parts, names, 100, tt.gaps)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v: %v", tt.parts, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%v: error %v, want %q", tt.parts, err, tt.want)
		}
	}
}

// TestSampleDigestIsRowMajorAndKeyed: the digest does not depend on how the
// rows are cut into blocks, and changes with a cell, the key and m.
func TestSampleDigestIsRowMajorAndKeyed(t *testing.T) {
	var k1, k2 pad.Key
	k2[0] = 1
	cols := [][]uint32{{1, 2, 3, 4}, {5, 6, 7, 8}}
	whole := NewSampleDigest(k1, 4)
	whole.Add(cols, 4)
	cut := NewSampleDigest(k1, 4)
	cut.Add([][]uint32{cols[0][:1], cols[1][:1]}, 1)
	cut.Add([][]uint32{cols[0][1:], cols[1][1:]}, 3)
	if whole.Sum() != cut.Sum() {
		t.Fatal("the digest depends on the blocks")
	}
	other := func(k pad.Key, m int64, c [][]uint32) string {
		d := NewSampleDigest(k, m)
		d.Add(c, 4)
		return d.Sum()
	}
	edited := [][]uint32{{1, 2, 3, 4}, {5, 6, 7, 9}}
	swapped := [][]uint32{{5, 2, 3, 4}, {1, 6, 7, 8}}
	for name, s := range map[string]string{"key": other(k2, 4, cols), "m": other(k1, 5, cols), "cell": other(k1, 4, edited), "swap": other(k1, 4, swapped)} {
		if s == whole.Sum() {
			t.Errorf("another %s gives the same digest", name)
		}
	}
}
