package pram

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/pramkit/pramkit/pkg/rng"
)

// NoiseKeySize is the length in bytes of a keyed-offset key: an AES-256 key.
const NoiseKeySize = rng.KeySize

// offsetTag is the stream tag of PRAM offsets ("PRAM"): it keeps these
// blocks apart from pad blocks (tags = column numbers) should the same key
// ever be given to both (it never should).
var offsetTag = rng.Tag("PRAM")

// KeyedOffsets draws PRAM offsets as a pseudorandom function of (key, row):
// the offset of row i depends only on the key and i, never on which rows
// were perturbed before it, in which bundle or chunk, or on how many
// cores. A part of a sample perturbed on its own (a Beam or Spark worker's
// bundle, or a retried part) therefore gets exactly the offsets the whole
// sample would have given its rows, and a seeded run is byte-identical at
// any GOMAXPROCS. Secrecy of the noise is computational (AES-256 as a
// PRF), as for PRF pads (pkg/pad): a server that knew the key could
// subtract the offsets. perturb keys it with a key derived from
// --noise-key, or else with a fresh key from crypto/rand that it never
// stores (from --seed only under --insecure-seed).
//
// Row i's stream is rng.Keyed's stream of row i under the tag "PRAM": the
// AES-256 encipherment of the blocks
//
//	"PRAM" (4 bytes) ‖ t (4 bytes) ‖ i (8 bytes), big-endian, t = 0, 1, …
//
// read as 64-bit words. The first words decide the keep event {o = 0} with
// the same exact 128-bit threshold as Mechanism.PerturbColumns; a moved row
// takes g uniform in [1, K) by Lemire's rejection method (no modulo bias),
// so P(o = 0) = γ/q up to 2^−128 and P(o = g) = 1/q for each g ≠ 0
// (Lin–Wang–Rane Lemma III.1). A KeyedOffsets is safe for concurrent use.
type KeyedOffsets struct {
	m *Mechanism
	k *rng.Keyed
}

// NewKeyedOffsets returns keyed offsets of m under a 32-byte key.
func NewKeyedOffsets(m *Mechanism, key []byte) (*KeyedOffsets, error) {
	if len(key) != NoiseKeySize {
		return nil, fmt.Errorf("pram.NewKeyedOffsets: key has %d bytes, want %d", len(key), NoiseKeySize)
	}
	return &KeyedOffsets{m: m, k: rng.NewKeyed(rng.Key(key))}, nil
}

// Mechanism returns the mechanism whose offsets k draws.
func (k *KeyedOffsets) Mechanism() *Mechanism { return k.m }

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
	s := k.k.Stream(offsetTag, row)
	hi := s.Uint64()
	keep := hi < m.keepHi
	if hi == m.keepHi {
		keep = s.Uint64() < m.keepLo
	}
	if keep {
		return nil
	}
	m.domain.decode(1+s.Uint64N(m.domain.size-1), dst)
	return nil
}

// offsetChunk is the number of rows whose counter-0 blocks PerturbColumns
// computes per AES-CTR call (4 KiB on the stack).
const offsetChunk = 256

// PerturbColumns perturbs a bundle of joint rows in place, as
// Mechanism.PerturbColumns does, but row i of the bundle is row row0 + i of
// the sample and gets that row's keyed offset. All values are checked
// first, so a bad bundle is left untouched.
//
// The counter-0 blocks of consecutive rows are one AES-CTR keystream
// (rng.Keyed.Blocks); their two words decide almost every row — keep
// (word 0 below the threshold's high word), or move by 1 + Lemire(word 1)
// — and the rare rows that need more words (a tie on the high word,
// probability 2^−64, or a Lemire rejection, < 2^−2 and usually ~2^−40)
// fall back to Offset, so the result is exactly Offset's, row by row.
func (k *KeyedOffsets) PerturbColumns(row0 uint64, cols [][]uint32) error {
	ks := k.m.domain.ks
	if err := checkColumns(ks, cols); err != nil {
		return fmt.Errorf("pram.KeyedOffsets.PerturbColumns: %w", err)
	}
	rows := len(cols[0])
	if rows > 0 && row0 > math.MaxUint64-uint64(rows-1) {
		return fmt.Errorf("pram.KeyedOffsets.PerturbColumns: rows %d + %d overflow 64 bits", row0, rows)
	}
	m := k.m
	if m.keepAll {
		return nil
	}
	offset := make([]uint32, len(ks))
	var buf [16 * offsetChunk]byte
	n1 := m.domain.size - 1
	// With K ≤ 2^32 (every joint domain of the benchmarks and of Adult) a
	// moved row's offset is decoded and added one component at a time,
	// with no test of the component against 0: that branch is taken at
	// random (half the time for a 2-value column) and its mispredictions,
	// with the offset's round trip through memory, took half the loop
	// (BenchmarkChunkPerturb/keyed: 28.9 → 15.0 ns a row).
	small := m.domain.size <= 1<<32
	recip := m.domain.recip
	for start := 0; start < rows; start += offsetChunk {
		n := min(offsetChunk, rows-start)
		blocks := buf[:16*n]
		if err := k.k.Blocks(blocks, offsetTag, row0+uint64(start)); err != nil {
			return fmt.Errorf("pram.KeyedOffsets.PerturbColumns: %w", err)
		}
		for i := range n {
			b := blocks[16*i : 16*i+16]
			w0 := binary.BigEndian.Uint64(b[0:8])
			if w0 < m.keepHi {
				continue // kept
			}
			row := start + i
			g, ok := uint64(0), false
			if w0 != m.keepHi {
				g, ok = rng.Lemire(binary.BigEndian.Uint64(b[8:16]), n1)
			}
			if ok && small {
				// Domain.decode of 1+g, least significant component first,
				// each added as it comes.
				g32 := uint32(1 + g)
				for j := len(ks) - 1; j >= 0; j-- {
					var r uint32
					g32, r = divMod32(g32, ks[j], recip[j])
					c := cols[j]
					c[row] = addMod(c[row], r, ks[j])
				}
				continue
			}
			if ok {
				m.domain.decode(1+g, offset)
			} else if err := k.Offset(row0+uint64(row), offset); err != nil {
				return err
			}
			for j, kj := range ks {
				if offset[j] != 0 {
					cols[j][row] = addMod(cols[j][row], offset[j], kj)
				}
			}
		}
	}
	return nil
}
