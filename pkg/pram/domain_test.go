package pram

import (
	"math"
	"testing"

	"github.com/pramkit/pramkit/pkg/rng"
)

func TestEncodeIsRowMajorAndDecodeInvertsIt(t *testing.T) {
	d, err := NewDomain([]uint32{3, 4, 5})
	if err != nil {
		t.Fatal(err)
	}
	// Hand value: g(1, 2, 3) = (1·4 + 2)·5 + 3 = 33.
	if g, err := d.Encode([]uint32{1, 2, 3}); err != nil || g != 33 {
		t.Fatalf("Encode(1,2,3) = %d, %v; want 33", g, err)
	}
	x := make([]uint32, 3)
	var want uint64
	for a := range uint32(3) {
		for b := range uint32(4) {
			for c := range uint32(5) {
				g, err := d.Encode([]uint32{a, b, c})
				if err != nil || g != want {
					t.Fatalf("Encode(%d,%d,%d) = %d, %v; want %d", a, b, c, g, err, want)
				}
				if err := d.Decode(g, x); err != nil || x[0] != a || x[1] != b || x[2] != c {
					t.Fatalf("Decode(%d) = %v, %v", g, x, err)
				}
				want++
			}
		}
	}
	if d.Size() != 60 || d.Dims() != 3 {
		t.Fatalf("Size %d Dims %d", d.Size(), d.Dims())
	}
}

func TestDecodeAboveTwoToThe32(t *testing.T) {
	// Indexes ≥ 2^32 take the 64-bit division path first.
	ks := []uint32{math.MaxInt32, 7, 1<<28 + 3} // K ≈ 7·2^59
	d, err := NewDomain(ks)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range [][]uint32{{0, 0, 1}, {1, 0, 0}, {ks[0] - 1, 6, ks[2] - 1}, {12345, 3, 999}} {
		g, err := d.Encode(x)
		if err != nil {
			t.Fatal(err)
		}
		back := make([]uint32, 3)
		if err := d.Decode(g, back); err != nil {
			t.Fatal(err)
		}
		for j := range x {
			if back[j] != x[j] {
				t.Fatalf("%v → %d → %v", x, g, back)
			}
		}
	}
	if d.Size() != uint64(ks[0])*7*uint64(ks[2]) {
		t.Fatalf("size %d", d.Size())
	}
}

func TestNewDomainValidates(t *testing.T) {
	tests := []struct {
		name string
		ks   []uint32
		ok   bool
	}{
		{"single trivial column", []uint32{1}, true},
		{"exactly 2^62", []uint32{1 << 31, 1 << 31}, true},
		{"2^62 − 1", []uint32{1<<31 - 1, 1<<31 + 1}, true},
		{"no columns", nil, false},
		{"empty alphabet", []uint32{3, 0}, false},
		{"2^63", []uint32{1 << 31, 1 << 31, 2}, false},
		{"2^62 + 2^31", []uint32{1<<31 + 1, 1 << 31}, false},
		{"product overflows 64 bits", []uint32{math.MaxUint32, math.MaxUint32, math.MaxUint32}, false},
	}
	for _, tt := range tests {
		_, err := NewDomain(tt.ks)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err = %v", tt.name, err)
		}
	}
}

func TestDomainChecksArguments(t *testing.T) {
	d, _ := NewDomain([]uint32{2, 3})
	if _, err := d.Encode([]uint32{1}); err == nil {
		t.Error("Encode: short row accepted")
	}
	if _, err := d.Encode([]uint32{1, 3}); err == nil {
		t.Error("Encode: component outside alphabet accepted")
	}
	if err := d.Decode(6, make([]uint32, 2)); err == nil {
		t.Error("Decode: index K accepted")
	}
	if err := d.Decode(0, make([]uint32, 3)); err == nil {
		t.Error("Decode: long destination accepted")
	}
	if err := d.Apply([]uint32{0, 3}, []uint32{0, 0}); err == nil {
		t.Error("Apply: cell outside alphabet accepted")
	}
	if err := d.Apply([]uint32{0, 0}, []uint32{2, 0}); err == nil {
		t.Error("Apply: offset outside alphabet accepted")
	}
	cells := []uint32{1, 2}
	if err := d.Apply(cells, []uint32{1, 2}); err != nil || cells[0] != 0 || cells[1] != 1 {
		t.Errorf("Apply (1,2)+(1,2) in Z_2×Z_3 = %v, %v; want (0,1)", cells, err)
	}
}

func TestDivMod32MatchesHardwareDivision(t *testing.T) {
	r := rng.NewSeeded(5)
	divisors := []uint32{1, 2, 3, 5, 7, 10, 16, 42, 1<<16 + 1, 1<<31 - 1, 1 << 31, 1<<31 + 1, math.MaxUint32 - 1, math.MaxUint32}
	for range 200 {
		divisors = append(divisors, r.Uint32N(math.MaxUint32)+1)
	}
	for _, k := range divisors {
		c := math.MaxUint64/uint64(k) + 1
		values := []uint32{0, 1, k - 1, k, math.MaxUint32, math.MaxUint32 - 1}
		for range 2000 {
			values = append(values, r.Uint32())
		}
		for _, a := range values {
			q, rem := divMod32(a, k, c)
			if q != a/k || rem != a%k {
				t.Fatalf("divMod32(%d, %d) = %d, %d; want %d, %d", a, k, q, rem, a/k, a%k)
			}
		}
	}
}
