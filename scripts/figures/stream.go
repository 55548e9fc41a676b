package main

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
)

// stream returns the ChaCha8 generator of the named sub-stream of seed,
// keyed by
//
//	SHA-256("pramkit/figures/v1" ‖ seed ‖ name)
//
// so that every figure, point and release draws independently and a run
// does not depend on how releases are spread over workers. rng.Derive is
// not used because it keeps only the first 24 bytes of the name: the
// names here ("error_vs_m/m=257/release=0", …) are longer, and releases
// 0, 1, … of a point would all get the same stream.
func stream(seed uint64, name string) *rand.Rand {
	h := sha256.New()
	h.Write([]byte("pramkit/figures/v1"))
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(name))
	var key [32]byte
	copy(key[:], h.Sum(nil))
	return rand.New(rand.NewChaCha8(key))
}
