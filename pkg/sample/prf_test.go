package sample

import "testing"

// TestPositionsArePositions: the batched keystream gives each position's
// Position, for runs shorter and longer than a batch, at 0, in the
// middle of the range and where the counter would wrap into the tag.
func TestPositionsArePositions(t *testing.T) {
	p, err := NewPRF([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	top := ^uint64(0)
	for _, tc := range []struct {
		pos0 uint64
		n    int
	}{{0, 1}, {0, 700}, {1 << 40, positionBatch}, {12345, positionBatch + 1}, {top - 300, 200}, {top - 300, 301}, {top, 1}, {top - 10, 11},
		{top - 10, 600}, {top - 1, 4}} { // the last two wrap, as Position's uint64 does
		got := make([]Priority, tc.n)
		p.Positions(got, tc.pos0)
		for i, g := range got {
			if want := p.Position(tc.pos0 + uint64(i)); g != want {
				t.Fatalf("Positions from %d, row %d: %v, want Position's %v", tc.pos0, i, g, want)
			}
		}
	}
}
