package table

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// refRLE is arrow-go's RleEncoder (parquet/internal/utils/rle.go, v18.8.0)
// transcribed value by value, writing bit by bit: the reference
// appendRLEHybrid's bytes are compared with. Put buffers values 8 at a
// time and decides, per group, between a repeated run and a literal group.
type refRLE struct {
	width    int
	out      []byte
	nbits    int // bits written to out
	buf      []int32
	cur      int32
	rep, lit int
	litAt    int // out index of the open literal run's indicator, or -1
}

func (r *refRLE) bit(b uint32) {
	if r.nbits%8 == 0 {
		r.out = append(r.out, 0)
	}
	r.out[r.nbits/8] |= byte(b&1) << (r.nbits % 8)
	r.nbits++
}

func (r *refRLE) value(v int32) {
	for b := range r.width {
		r.bit(uint32(v) >> b)
	}
}

func (r *refRLE) align() { r.nbits = (r.nbits + 7) / 8 * 8 }

func (r *refRLE) flushRepeated() {
	r.align()
	for _, c := range binary.AppendUvarint(nil, uint64(r.rep)<<1) {
		for b := range 8 {
			r.bit(uint32(c) >> b)
		}
	}
	for b := range (r.width + 7) / 8 * 8 {
		r.bit(uint32(r.cur) >> b)
	}
	r.rep = 0
	r.buf = r.buf[:0]
}

func (r *refRLE) flushLiteral(update bool) {
	if r.litAt < 0 {
		r.align()
		r.litAt = r.nbits / 8
		for range 8 {
			r.bit(0)
		}
	}
	for _, v := range r.buf {
		r.value(v)
	}
	r.buf = r.buf[:0]
	if update {
		r.out[r.litAt] = byte(r.lit/8<<1 | 1)
		r.litAt, r.lit = -1, 0
	}
}

func (r *refRLE) flushBuffered() {
	if r.rep >= 8 {
		r.buf = r.buf[:0]
		if r.lit != 0 {
			r.flushLiteral(true)
		}
		return
	}
	r.lit += len(r.buf)
	r.flushLiteral(r.lit/8+1 >= 64)
	r.rep = 0
}

func (r *refRLE) put(v int32) {
	if r.cur == v {
		r.rep++
		if r.rep > 8 {
			return
		}
	} else {
		if r.rep >= 8 {
			r.flushRepeated()
		}
		r.rep, r.cur = 1, v
	}
	r.buf = append(r.buf, v)
	if len(r.buf) == 8 {
		r.flushBuffered()
	}
}

func (r *refRLE) flush() []byte {
	if r.lit > 0 || r.rep > 0 || len(r.buf) > 0 {
		allRep := r.lit == 0 && (r.rep == len(r.buf) || len(r.buf) == 0)
		if r.rep > 0 && allRep {
			r.flushRepeated()
		} else {
			for len(r.buf) != 0 && len(r.buf) < 8 {
				r.buf = append(r.buf, 0)
			}
			r.lit += len(r.buf)
			r.flushLiteral(true)
			r.rep = 0
		}
	}
	return r.out
}

func refRLEEncode(vals []int32, width int) []byte {
	r := &refRLE{width: width, litAt: -1}
	for _, v := range vals {
		r.put(v)
	}
	return r.flush()
}

// checkRLEHybrid encodes vals at width with appendRLEHybrid (after a
// prefix it must keep) and compares the bytes with refRLEEncode's; the
// page (bit width byte, indices) decodes back to vals with this package's
// decoder and the bit-by-bit one.
func checkRLEHybrid(t testing.TB, vals []int32, width int) {
	t.Helper()
	prefix := []byte{0xAB, byte(width)}
	got := appendRLEHybrid(slices.Clone(prefix), vals, width)
	if !bytes.Equal(got[:2], prefix) {
		t.Fatalf("width %d: the prefix changed: % x", width, got[:2])
	}
	want := refRLEEncode(vals, width)
	if !bytes.Equal(got[2:], want) {
		t.Fatalf("width %d, %d values %v: got\n% x\nwant (arrow-go's encoder, bit by bit)\n% x", width, len(vals), vals[:min(len(vals), 40)], got[2:], want)
	}
	n := int32(1) << width
	dec := make([]int32, len(vals))
	if err := decodeDictIndices(dec, got[1:], int(n)); err != nil {
		t.Fatalf("width %d: decodeDictIndices: %v", width, err)
	}
	ref, err := refDecode(got[1:], len(vals), int(n))
	if err != nil {
		t.Fatalf("width %d: refDecode: %v", width, err)
	}
	if !slices.Equal(dec, vals) || !slices.Equal(ref, vals) {
		t.Fatalf("width %d: decodes to %v / %v, encoded %v", width, dec[:min(len(dec), 40)], ref[:min(len(ref), 40)], vals[:min(len(vals), 40)])
	}
}

// runValues draws n values below 1<<width in runs whose lengths are
// geometric with mean meanRun, each value from the first k values (k = 2
// gives one-hot bits).
func runValues(rng *rand.Rand, n, width, k int, meanRun float64) []int32 {
	k = min(k, 1<<width)
	vals := make([]int32, 0, n)
	for len(vals) < n {
		v := int32(rng.IntN(k))
		run := 1
		for rng.Float64() > 1/meanRun {
			run++
		}
		for range min(run, n-len(vals)) {
			vals = append(vals, v)
		}
	}
	return vals
}

// TestAppendRLEHybridMatchesArrowGoEncoder: at every width appendRLEHybrid
// handles (1 to 12 bits), for value streams from all-distinct to long
// runs, of every length from 0 to 40 and long ones (literal runs past the
// 63-group limit, runs crossing group boundaries, every tail length), the
// bytes are arrow-go's, and they decode back to the values.
func TestAppendRLEHybridMatchesArrowGoEncoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for width := 1; width <= maxRLEWidth; width++ {
		top := int32(1)<<width - 1
		// Hand-made: extremes of the width, the value 0 first (the
		// encoder's initial current value), runs of 7, 8 and 9.
		for _, vals := range [][]int32{
			{}, {0}, {top}, {0, 0, 0, 0, 0, 0, 0, 0}, {top, top, top, top, top, top, top, top, top},
			slices.Repeat([]int32{top}, 7), slices.Repeat([]int32{0, top}, 300),
			append(slices.Repeat([]int32{1 % (top + 1)}, 9), slices.Repeat([]int32{0}, 15)...),
			append(slices.Repeat([]int32{0, top}, 4), slices.Repeat([]int32{top}, 8)...),
			append(slices.Repeat([]int32{0, top}, 252), 0, 0, 0),
		} {
			checkRLEHybrid(t, vals, width)
		}
		for n := range 41 {
			for _, mean := range []float64{1, 3, 8} {
				checkRLEHybrid(t, runValues(rng, n, width, 1<<width, mean), width)
			}
		}
		for _, k := range []int{2, 3, 1 << width} {
			for _, mean := range []float64{1, 1.5, 4, 9, 40} {
				checkRLEHybrid(t, runValues(rng, 3000+rng.IntN(20), width, k, mean), width)
			}
		}
	}
}

// FuzzAppendRLEHybrid: any values at any width (the first byte picks the
// width, the rest are value/run-length pairs) encode to arrow-go's bytes
// and decode back.
func FuzzAppendRLEHybrid(f *testing.F) {
	f.Add([]byte{0, 1, 3, 0, 9, 1, 1})
	f.Add([]byte{0, 0, 8, 1, 8, 0, 7, 1, 1})
	f.Add([]byte{3, 5, 1, 6, 1, 7, 2, 0, 20})
	f.Add([]byte{11, 255, 9, 17, 1, 3, 30, 0, 4})
	f.Add(bytes.Repeat([]byte{0, 1, 1, 1}, 300))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		width := 1 + int(data[0])%maxRLEWidth
		var vals []int32
		for i := 1; i+1 < len(data) && len(vals) < 1<<16; i += 2 {
			// Two bytes: a value (spread over the width) and a run length.
			v := int32(data[i]) * 0x1011 & (1<<width - 1)
			for range int(data[i+1]%32) + 1 {
				vals = append(vals, v)
			}
		}
		checkRLEHybrid(t, vals, width)
	})
}

// BenchmarkAppendRLEHybridBits encodes a row group of one-hot bits as
// perturb --mechanism bitflip writes them (1 with probability about 0.3,
// runs of 8 equal bits in about a fifth of the groups).
func BenchmarkAppendRLEHybridBits(b *testing.B) {
	vals := benchBits()
	var dst []byte
	b.SetBytes(4 * int64(len(vals)))
	for b.Loop() {
		dst = appendRLEHybrid(dst[:0], vals, 1)
	}
}

// BenchmarkAppendRLEHybridCodes encodes a row group of codes of a
// 16-value column, uniform (perturb's output: 4-bit literal groups).
func BenchmarkAppendRLEHybridCodes(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]int32, RowGroupRows)
	for i := range vals {
		vals[i] = rng.Int32N(16)
	}
	var dst []byte
	b.SetBytes(4 * int64(len(vals)))
	for b.Loop() {
		dst = appendRLEHybrid(dst[:0], vals, 4)
	}
}

// packedCells is vals (0/1) as bits, cell i bit i%8 of byte i/8, in a
// slice of exactly the bytes they need (reading past them panics).
func packedCells(vals []int32) []byte {
	b := make([]byte, (len(vals)+7)/8)
	for i, v := range vals {
		b[i>>3] |= byte(v) << (i & 7)
	}
	return b
}

// TestAppendRLEBitsIsAppendRLEHybridOfTheCells: for 0/1 cells held as
// bits, appendRLEBits writes appendRLEHybrid's bytes at width 1 (which
// TestAppendRLEHybridMatchesArrowGoEncoder ties to arrow-go's) — after a
// literal run, runs ending on and off byte boundaries, long runs, every
// tail length, literal runs past 63 groups.
func TestAppendRLEBitsIsAppendRLEHybridOfTheCells(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	streams := [][]int32{
		{}, {0}, {1}, slices.Repeat([]int32{1}, 7), slices.Repeat([]int32{0}, 8), slices.Repeat([]int32{1}, 9),
		slices.Repeat([]int32{0, 1}, 300),
		append(slices.Repeat([]int32{1}, 11), slices.Repeat([]int32{0}, 29)...),
		append(append(slices.Repeat([]int32{0, 1}, 4), slices.Repeat([]int32{1}, 13)...), 0, 1, 1, 0, 1, 0, 0, 1, 1),
		append(slices.Repeat([]int32{0, 1}, 252), 0, 0, 0),
		append(slices.Repeat([]int32{1, 0}, 252), 1, 1, 1, 1, 1, 1, 1),
	}
	for n := range 41 {
		for _, mean := range []float64{1, 3, 8} {
			streams = append(streams, runValues(rng, n, 1, 2, mean))
		}
	}
	for _, mean := range []float64{1, 1.5, 4, 9, 40, 500} {
		streams = append(streams, runValues(rng, 3000+rng.IntN(20), 1, 2, mean))
	}
	for _, vals := range streams {
		want := appendRLEHybrid([]byte{7}, vals, 1)
		if got := appendRLEBits([]byte{7}, packedCells(vals), len(vals)); !bytes.Equal(got, want) {
			t.Fatalf("%d cells %v…: appendRLEBits wrote % x, appendRLEHybrid % x", len(vals), vals[:min(len(vals), 24)], got[:min(len(got), 24)], want[:min(len(want), 24)])
		}
	}
}

// FuzzAppendRLEBits: any 0/1 cells (the data's bits, the first byte cut
// off how many) held as bits encode to appendRLEHybrid's bytes.
func FuzzAppendRLEBits(f *testing.F) {
	f.Add([]byte{3, 0xff, 0xff, 0x0f, 0x00, 0x00, 0xa5})
	f.Add(bytes.Repeat([]byte{0x55}, 70))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		vals := make([]int32, max(0, 8*(len(data)-1)-int(data[0]%8)))
		for i := range vals {
			vals[i] = int32(data[1+i>>3] >> (i & 7) & 1)
		}
		want := appendRLEHybrid(nil, vals, 1)
		if got := appendRLEBits(nil, packedCells(vals), len(vals)); !bytes.Equal(got, want) {
			t.Fatalf("%v: appendRLEBits wrote % x, appendRLEHybrid % x", vals, got, want)
		}
	})
}

// BenchmarkAppendRLEBits encodes BenchmarkAppendRLEHybridBits's cells
// held as bits, as a wide Parquet row group holds them.
func BenchmarkAppendRLEBits(b *testing.B) {
	vals := benchBits()
	bits := packedCells(vals)
	var dst []byte
	b.SetBytes(4 * int64(len(vals)))
	for b.Loop() {
		dst = appendRLEBits(dst[:0], bits, len(vals))
	}
}

// benchBits is a row group of one-hot bits as perturb --mechanism bitflip
// writes them: 1 with probability 0.3.
func benchBits() []int32 {
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]int32, RowGroupRows)
	for i := range vals {
		if rng.Float64() < 0.3 {
			vals[i] = 1
		}
	}
	return vals
}
