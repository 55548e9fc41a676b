package pad

import (
	"fmt"

	"github.com/pramkit/pramkit/pkg/rng"
)

// KeySize is the length in bytes of a PRF pad key: 256 bits, an AES-256 key.
const KeySize = rng.KeySize

// Key is the secret from which a Deriver computes pads.
type Key = rng.Key

// NewKey returns a key of 32 bytes from crypto/rand.
func NewKey() Key { return rng.NewKey() }

// Deriver computes pads as a pseudorandom function of (key, row, column).
// Secrecy is computational (AES-256 as a PRF), not information-theoretic:
// see the package documentation. A Deriver is safe for concurrent use.
//
// Construction. Pads are the row-keyed streams of rng.Keyed with the
// column as tag: for row i, column j and counter t, the 16-byte block
//
//	B(j, t, i) = j (4 bytes) ‖ t (4 bytes) ‖ i (8 bytes), big-endian
//
// is enciphered with AES-256 under the key; each output block gives two
// 64-bit words w, which are mapped to Z_k by Lemire's method
//
//	(hi, lo) = w·k as a 128-bit product; accept hi unless lo < 2^64 mod k
//
// (D. Lemire, "Fast Random Integer Generation in an Interval", ACM TOMACS
// 29(1), 2019). Accepted values are exactly uniform on Z_k when w is
// uniform, so there is no modulo bias; a word is rejected with probability
// (2^64 mod k)/2^64 < 2^-32, and then the next word (and then counters
// t = 1, 2, … ) is used. Because rows occupy the low 64 bits of the block,
// the blocks of consecutive rows at counter 0 are consecutive AES-CTR
// counter values, which is how Pads computes a batch (~7 ns per cell
// measured, against ~28 ns for one block at a time and ~1.2 µs for
// HMAC-SHA-256 → ChaCha8 per cell).
//
// The same construction serves one-time pads: encrypt draws a fresh run key
// from crypto/rand (or from --seed under --insecure-seed) and stores the
// pads it computes, so each row's pad depends on its index only and a run
// is the same at any core count and chunk size.
type Deriver struct {
	k *rng.Keyed
}

// NewDeriver returns a Deriver for key.
func NewDeriver(key Key) (*Deriver, error) {
	return &Deriver{k: rng.NewKeyed(key)}, nil
}

// Pad returns the pad of (row, column) on Z_k. It requires k ≥ 1.
func (d *Deriver) Pad(row uint64, column uint32, k uint32) uint32 {
	var b [16]byte
	d.k.Block(&b, column, 0, row)
	if v, ok := fromBlock(b[:], k); ok {
		return v
	}
	return d.retry(row, column, k)
}

// padChunk is the number of rows Pads enciphers per keystream call.
const padChunk = 256

// Pads sets dst[i] to the pad of (row0 + i, column) on Z_k, the same values
// Pad returns, computed in AES-CTR batches.
func (d *Deriver) Pads(dst []uint32, row0 uint64, column uint32, k uint32) error {
	if k < 1 {
		return fmt.Errorf("pad.Deriver.Pads: alphabet size k must be ≥ 1, got %d", k)
	}
	var buf [16 * padChunk]byte // on the stack: no allocation per call
	for start := 0; start < len(dst); start += padChunk {
		n := min(padChunk, len(dst)-start)
		ks := buf[:16*n]
		if err := d.k.Blocks(ks, column, row0+uint64(start)); err != nil {
			return fmt.Errorf("pad.Deriver.Pads: %w", err)
		}
		for i := range n {
			v, ok := fromBlock(ks[16*i:16*i+16], k)
			if !ok {
				v = d.retry(row0+uint64(start+i), column, k)
			}
			dst[start+i] = v
		}
	}
	return nil
}

// retry draws from counters t = 1, 2, … after both words of the counter-0
// block were rejected (probability < 2^-64).
func (d *Deriver) retry(row uint64, column uint32, k uint32) uint32 {
	var b [16]byte
	for t := uint32(1); ; t++ {
		d.k.Block(&b, column, t, row)
		if v, ok := fromBlock(b[:], k); ok {
			return v
		}
	}
}

// fromBlock maps the first acceptable of the block's two words to Z_k.
func fromBlock(b []byte, k uint32) (uint32, bool) {
	if v, ok := rng.Lemire(beUint64(b[0:8]), uint64(k)); ok {
		return uint32(v), true
	}
	v, ok := rng.Lemire(beUint64(b[8:16]), uint64(k))
	return uint32(v), ok
}

func beUint64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[7]) | uint64(b[6])<<8 | uint64(b[5])<<16 | uint64(b[4])<<24 |
		uint64(b[3])<<32 | uint64(b[2])<<40 | uint64(b[1])<<48 | uint64(b[0])<<56
}
