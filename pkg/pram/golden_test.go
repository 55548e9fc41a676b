package pram

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"testing"
)

// TestKeyedOffsetsKnownAnswer pins the keyed offset stream: a part of a
// sample retried under the same --noise-key must reproduce the rows an
// earlier run released, so the construction may never change. The digest
// is of the perturbed rows 2^33−17 … +19 999 of a zero table in
// Z_3 × Z_5 × Z_1000 (γ = 2, many moves) and Z_2 (γ = 1.5), as computed by
// the original implementation.
func TestKeyedOffsetsKnownAnswer(t *testing.T) {
	h := sha256.New()
	for _, tc := range []struct {
		gamma float64
		ks    []uint32
	}{{2, []uint32{3, 5, 1000}}, {1.5, []uint32{2}}, {1e6, []uint32{7, 7}}} {
		m := mustMechanism(t, tc.gamma, tc.ks...)
		ko, err := NewKeyedOffsets(m, testNoiseKey(11))
		if err != nil {
			t.Fatal(err)
		}
		cols := make([][]uint32, len(tc.ks))
		for j := range cols {
			cols[j] = make([]uint32, 20000)
		}
		if err := ko.PerturbColumns(1<<33-17, cols); err != nil {
			t.Fatal(err)
		}
		for _, c := range cols {
			for _, x := range c {
				binary.Write(h, binary.BigEndian, x)
			}
		}
	}
	const want = "8da7785675f9a32eaad6e2a3bfe81361c5a2545ff333e79bd1b3ad085a6dddb9"
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Fatalf("keyed offsets digest %s, want %s: the construction changed, a retried --noise-key part would differ", got, want)
	}
}
