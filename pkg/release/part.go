package release

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"

	"github.com/pramkit/pramkit/pkg/pad"
	"github.com/pramkit/pramkit/pkg/table"
)

// Items of a part of a sample, ciphertext, release or count table: the file
// holds rows [first_row, first_row + rows) of the sample's m rows. A file
// holding all m rows records neither, so a whole run's output is what it
// always was.
const (
	KeyFirstRow = "first_row"
	KeyPartRows = "rows"
	// KeyPRFNonce holds, in a PRF key file, the hex of the release's
	// nonce: k_run = DeriveRunKey(curator key, nonce). encrypt --nonce-from
	// reads it so that every part of one release gets the same pads.
	KeyPRFNonce = "prf_nonce"
	// KeySampleDigest holds, in a PRF key file, SampleDigest of the whole
	// sample's codes: encrypt --nonce-from refuses a sample whose digest
	// differs, so that a nonce (and its pads) never meets two different
	// plaintexts.
	KeySampleDigest = "sample_digest"
	// KeyNoiseID is a --noise-key release's public NoiseID, so that the
	// parts of one release can be told from parts of another.
	KeyNoiseID = "noise_id"
)

// Part is a contiguous range [First, First+Rows) of a sample's m rows.
type Part struct {
	First, Rows int64
}

// Whole is the part holding all m rows.
func Whole(m int64) Part { return Part{0, m} }

// End is the first row after the part.
func (p Part) End() int64 { return p.First + p.Rows }

// IsWhole reports whether the part is all m rows.
func (p Part) IsWhole(m int64) bool { return p.First == 0 && p.Rows == m }

// String is "rows a..b−1 of m" style text for messages.
func (p Part) String() string {
	return fmt.Sprintf("rows [%d, %d)", p.First, p.End())
}

// Encode stores first_row and rows, or removes them for the whole sample.
func (p Part) Encode(meta table.Meta, m int64) {
	delete(meta, KeyFirstRow)
	delete(meta, KeyPartRows)
	if !p.IsWhole(m) {
		meta.SetInt(KeyFirstRow, p.First)
		meta.SetInt(KeyPartRows, p.Rows)
	}
}

// ReadPart reads the part a file of a sample of m rows holds: its
// first_row and rows items, both or neither (the whole sample), with
// 0 ≤ first_row, 1 ≤ rows and first_row + rows ≤ m.
func ReadPart(meta table.Meta, file string, m int64) (Part, error) {
	_, hasF := meta[KeyFirstRow]
	_, hasR := meta[KeyPartRows]
	if !hasF && !hasR {
		return Whole(m), nil
	}
	if hasF != hasR {
		return Part{}, fmt.Errorf("%s: the metadata has one of %q and %q but not the other; the file was damaged: re-create it", file, KeyFirstRow, KeyPartRows)
	}
	a, err1 := meta.Int(KeyFirstRow, "")
	r, err2 := meta.Int(KeyPartRows, "")
	if err1 != nil || err2 != nil || a < 0 || r < 1 || a > m || r > m-a {
		return Part{}, fmt.Errorf("%s: the metadata's %s = %q, %s = %q is not a part of the m = %d rows; the file was damaged: re-create it", file, KeyFirstRow, meta[KeyFirstRow], KeyPartRows, meta[KeyPartRows], m)
	}
	return Part{a, r}, nil
}

// CheckParts checks that parts (any order) tile [0, m) without overlap or
// gap, or with gaps allowed, at least do not overlap; names[i] names
// parts[i] in messages.
func CheckParts(parts []Part, names []string, m int64, allowGaps bool) error {
	idx := make([]int, len(parts))
	for i := range idx {
		idx[i] = i
	}
	// insertion sort by First: a handful of parts
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && parts[idx[j]].First < parts[idx[j-1]].First; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	next := int64(0)
	prev := -1
	for _, i := range idx {
		p := parts[i]
		switch {
		case p.First < next:
			return fmt.Errorf("%s (%s) and %s (%s) overlap: a part was given twice or the parts were cut differently; give each disjoint part once", names[prev], parts[prev], names[i], p)
		case p.First > next && !allowGaps:
			return fmt.Errorf("rows [%d, %d) are in no part (%s starts at row %d): a part is missing; give every part of the release", next, p.First, names[i], p.First)
		}
		next, prev = p.End(), i
	}
	if next < m && !allowGaps {
		return fmt.Errorf("rows [%d, %d) are in no part (the last part ends at row %d, m = %d): a part is missing; give every part of the release", next, m, next, m)
	}
	return nil
}

// SampleDigest accumulates a keyed digest of a sample's codes, row by row:
//
//	HMAC-SHA-256(k_run, "pramkit/encrypt/sample-digest/v1" ‖ m ‖ x_{0,0} ‖ … ‖ x_{m−1,d−1})
//
// with every number as 8 (m) or 4 (codes) big-endian bytes, rows in order,
// the columns of a row in order. It is keyed by the pad key, so it says
// nothing about the sample to whoever lacks the key file (which opens the
// ciphertext anyway); it lets encrypt --nonce-from check that a part is
// cut from the same sample as the key file's nonce was drawn for.
type SampleDigest struct {
	h   hash.Hash
	buf []byte
}

// NewSampleDigest starts the digest of a sample of m rows under k_run.
func NewSampleDigest(runKey pad.Key, m int64) *SampleDigest {
	h := hmac.New(sha256.New, runKey[:])
	h.Write([]byte("pramkit/encrypt/sample-digest/v1"))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(m))
	h.Write(b[:])
	return &SampleDigest{h: h}
}

// Add adds rows [0, n) of the column-major block cols.
func (s *SampleDigest) Add(cols [][]uint32, n int) {
	d := len(cols)
	if cap(s.buf) < 4*d*n {
		s.buf = make([]byte, 4*d*n)
	}
	b := s.buf[:4*d*n]
	for i := range n {
		for j := range d {
			binary.BigEndian.PutUint32(b[4*(i*d+j):], cols[j][i])
		}
	}
	s.h.Write(b)
}

// Sum is the digest, in hex.
func (s *SampleDigest) Sum() string { return fmt.Sprintf("%x", s.h.Sum(nil)) }
