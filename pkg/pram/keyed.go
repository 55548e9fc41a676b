package pram

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// NoiseKeySize is the length in bytes of a keyed-offset key: an AES-256 key.
const NoiseKeySize = 32

// KeyedOffsets draws PRAM offsets as a pseudorandom function of (key, row):
// the offset of row i depends only on the key and i, never on which rows
// were perturbed before it or in which bundle. A part of a sample perturbed
// on its own (a Beam or Spark worker's bundle, or a retried part) therefore
// gets exactly the offsets the whole sample would have given its rows.
// Secrecy of the noise is computational (AES-256 as a PRF), as for PRF pads
// (pkg/pad): a server that knew the key could subtract the offsets.
//
// Row i's stream is the AES-256 encipherment of the blocks
//
//	"PRAM" (4 bytes) ‖ t (4 bytes) ‖ i (8 bytes), big-endian, t = 0, 1, …
//
// read as 64-bit words. The first words decide the keep event {o = 0} with
// the same exact 128-bit threshold as Mechanism.PerturbColumns; a moved row
// takes g uniform in [1, K) by Lemire's rejection method (no modulo bias),
// so P(o = 0) = γ/q up to 2^−128 and P(o = g) = 1/q for each g ≠ 0
// (Lin–Wang–Rane Lemma III.1). The domain tag keeps these blocks apart from
// pad blocks should the same key ever be given to both (it never should).
// A KeyedOffsets is safe for concurrent use.
type KeyedOffsets struct {
	m     *Mechanism
	block cipher.Block
}

// NewKeyedOffsets returns keyed offsets of m under a 32-byte key.
func NewKeyedOffsets(m *Mechanism, key []byte) (*KeyedOffsets, error) {
	if len(key) != NoiseKeySize {
		return nil, fmt.Errorf("pram.NewKeyedOffsets: key has %d bytes, want %d", len(key), NoiseKeySize)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("pram.NewKeyedOffsets: %w", err)
	}
	return &KeyedOffsets{m: m, block: b}, nil
}

// rowStream is the word stream of one row.
type rowStream struct {
	block cipher.Block
	row   uint64
	t     uint32
	buf   [16]byte
	pos   int // words of buf used: 0, 1 or 2
}

func (s *rowStream) next() uint64 {
	if s.pos == 0 || s.pos == 2 {
		copy(s.buf[0:4], "PRAM")
		binary.BigEndian.PutUint32(s.buf[4:8], s.t)
		binary.BigEndian.PutUint64(s.buf[8:16], s.row)
		s.block.Encrypt(s.buf[:], s.buf[:])
		s.t++
		s.pos = 0
	}
	w := binary.BigEndian.Uint64(s.buf[8*s.pos:])
	s.pos++
	return w
}

// uniform returns a value uniform on [0, n) for n ≥ 1 (Lemire 2019).
func (s *rowStream) uniform(n uint64) uint64 {
	for {
		hi, lo := bits.Mul64(s.next(), n)
		if lo >= n || lo >= -n%n {
			return hi
		}
	}
}

// Offset writes the offset of row into dst (len d): all zeros with
// probability γ/q, otherwise the components of a joint index uniform on
// [1, K).
func (k *KeyedOffsets) Offset(row uint64, dst []uint32) error {
	m := k.m
	if len(dst) != len(m.domain.ks) {
		return fmt.Errorf("pram.KeyedOffsets.Offset: %d components, domain has %d", len(dst), len(m.domain.ks))
	}
	clear(dst)
	if m.keepAll {
		return nil
	}
	s := rowStream{block: k.block, row: row}
	hi := s.next()
	keep := hi < m.keepHi
	if hi == m.keepHi {
		keep = s.next() < m.keepLo
	}
	if keep {
		return nil
	}
	m.domain.decode(1+s.uniform(m.domain.size-1), dst)
	return nil
}

// PerturbColumns perturbs a bundle of joint rows in place, as
// Mechanism.PerturbColumns does, but row i of the bundle is row row0 + i of
// the sample and gets that row's keyed offset. All values are checked
// first, so a bad bundle is left untouched.
func (k *KeyedOffsets) PerturbColumns(row0 uint64, cols [][]uint32) error {
	ks := k.m.domain.ks
	if err := checkColumns(ks, cols); err != nil {
		return fmt.Errorf("pram.KeyedOffsets.PerturbColumns: %w", err)
	}
	rows := len(cols[0])
	if rows > 0 && row0 > math.MaxUint64-uint64(rows-1) {
		return fmt.Errorf("pram.KeyedOffsets.PerturbColumns: rows %d + %d overflow 64 bits", row0, rows)
	}
	offset := make([]uint32, len(ks))
	for i := range rows {
		if err := k.Offset(row0+uint64(i), offset); err != nil {
			return err
		}
		for j, kj := range ks {
			if offset[j] != 0 {
				cols[j][i] = addMod(cols[j][i], offset[j], kj)
			}
		}
	}
	return nil
}
