package rng

import (
	"crypto/aes"
	"crypto/cipher"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// KeySize is the length in bytes of a row-keyed stream key: an AES-256 key.
const KeySize = 32

// Key is the secret of a run's row-keyed streams.
type Key [KeySize]byte

// NewKey returns a key from crypto/rand.
func NewKey() Key {
	var k Key
	if _, err := crand.Read(k[:]); err != nil {
		// crypto/rand.Read never returns an error on supported platforms
		// (Go ≥ 1.24 crashes the program instead), so this is unreachable.
		panic("rng.NewKey: crypto/rand failed: " + err.Error())
	}
	return k
}

// SeededKey returns the key of a named stream of a --seed run:
//
//	SHA-256("pramkit/rng/key/v1" ‖ seed ‖ stream)
//
// For tests and experiments only: anyone who knows the seed has the key.
func SeededKey(seed uint64, stream string) Key {
	h := sha256.New()
	h.Write([]byte("pramkit/rng/key/v1"))
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(stream))
	var k Key
	copy(k[:], h.Sum(nil))
	return k
}

// RunKey is the key of a run's row-keyed streams: SeededKey(seed, stream)
// when seeded (a --seed run allowed to fix secrets), NewKey() otherwise.
func RunKey(seed uint64, seeded bool, stream string) Key {
	if seeded {
		return SeededKey(seed, stream)
	}
	return NewKey()
}

// Tag makes a stream tag from four ASCII bytes, big-endian ("PRAM" …).
// Tags below 2^24 are PRF pad columns (pkg/pad); named tags start with a
// letter, so they are ≥ 0x41000000 and never collide with a column.
func Tag(name string) uint32 {
	if len(name) != 4 {
		panic("rng.Tag: a tag has exactly 4 bytes, got " + name)
	}
	return binary.BigEndian.Uint32([]byte(name))
}

// Keyed derives randomness as a pseudorandom function of (key, tag, row):
// row i's draws depend only on the key, the tag and i — never on which
// rows came before it, how the table was cut into chunks or how many cores
// ran — so a seeded run is byte-identical at any GOMAXPROCS and chunk
// size, and a part of a table processed on its own (a retried part, a
// Beam or Spark bundle) gets exactly the draws the whole run gave its
// rows. Secrecy is computational: AES-256 used as a PRF.
//
// Row i's stream under tag τ is the AES-256 encipherment of the blocks
//
//	B(τ, t, i) = τ (4 bytes) ‖ t (4 bytes) ‖ i (8 bytes), big-endian,
//
// t = 0, 1, …, each giving two 64-bit big-endian words. Because the row is
// the block's low 64 bits, the counter-0 blocks of consecutive rows are
// consecutive AES-CTR counter values: Blocks computes a chunk of them in
// one keystream call (about 1 ns per block with AES-NI, against ~15 ns
// for one Encrypt call). This is the construction of PRF pads (pkg/pad,
// τ = column) and keyed PRAM offsets (pkg/pram, τ = "PRAM") since their
// first versions, kept bit for bit so that keys written then still work.
//
// A Keyed holds only the expanded AES key, which enciphering only reads,
// so it is safe for concurrent use.
type Keyed struct {
	block cipher.Block
}

// NewKeyed returns the row-keyed streams of key.
func NewKeyed(key Key) *Keyed {
	b, err := aes.NewCipher(key[:])
	if err != nil {
		panic("rng.NewKeyed: " + err.Error()) // a 32-byte key is always valid
	}
	return &Keyed{block: b}
}

// DrawKeyed returns the row-keyed streams of a key drawn from r: a run's
// key, drawn from its source (--seed, else crypto/rand), which the run
// then goes on drawing from (the shuffle of its output).
func DrawKeyed(r *rand.Rand) *Keyed {
	var k Key
	for i := 0; i < len(k); i += 8 {
		w := r.Uint64()
		for b := range 8 {
			k[i+b] = byte(w >> (8 * b))
		}
	}
	return NewKeyed(k)
}

// Block enciphers B(tag, t, row) into dst.
func (k *Keyed) Block(dst *[16]byte, tag, t uint32, row uint64) {
	binary.BigEndian.PutUint32(dst[0:4], tag)
	binary.BigEndian.PutUint32(dst[4:8], t)
	binary.BigEndian.PutUint64(dst[8:16], row)
	k.block.Encrypt(dst[:], dst[:])
}

// Blocks fills dst (a multiple of 16 bytes) with the counter-0 blocks
// B(tag, 0, row0), B(tag, 0, row0+1), … by AES-CTR: block i of dst is
// exactly what Block(tag, 0, row0+i) gives.
func (k *Keyed) Blocks(dst []byte, tag uint32, row0 uint64) error {
	n := len(dst) / 16
	if len(dst)%16 != 0 {
		return fmt.Errorf("rng.Keyed.Blocks: %d bytes is not a whole number of blocks", len(dst))
	}
	if n == 0 {
		return nil
	}
	if row0 > math.MaxUint64-uint64(n-1) {
		return fmt.Errorf("rng.Keyed.Blocks: rows %d + %d overflow 64 bits", row0, n)
	}
	var iv [16]byte
	binary.BigEndian.PutUint32(iv[0:4], tag)
	binary.BigEndian.PutUint64(iv[8:16], row0)
	// CTR increments the 128-bit big-endian counter; the row is its low 64
	// bits and cannot wrap (checked above).
	clear(dst)
	cipher.NewCTR(k.block, iv[:]).XORKeyStream(dst, dst)
	return nil
}

// Stream returns row's stream under tag, from its first word.
func (k *Keyed) Stream(tag uint32, row uint64) *Stream {
	return &Stream{k: k, tag: tag, row: row}
}

// Reset makes s the stream of (tag, row) from its first word, without an
// allocation: for loops over many rows.
func (k *Keyed) Reset(s *Stream, tag uint32, row uint64) {
	*s = Stream{k: k, tag: tag, row: row}
}

// Stream is one row's words, in order: both words of block t = 0, then of
// t = 1, …. It implements math/rand/v2's Source, so rand.New(s) gives the
// whole rand API on one row's stream. It is not safe for concurrent use.
type Stream struct {
	k   *Keyed
	tag uint32
	row uint64
	t   uint32
	buf [16]byte
	pos int // words of buf used: 0, 1 or 2; 0 with t == 0 means none yet
}

// Uint64 returns the stream's next word.
func (s *Stream) Uint64() uint64 {
	if s.pos == 0 || s.pos == 2 {
		s.k.Block(&s.buf, s.tag, s.t, s.row)
		s.t++
		s.pos = 0
	}
	w := binary.BigEndian.Uint64(s.buf[8*s.pos:])
	s.pos++
	return w
}

// Resume makes s the stream of (tag, row) positioned after the words of its
// counter-0 block that the caller already used (used = 1 or 2), given that
// block: the way a batch computed by Blocks falls back to the row's stream
// in the rare cases that need more words.
func (k *Keyed) Resume(s *Stream, tag uint32, row uint64, block0 []byte, used int) {
	*s = Stream{k: k, tag: tag, row: row, t: 1, pos: used}
	copy(s.buf[:], block0[:16])
}

// Uint64N returns a value uniform on [0, n) for n ≥ 1, by Lemire's method
// (no modulo bias).
func (s *Stream) Uint64N(n uint64) uint64 {
	for {
		if v, ok := Lemire(s.Uint64(), n); ok {
			return v
		}
	}
}

// Float64 returns a value uniform on [0, 1) with 53 random bits.
func (s *Stream) Float64() float64 {
	return float64(s.Uint64()>>11) / (1 << 53)
}

// Lemire is one step of Lemire's method (D. Lemire, "Fast Random Integer
// Generation in an Interval", ACM TOMACS 29(1), 2019): it maps a uniform
// 64-bit word to [0, n), n ≥ 1, or reports a rejection (probability
// (2^64 mod n)/2^64). Accepted values are exactly uniform.
func Lemire(w, n uint64) (uint64, bool) {
	hi, lo := bits.Mul64(w, n)
	if lo < n && lo < -n%n {
		return 0, false
	}
	return hi, true
}
