package pad

import (
	"crypto/aes"
	"crypto/cipher"
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// KeySize is the length in bytes of a PRF pad key: 256 bits, an AES-256 key.
const KeySize = 32

// Key is the secret from which a Deriver computes pads.
type Key [KeySize]byte

// NewKey returns a key of 32 bytes from crypto/rand.
func NewKey() Key {
	var k Key
	if _, err := crand.Read(k[:]); err != nil {
		// crypto/rand.Read never returns an error on supported platforms
		// (Go ≥ 1.24 crashes the program instead), so this is unreachable.
		panic("pad.NewKey: crypto/rand failed: " + err.Error())
	}
	return k
}

// Deriver computes pads as a pseudorandom function of (key, row, column).
// Secrecy is computational (AES-256 as a PRF), not information-theoretic:
// see the package documentation. A Deriver is safe for concurrent use: it
// holds only the expanded AES key, which enciphering only reads.
//
// Construction. For row i, column j and counter t, the 16-byte block
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
type Deriver struct {
	block cipher.Block
}

// NewDeriver returns a Deriver for key.
func NewDeriver(key Key) (*Deriver, error) {
	b, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, fmt.Errorf("pad.NewDeriver: %w", err)
	}
	return &Deriver{block: b}, nil
}

// Pad returns the pad of (row, column) on Z_k. It requires k ≥ 1.
func (d *Deriver) Pad(row uint64, column uint32, k uint32) uint32 {
	var in [16]byte
	putBlock(&in, column, 0, row)
	d.block.Encrypt(in[:], in[:]) // in place: one buffer escapes, not two
	if v, ok := fromBlock(in[:], k); ok {
		return v
	}
	return d.retry(row, column, k)
}

// padChunk is the number of rows Pads enciphers per keystream call; its
// buffer (16 bytes per row) is reused across chunks.
const padChunk = 256

// Pads sets dst[i] to the pad of (row0 + i, column) on Z_k, the same values
// Pad returns, computed in AES-CTR batches.
func (d *Deriver) Pads(dst []uint32, row0 uint64, column uint32, k uint32) error {
	if k < 1 {
		return fmt.Errorf("pad.Deriver.Pads: alphabet size k must be ≥ 1, got %d", k)
	}
	if len(dst) == 0 {
		return nil
	}
	if row0 > math.MaxUint64-uint64(len(dst)-1) {
		return fmt.Errorf("pad.Deriver.Pads: rows %d + %d overflow 64 bits", row0, len(dst))
	}
	var iv [16]byte
	putBlock(&iv, column, 0, row0)
	// CTR increments the 128-bit big-endian counter; the row is its low 64
	// bits and cannot wrap (checked above), so block i is B(column, 0, row0+i).
	stream := cipher.NewCTR(d.block, iv[:])
	buf := make([]byte, 16*padChunk)
	for start := 0; start < len(dst); start += padChunk {
		n := min(padChunk, len(dst)-start)
		ks := buf[:16*n]
		clear(ks)
		stream.XORKeyStream(ks, ks)
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
		putBlock(&b, column, t, row)
		d.block.Encrypt(b[:], b[:])
		if v, ok := fromBlock(b[:], k); ok {
			return v
		}
	}
}

// putBlock writes B(column, counter, row) into b.
func putBlock(b *[16]byte, column, counter uint32, row uint64) {
	binary.BigEndian.PutUint32(b[0:4], column)
	binary.BigEndian.PutUint32(b[4:8], counter)
	binary.BigEndian.PutUint64(b[8:16], row)
}

// fromBlock maps the first acceptable of the block's two words to Z_k.
func fromBlock(b []byte, k uint32) (uint32, bool) {
	if v, ok := uniformFromWord(binary.BigEndian.Uint64(b[0:8]), k); ok {
		return v, true
	}
	return uniformFromWord(binary.BigEndian.Uint64(b[8:16]), k)
}

// uniformFromWord is one step of Lemire's method: it maps a uniform 64-bit
// word to Z_k, or reports a rejection.
func uniformFromWord(w uint64, k uint32) (uint32, bool) {
	hi, lo := bits.Mul64(w, uint64(k))
	if lo < uint64(k) {
		thresh := -uint64(k) % uint64(k) // 2^64 mod k
		if lo < thresh {
			return 0, false
		}
	}
	return uint32(hi), true
}
