package pad

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"testing"
)

// TestPadsKnownAnswer pins the pad stream: keys written by earlier versions
// (PRF key files) must keep decrypting, so the construction may never
// change. The digest is of the pads of rows 0..4999 of columns 0..2 on
// Z_k for several k, under testKey(5), as computed by the original
// implementation.
func TestPadsKnownAnswer(t *testing.T) {
	d := mustDeriver(t, testKey(5))
	h := sha256.New()
	v := make([]uint32, 5000)
	for _, k := range []uint32{2, 7, 1000, 1 << 31, 4294967295} {
		for col := uint32(0); col < 3; col++ {
			if err := d.Pads(v, 1<<33-17, col, k); err != nil {
				t.Fatal(err)
			}
			for _, x := range v {
				binary.Write(h, binary.BigEndian, x)
			}
		}
	}
	const want = "60fde2cac7d3ed6ef7de71554082e9ad87673e7a44ea50af2d18e9312a35c903"
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Fatalf("pad stream digest %s, want %s: the PRF construction changed, old key files would not decrypt", got, want)
	}
}
