package shuffle

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
)

// bitSchema is c int32 columns b0..b{c−1}.
func bitSchema(c int) *arrow.Schema {
	names := make([]string, c)
	for j := range names {
		names[j] = fmt.Sprintf("b%d", j)
	}
	return table.Int32Schema(names)
}

// bitBatches returns rows (each a slice of 0/1 cells) in batches of size
// rows.
func bitBatches(sch *arrow.Schema, rows [][]uint32, size int) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	for off := 0; off < len(rows); off += size {
		part := rows[off:min(off+size, len(rows))]
		cols := table.Block(sch.NumFields(), len(part))
		for i, r := range part {
			for j, v := range r {
				cols[j][i] = v
			}
		}
		out = append(out, table.Int32Batch(sch, cols, len(part)))
	}
	return out
}

// runBits shuffles rows in bit mode and returns the emitted rows as
// strings of their cells ("0110…"), in order.
func runBits(t *testing.T, rows [][]uint32, seed uint64, opt Options) (out []string, s *Shuffler) {
	t.Helper()
	opt.Bits = true
	sch := bitSchema(len(rows[0]))
	s, err := New(sch, rng.NewSeeded(seed), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, rec := range bitBatches(sch, rows, 7) {
		if err := s.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	spilled := s.Spilled()
	err = s.Emit(func(rec arrow.RecordBatch) error {
		if opt.BatchRows > 0 && rec.NumRows() > int64(opt.BatchRows) {
			t.Errorf("batch of %d rows, want at most %d", rec.NumRows(), opt.BatchRows)
		}
		for _, r := range rowStrings(rec) {
			out = append(out, strings.ReplaceAll(r, "|", ""))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if spilled != (opt.Budget > 0 && opt.Budget < 1<<20) {
		t.Fatalf("spilled = %v with budget %d", spilled, opt.Budget)
	}
	return out, s
}

// bitsOf is row i as c cells: the binary digits of i, lowest first.
func bitsOf(i, c int) []uint32 {
	r := make([]uint32, c)
	for j := range r {
		r[j] = uint32(i >> j & 1)
	}
	return r
}

func rowsOf(n, c int) [][]uint32 {
	rows := make([][]uint32, n)
	for i := range rows {
		rows[i] = bitsOf(i, c)
	}
	return rows
}

// idOfBits inverts bitsOf on a row string.
func idOfBits(s string) int {
	id := 0
	for j := len(s) - 1; j >= 0; j-- {
		id = id<<1 | int(s[j]-'0')
	}
	return id
}

// TestBitsAllPermutationsEquallyLikely is TestAllPermutationsEquallyLikely
// in bit mode: 4 rows, each of the 24 orders with probability 1/24, in
// memory, spilled to 2 buckets (a power of two: bucket draws are pieces of
// one random word) and to 3 (r.IntN); a budget of 16 bytes (2 rows) has
// every bucket of 3 or 4 rows scattered again.
func TestBitsAllPermutationsEquallyLikely(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Options
		runs int
	}{
		{"in memory", Options{Budget: 1 << 20}, 24000},
		{"spilled, 2 buckets", Options{Budget: 16, Buckets: 2, Dir: t.TempDir()}, 1200},
		{"spilled, 3 buckets", Options{Budget: 16, Buckets: 3, Dir: t.TempDir()}, 1200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counts := map[string]int64{}
			for k := range tc.runs {
				rows, _ := runBits(t, rowsOf(4, 3), uint64(k), tc.opt)
				key := ""
				for _, r := range rows {
					key += fmt.Sprint(idOfBits(r))
				}
				counts[key]++
			}
			if len(counts) != 24 {
				t.Fatalf("%d distinct orders of 4 rows, want 24: %v", len(counts), counts)
			}
			var obs []int64
			probs := make([]float64, 0, 24)
			for _, c := range counts {
				obs = append(obs, c)
				probs = append(probs, 1.0/24)
			}
			// False alarm 1e-6: a uniform shuffle fails with probability 1e-6.
			stattest.AssertChiSquare(t, tc.name+": orders of 4 rows", obs, probs, 1e-6)
		})
	}
}

// TestBitsPositionsUniform is TestPositionsUniform in bit mode: 20 rows
// through 4 buckets, every row in every position with probability 1/20;
// one chi-square per row at false alarm 1e-6/20 (1e-6 in all, union bound).
func TestBitsPositionsUniform(t *testing.T) {
	const n, runs = 20, 1000
	pos := make([][]int64, n)
	for i := range pos {
		pos[i] = make([]int64, n)
	}
	opt := Options{Budget: 64, Buckets: 4, Dir: t.TempDir()}
	for k := range runs {
		rows, _ := runBits(t, rowsOf(n, 5), uint64(1000+k), opt)
		for p, r := range rows {
			pos[idOfBits(r)][p]++
		}
	}
	probs := make([]float64, n)
	for i := range probs {
		probs[i] = 1.0 / n
	}
	for i := range pos {
		stattest.AssertChiSquare(t, fmt.Sprintf("positions of row %d", i), pos[i], probs, 1e-6/n)
	}
}

// TestBucketDrawsUniformAndIndependent checks the bucket draws of bit mode
// for 16 buckets (4-bit pieces of a word, 16 per word): the pairs of
// consecutive draws, across and within words, are uniform over the 256
// pairs (chi-square, false alarm 1e-6); and for 128 buckets (9 per word)
// the draws are uniform over 128 (false alarm 1e-6).
func TestBucketDrawsUniformAndIndependent(t *testing.T) {
	r := rng.NewSeeded(3)
	var b bitRows
	pairs := make([]int64, 256)
	for range 100000 {
		x := b.bucketOf(r, 16)
		y := b.bucketOf(r, 16)
		pairs[x*16+y]++
	}
	probs := make([]float64, 256)
	for i := range probs {
		probs[i] = 1.0 / 256
	}
	stattest.AssertChiSquare(t, "pairs of draws from 16 buckets", pairs, probs, 1e-6)
	b = bitRows{}
	one := make([]int64, 128)
	for range 128000 {
		one[b.bucketOf(r, 128)]++
	}
	probs = probs[:128]
	for i := range probs {
		probs[i] = 1.0 / 128
	}
	stattest.AssertChiSquare(t, "draws from 128 buckets", one, probs, 1e-6)
}

// TestBitsSpillKeepsEveryRow shuffles 20,000 rows of 70 random bits (two
// words, 9 spill bytes per row) and of 17 bits with a small budget: the
// buckets are scattered again, the rows come out as the same multiset in
// batches of at most BatchRows, not in input order, and no file is left.
func TestBitsSpillKeepsEveryRow(t *testing.T) {
	for _, c := range []int{70, 17, 64} {
		t.Run(fmt.Sprint(c, " bits"), func(t *testing.T) {
			base := t.TempDir()
			src := rand.New(rand.NewPCG(1, uint64(c)))
			rows := make([][]uint32, 20000)
			var want []string
			for i := range rows {
				rows[i] = make([]uint32, c)
				var sb strings.Builder
				for j := range rows[i] {
					rows[i][j] = uint32(src.IntN(2))
					sb.WriteByte(byte('0' + rows[i][j]))
				}
				want = append(want, sb.String())
			}
			got, s := runBits(t, rows, 1, Options{Budget: 16 << 10, Buckets: 8, Dir: base, BatchRows: 999})
			if s.seq <= 8 {
				t.Errorf("%d spill files made: the buckets larger than the budget were not scattered again", s.seq)
			}
			if slices.Equal(got, want) {
				t.Error("the rows came out in input order")
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("the shuffled rows are not the rows written (%d vs %d rows)", len(got), len(want))
			}
			if left, _ := os.ReadDir(base); len(left) != 0 {
				t.Errorf("spill files left behind after Emit: %v", left)
			}
		})
	}
}

// TestBitsInMemoryAcrossChunks holds more rows than one chunk of held rows
// (bitChunkRows) in memory: all come out, shuffled.
func TestBitsInMemoryAcrossChunks(t *testing.T) {
	n := 2*bitChunkRows + 123
	rows := rowsOf(n, 18)
	got, _ := runBits(t, rows, 2, Options{Budget: 1 << 20})
	ids := make([]int, len(got))
	for i, r := range got {
		ids[i] = idOfBits(r)
	}
	if slices.IsSorted(ids) {
		t.Error("the rows came out in input order")
	}
	slices.Sort(ids)
	for i, id := range ids {
		if id != i {
			t.Fatalf("row %d missing or repeated (%d rows out of %d)", i, len(ids), n)
		}
	}
}

// TestBitsRefuses: bit mode takes int32 columns of 0/1 only, and says so.
func TestBitsRefuses(t *testing.T) {
	if _, err := New(table.StringSchema([]string{"a"}), rng.NewSeeded(1), Options{Bits: true}); err == nil || !strings.Contains(err.Error(), "every column must be int32 0/1") {
		t.Errorf("a string column in bit mode: got %v", err)
	}
	sch := bitSchema(2)
	s, err := New(sch, rng.NewSeeded(1), Options{Bits: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := bitBatches(sch, [][]uint32{{0, 1}, {1, 2}}, 2)[0]
	defer rec.Release()
	if err := s.Write(rec); err == nil || !strings.Contains(err.Error(), `column "b1" holds 2`) {
		t.Errorf("a cell 2 in bit mode: got %v", err)
	}
}

// TestBitsSeededRunsRepeat: a seed gives one order, another seed another.
func TestBitsSeededRunsRepeat(t *testing.T) {
	opt := Options{Budget: 1 << 10, Buckets: 4, Dir: t.TempDir()}
	a, _ := runBits(t, rowsOf(500, 9), 7, opt)
	b, _ := runBits(t, rowsOf(500, 9), 7, opt)
	c, _ := runBits(t, rowsOf(500, 9), 8, opt)
	if !slices.Equal(a, b) {
		t.Error("seed 7 gave two different orders")
	}
	if slices.Equal(a, c) {
		t.Error("seeds 7 and 8 gave the same order of 500 rows")
	}
}

// TestOutputDoesNotDependOnBatches: the same rows written in batches of 7
// and of 3000 rows come out in the same order, in memory and spilled, in
// bit mode and with the row codec — what lets perturb hand its chunks to
// the shuffle without rebatching them. (28 KiB: 3000 rows of one word
// spill whatever the batches, held memory growing as 1, 2, 4 Ki rows.)
func TestOutputDoesNotDependOnBatches(t *testing.T) {
	for _, budget := range []int64{1 << 20, 28 << 10, 4 << 10} {
		for _, bitMode := range []bool{true, false} {
			var outs [][]string
			for _, size := range []int{7, 3000} {
				opt := Options{Budget: budget, Buckets: 4, Dir: t.TempDir(), Bits: bitMode, BatchRows: 333}
				sch := schema
				var recs []arrow.RecordBatch
				if bitMode {
					sch = bitSchema(11)
					recs = bitBatches(sch, rowsOf(3000, 11), size)
				} else {
					recs = batches(3000, size)
				}
				s, err := New(sch, rng.NewSeeded(5), opt)
				if err != nil {
					t.Fatal(err)
				}
				for _, rec := range recs {
					if err := s.Write(rec); err != nil {
						t.Fatal(err)
					}
					rec.Release()
				}
				if s.Spilled() != (budget < 1<<20) {
					t.Fatalf("budget %d: spilled = %v", budget, s.Spilled())
				}
				var out []string
				if err := s.Emit(func(rec arrow.RecordBatch) error {
					out = append(out, rowStrings(rec)...)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				outs = append(outs, out)
			}
			if len(outs[0]) != 3000 || !slices.Equal(outs[0], outs[1]) {
				t.Errorf("budget %d, bit mode %v: batches of 7 and of 3000 rows gave different orders", budget, bitMode)
			}
		}
	}
}

// TestWritePackedIsWrite: rows given packed to WritePacked come out as the
// same rows written as columns with Write, in the same order (in memory
// and spilled, one word and two words a row); a bit past the last column,
// a ragged row and a Shuffler not in bit mode are refused.
func TestWritePackedIsWrite(t *testing.T) {
	for _, c := range []int{17, 64, 70} {
		for _, budget := range []int64{1 << 20, 2 << 10} {
			rows := make([][]uint32, 3000)
			src := rand.New(rand.NewPCG(3, uint64(c)))
			for i := range rows {
				rows[i] = make([]uint32, c)
				for j := range rows[i] {
					rows[i][j] = uint32(src.IntN(2))
				}
			}
			opt := Options{Budget: budget, Buckets: 4, Dir: t.TempDir(), BatchRows: 500}
			want, _ := runBits(t, rows, 9, opt)
			opt.Bits = true
			s, err := New(bitSchema(c), rng.NewSeeded(9), opt)
			if err != nil {
				t.Fatal(err)
			}
			W := (c + 63) / 64
			for off := 0; off < len(rows); off += 7 {
				var p []uint64
				for _, r := range rows[off:min(off+7, len(rows))] {
					w := make([]uint64, W)
					for j, v := range r {
						w[j/64] |= uint64(v) << (j % 64)
					}
					p = append(p, w...)
				}
				if err := s.WritePacked(p); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			if err := s.Emit(func(rec arrow.RecordBatch) error {
				for _, r := range rowStrings(rec) {
					got = append(got, strings.ReplaceAll(r, "|", ""))
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%d columns, budget %d: WritePacked gave another order or other rows than Write", c, budget)
			}
		}
	}
	s, _ := New(bitSchema(17), rng.NewSeeded(1), Options{Bits: true})
	defer s.Close()
	if err := s.WritePacked([]uint64{1 << 17}); err == nil || !strings.Contains(err.Error(), "past its 17 columns") {
		t.Errorf("bit 17 of a 17-column row: got %v", err)
	}
	s2, _ := New(bitSchema(70), rng.NewSeeded(1), Options{Bits: true})
	defer s2.Close()
	if err := s2.WritePacked([]uint64{1, 2, 3}); err == nil || !strings.Contains(err.Error(), "whole rows") {
		t.Errorf("3 words of 2-word rows: got %v", err)
	}
	s3, _ := New(bitSchema(3), rng.NewSeeded(1), Options{})
	defer s3.Close()
	if err := s3.WritePacked([]uint64{1}); err == nil || !strings.Contains(err.Error(), "bit mode") {
		t.Errorf("WritePacked without bit mode: got %v", err)
	}
}

// TestRowBytesRoundTrip writes rows of every width from 1 to 130 bits as
// spill bytes and reads them back: the one-load path for rows under 8
// bytes and the byte loop for the last rows and for wider rows must give
// the same words.
func TestRowBytesRoundTrip(t *testing.T) {
	r := rng.NewSeeded(3)
	for cols := 1; cols <= 130; cols++ {
		W, nb := (cols+63)/64, (cols+7)/8
		for _, n := range []int{0, 1, 2, 7, 8, 9, 100} {
			rows := make([]uint64, n*W)
			for i := range rows {
				rows[i] = r.Uint64()
				if r := cols % 64; r != 0 && i%W == W-1 {
					rows[i] &= 1<<r - 1
				}
			}
			var data []byte
			for i := 0; i < n; i++ {
				data = appendRowBytes(data, rows[i*W:i*W+W], nb)
			}
			got := make([]uint64, n*W)
			readRowBytes(got, data, W, nb)
			if !slices.Equal(got, rows) {
				t.Fatalf("%d columns, %d rows: read back %x, wrote %x", cols, n, got, rows)
			}
		}
	}
}
