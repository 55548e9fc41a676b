package pad

import "testing"

// BenchmarkChunkEncrypt is encrypt's per-chunk mechanism cost after coding:
// pads of one chunk of 16 Ki rows on Z_16 (row-keyed, AES-CTR) and the
// ciphertexts c = x + v mod k. decrypt's per-chunk cost is the same with
// DecryptColumn (and no Pads for one-time pads, which are read).
func BenchmarkChunkEncrypt(b *testing.B) {
	const rows, k = 16 * 1024, 16
	d := mustDeriver(b, testKey(1))
	x, v, c := make([]uint32, rows), make([]uint32, rows), make([]uint32, rows)
	for i := range x {
		x[i] = uint32(i) % k
	}
	for i := 0; b.Loop(); i++ {
		if err := d.Pads(v, uint64(i)*rows, 0, k); err != nil {
			b.Fatal(err)
		}
		if err := EncryptColumn(c, x, v, k); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/cell")
}

// BenchmarkChunkDecrypt is decrypt's per-chunk cost for one column of PRF
// pads: the pads, then x = c − v mod k.
func BenchmarkChunkDecrypt(b *testing.B) {
	const rows, k = 16 * 1024, 16
	d := mustDeriver(b, testKey(1))
	c, v := make([]uint32, rows), make([]uint32, rows)
	for i := 0; b.Loop(); i++ {
		if err := d.Pads(v, uint64(i)*rows, 0, k); err != nil {
			b.Fatal(err)
		}
		if err := DecryptColumn(c, c, v, k); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/cell")
}
