// Package rng supplies the randomness every pramkit mechanism draws from.
//
// Production runs use ChaCha8 (math/rand/v2), a cryptographically secure
// generator, seeded with 32 bytes from crypto/rand. A fixed seed makes a run
// reproducible; it exists for tests and experiments only, since anyone who
// knows the seed can undo the pads, the sample and the perturbation.
package rng

import (
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
)

// Source is the random source the mechanisms take. *rand.Rand satisfies it.
type Source = *rand.Rand

// New returns a ChaCha8 generator seeded from crypto/rand.
func New() *rand.Rand {
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		// crypto/rand.Read never returns an error on supported platforms
		// (Go ≥ 1.24 crashes the program instead), so this is unreachable.
		panic("rng: crypto/rand failed: " + err.Error())
	}
	return rand.New(rand.NewChaCha8(seed))
}

// NewSeeded returns a ChaCha8 generator whose whole stream is fixed by seed.
// For tests and experiments only: the output is predictable.
func NewSeeded(seed uint64) *rand.Rand {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:8], seed)
	copy(s[8:], "pramkit-seeded-rng-v1\x00\x00\x00")
	return rand.New(rand.NewChaCha8(s))
}

// Derive returns an independent generator for a named sub-stream of seed,
// so that one --seed can drive several mechanisms, figures or releases
// without their draws overlapping. The ChaCha8 key is
//
//	SHA-256("pramkit/rng/derive/v1" ‖ seed ‖ stream)
//
// so streams differ whenever their names differ, however long.
func Derive(seed uint64, stream string) *rand.Rand {
	h := sha256.New()
	h.Write([]byte("pramkit/rng/derive/v1"))
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(stream))
	var key [32]byte
	copy(key[:], h.Sum(nil))
	return rand.New(rand.NewChaCha8(key))
}

// FromFlag returns NewSeeded(seed) when the user set --seed, New() otherwise.
func FromFlag(seed uint64, set bool) *rand.Rand {
	if set {
		return NewSeeded(seed)
	}
	return New()
}
