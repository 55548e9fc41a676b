package table

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// encodeHybrid encodes vals as a data page's dictionary indices: the bit
// width byte, then runs of w-bit values, each chosen at random to be a
// repeated-value run (when the values repeat) or a bit-packed run (the
// last group padded with zeros), as Parquet's Encodings.md describes them.
func encodeHybrid(rng *rand.Rand, vals []int32, w int) []byte {
	out := []byte{byte(w)}
	for i := 0; i < len(vals); {
		j := i + 1
		for j < len(vals) && vals[j] == vals[i] {
			j++
		}
		if j-i >= 2 && rng.IntN(3) > 0 {
			out = binary.AppendUvarint(out, uint64(j-i)<<1)
			for b := range (w + 7) / 8 {
				out = append(out, byte(uint32(vals[i])>>(8*b)))
			}
			i = j
			continue
		}
		groups := 1 + rng.IntN(4)
		n := min(groups*8, len(vals)-i)
		groups = (n + 7) / 8
		out = binary.AppendUvarint(out, uint64(groups)<<1|1)
		bits := make([]byte, groups*w)
		for k := range n {
			for b := range w {
				if uint32(vals[i+k])>>b&1 == 1 {
					bit := k*w + b
					bits[bit/8] |= 1 << (bit % 8)
				}
			}
		}
		out = append(out, bits...)
		i += n
	}
	return out
}

// refDecode is decodeDictIndices the slow and obvious way, bit by bit: the
// reference it is compared with. It reads count values of at most n; a
// run's header above 2^33 is refused as decodeDictIndices refuses it.
func refDecode(data []byte, count, n int) ([]int32, error) {
	out := []int32{}
	if count == 0 {
		return out, nil
	}
	if len(data) == 0 {
		return nil, errors.New("no bit width")
	}
	w := int(data[0])
	if w > 32 {
		return nil, errors.New("too wide")
	}
	data = data[1:]
	for len(out) < count {
		h, k := binary.Uvarint(data)
		if k <= 0 || h > 1<<33 {
			return nil, errors.New("bad header")
		}
		data = data[k:]
		if h&1 == 0 {
			vb := (w + 7) / 8
			if len(data) < vb {
				return nil, errors.New("short run")
			}
			var v uint64
			for b := range vb {
				v |= uint64(data[b]) << (8 * b)
			}
			data = data[vb:]
			for r := uint64(0); r < h>>1 && len(out) < count; r++ {
				if v >= uint64(n) {
					return nil, errors.New("index out of range")
				}
				out = append(out, int32(v))
			}
			continue
		}
		groups := h >> 1
		for g := uint64(0); g < groups && len(out) < count; g++ {
			for k := 0; k < 8 && len(out) < count; k++ {
				var v uint64
				for b := range w {
					bit := k*w + b
					if bit/8 >= len(data) {
						return nil, errors.New("short bit-packed run")
					}
					v |= uint64(data[bit/8]>>(bit%8)&1) << b
				}
				if v >= uint64(n) {
					return nil, errors.New("index out of range")
				}
				out = append(out, int32(v))
			}
			data = data[min(w, len(data)):]
		}
	}
	return out, nil
}

// TestDecodeDictIndicesMatchesEncoding decodes random indices of every bit
// width from 0 to 32, in random mixes of repeated-value and bit-packed
// runs, and finds the values encoded; the reference decoder agrees.
func TestDecodeDictIndicesMatchesEncoding(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 1))
	for w := 0; w <= 32; w++ {
		for trial := range 20 {
			n := 1 + rng.IntN(300)
			limit := uint64(1) << w // values < 2^w
			vals := make([]int32, n)
			for i := range vals {
				if i > 0 && rng.IntN(2) == 0 {
					vals[i] = vals[i-1]
					continue
				}
				vals[i] = int32(rng.Uint64N(min(limit, 1<<31)))
			}
			data := encodeHybrid(rng, vals, w)
			dictN := int(min(limit, 1<<31))
			got := make([]int32, n)
			if err := decodeDictIndices(got, data, dictN); err != nil {
				t.Fatalf("w=%d trial %d: %v", w, trial, err)
			}
			if !slices.Equal(got, vals) {
				t.Fatalf("w=%d trial %d: decoded %v, encoded %v", w, trial, got, vals)
			}
			ref, err := refDecode(data, n, dictN)
			if err != nil || !slices.Equal(ref, vals) {
				t.Fatalf("w=%d trial %d: reference decoded %v (%v), encoded %v", w, trial, ref, err, vals)
			}
			// As values: the entries of a dictionary the indices point to.
			if dictN <= 1<<12 {
				dict := make([]int32, dictN)
				for k := range dict {
					dict[k] = rng.Int32() - 1<<30
				}
				if err := decodeDictValues(got, data, dict); err != nil {
					t.Fatalf("w=%d trial %d: values: %v", w, trial, err)
				}
				for i, k := range vals {
					if got[i] != dict[k] {
						t.Fatalf("w=%d trial %d: value %d is %d, dictionary entry %d is %d", w, trial, i, got[i], k, dict[k])
					}
				}
			}
		}
	}
}

// TestDecodeDictIndicesRefusesCorruptPages: an index past the dictionary,
// a page cut inside a run, a width above 32 are errors, not values.
func TestDecodeDictIndicesRefusesCorruptPages(t *testing.T) {
	// Width 3: a bit-packed group of 0…7, then a run of four 7s.
	data := []byte{3, 3, 0b10001000, 0b11000110, 0b11111010, 8, 7}
	vals := []int32{0, 1, 2, 3, 4, 5, 6, 7, 7, 7, 7, 7}
	dst := make([]int32, len(vals))
	if err := decodeDictIndices(dst, data, 8); err != nil || !slices.Equal(dst, vals) {
		t.Fatalf("decoded %v (%v), want %v", dst, err, vals)
	}
	if err := decodeDictIndices(dst, data, 7); err == nil {
		t.Error("index 7 of a 7-entry dictionary was accepted")
	}
	for cut := 1; cut < len(data); cut++ {
		if err := decodeDictIndices(dst, data[:cut], 8); err == nil {
			t.Errorf("page cut to %d of %d bytes was accepted", cut, len(data))
		}
	}
	// The first four values need 12 bits: the group's third byte may go.
	if err := decodeDictIndices(dst[:4], data[:4], 8); err != nil || !slices.Equal(dst[:4], vals[:4]) {
		t.Errorf("first 4 values of a cut group: %v (%v)", dst[:4], err)
	}
	if err := decodeDictIndices(dst[:4], data[:3], 8); err == nil {
		t.Error("a group cut inside its fourth value was accepted")
	}
	if err := decodeDictIndices(dst, []byte{33, 2, 0, 0, 0, 0, 0}, 8); err == nil {
		t.Error("a 33-bit width was accepted")
	}
}

// FuzzDecodeDictIndices compares decodeDictIndices with the bit-by-bit
// reference on any bytes: the same values, or both an error.
func FuzzDecodeDictIndices(f *testing.F) {
	rng := rand.New(rand.NewPCG(13, 1))
	f.Add(encodeHybrid(rng, []int32{0, 1, 2, 3, 3, 3, 3, 1, 0}, 2), uint16(9), uint32(4))
	f.Add(encodeHybrid(rng, []int32{5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, 3), uint16(10), uint32(6))
	f.Add(encodeHybrid(rng, []int32{1 << 20, 7, 1<<31 - 1}, 31), uint16(3), uint32(1<<31-1))
	f.Add([]byte{0, 3}, uint16(20), uint32(1))
	f.Fuzz(func(t *testing.T, data []byte, count uint16, n uint32) {
		want, werr := refDecode(data, int(count), int(n))
		got := make([]int32, count)
		err := decodeDictIndices(got, data, int(n))
		if (err != nil) != (werr != nil) {
			t.Fatalf("error %v, reference's %v", err, werr)
		}
		if err == nil && !slices.Equal(got, want) {
			t.Fatalf("decoded %v, reference %v", got, want)
		}
		if n > 1<<12 {
			return
		}
		dict := make([]int32, n)
		for k := range dict {
			dict[k] = int32(k)*7 - 3
		}
		if err := decodeDictValues(got, data, dict); (err != nil) != (werr != nil) {
			t.Fatalf("values: error %v, reference's %v", err, werr)
		} else if err == nil {
			for i, k := range want {
				if got[i] != dict[k] {
					t.Fatalf("value %d is %d, dictionary entry %d is %d", i, got[i], k, dict[k])
				}
			}
		}
	})
}

// randomParquet writes a random table with arrow-go's own writer (not
// pramkit's), in the variants a Parquet file may have: required int32
// and utf8 columns of a few to many distinct values (the many overflowing
// the dictionary page limit, so that the writer falls back to PLAIN pages
// in some chunks), a nullable column, V1 or V2 data pages, several pages
// per chunk, Snappy or no compression, row groups of random size. It
// returns the file and its row group size.
func randomParquet(t testing.TB, seed uint64) (string, int) {
	rng := rand.New(rand.NewPCG(seed, 2))
	n := rng.IntN(5000)
	groupRows := 1 + rng.IntN(2000)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "code", Type: arrow.PrimitiveTypes.Int32},
		{Name: "label", Type: arrow.BinaryTypes.String},
		{Name: "wide", Type: arrow.PrimitiveTypes.Int32},
		{Name: "many", Type: arrow.BinaryTypes.String},
		{Name: "maybe", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	k := 1 + rng.IntN(40)
	for i := range n {
		b.Field(0).(*array.Int32Builder).Append(int32(rng.IntN(k)) - 3)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("v%d,é", rng.IntN(k)))
		b.Field(2).(*array.Int32Builder).Append(rng.Int32())
		b.Field(3).(*array.StringBuilder).Append("id" + strconv.Itoa(i*7919%100003))
		if rng.IntN(5) == 0 {
			b.Field(4).AppendNull()
		} else {
			b.Field(4).(*array.Int32Builder).Append(int32(rng.IntN(3)))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	version := parquet.DataPageV1
	if rng.IntN(2) == 0 {
		version = parquet.DataPageV2
	}
	codec := compress.Codecs.Snappy
	if rng.IntN(2) == 0 {
		codec = compress.Codecs.Uncompressed
	}
	props := parquet.NewWriterProperties(
		parquet.WithDictionaryDefault(true),
		parquet.WithDataPageVersion(version),
		parquet.WithCompression(codec),
		parquet.WithDataPageSize(int64(64+rng.IntN(4096))),
		parquet.WithDictionaryPageSizeLimit(int64(256+rng.IntN(8192))),
		parquet.WithMaxRowGroupLength(int64(groupRows)),
	)
	p := filepath.Join(t.TempDir(), "r.parquet")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(schema, f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p, groupRows
}

// readDictBatches reads every batch of path (the string columns as dictionaries)
// with readDictChunk on or off; fast returns the columns it read itself.
func readDictBatches(t testing.TB, path string, batch int, dictFast bool, dictCols ...string) (recs []arrow.RecordBatch, fast []fastKind, err error) {
	defer func(old bool) { readDictFast = old }(readDictFast)
	readDictFast = dictFast
	r, err := Open(path, ReadOptions{BatchSize: batch, DictColumns: dictCols, ReuseBuffers: dictFast})
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	// The columns read by readDictChunk.
	fast = r.(*parquetReader).fast
	if !r.(*parquetReader).fastBatches {
		fast = make([]fastKind, len(fast))
	}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return recs, fast, nil
		}
		if err != nil {
			return recs, fast, err
		}
		// A copy: the reader reuses its buffers (ReuseBuffers).
		cols := make([]arrow.Array, rec.NumCols())
		for j := range cols {
			cols[j], err = array.Concatenate([]arrow.Array{rec.Column(j)}, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
		}
		recs = append(recs, array.NewRecordBatch(rec.Schema(), cols, rec.NumRows()))
	}
}

// sameBatches compares two reads batch by batch, cell by cell.
func sameBatches(t testing.TB, got, want []arrow.RecordBatch) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d batches, pqarrow read %d", len(got), len(want))
	}
	for i := range got {
		if got[i].NumRows() != want[i].NumRows() {
			t.Fatalf("batch %d has %d rows, pqarrow's %d", i, got[i].NumRows(), want[i].NumRows())
		}
		for j := range int(got[i].NumCols()) {
			if !arrow.TypeEqual(got[i].Column(j).DataType(), want[i].Column(j).DataType()) {
				t.Fatalf("batch %d column %d: type %s, pqarrow's %s", i, j, got[i].Column(j).DataType(), want[i].Column(j).DataType())
			}
			g, w := ValuesOf(got[i].Column(j)), ValuesOf(want[i].Column(j))
			for r := range int(got[i].NumRows()) {
				if g.String(r) != w.String(r) || got[i].Column(j).IsNull(r) != want[i].Column(j).IsNull(r) {
					t.Fatalf("batch %d column %d row %d: %q, pqarrow read %q", i, j, r, g.String(r), w.String(r))
				}
			}
		}
	}
}

// compareDictRead reads a random file (randomParquet(seed)) with
// readDictChunk and through pqarrow, at a batch size that divides its row
// groups and one that may not, and finds the same batches.
func compareDictRead(t testing.TB, seed uint64) (usedFast bool) {
	p, groupRows := randomParquet(t, seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	divisors := []int{}
	for d := 1; d <= groupRows; d++ {
		if groupRows%d == 0 {
			divisors = append(divisors, d)
		}
	}
	for _, batch := range []int{divisors[rng.IntN(len(divisors))], 1 + rng.IntN(3000)} {
		want, _, err := readDictBatches(t, p, batch, false, "label", "many")
		if err != nil {
			t.Fatalf("seed %d batch %d: pqarrow: %v", seed, batch, err)
		}
		got, fast, err := readDictBatches(t, p, batch, true, "label", "many")
		if err != nil {
			t.Fatalf("seed %d batch %d: %v", seed, batch, err)
		}
		sameBatches(t, got, want)
		if fast[4] != fastNone {
			t.Fatalf("seed %d: the nullable column was read by readDictChunk", seed)
		}
		if slices.ContainsFunc(fast, func(k fastKind) bool { return k != fastNone }) {
			usedFast = true
		}
	}
	return usedFast
}

// TestReadDictChunkMatchesPqarrow reads random files written by arrow-go
// both ways; readDictChunk must have read some columns of most of them.
func TestReadDictChunkMatchesPqarrow(t *testing.T) {
	used := 0
	for seed := range uint64(60) {
		if compareDictRead(t, seed) {
			used++
		}
	}
	if used < 30 {
		t.Errorf("readDictChunk read columns of %d of 60 files only", used)
	}
}

// FuzzReadDictChunk compares the two reads of the random file of any
// seed (FuzzParquetReader mutates the bytes of pramkit's own files, which
// take this path, for crashes).
func FuzzReadDictChunk(f *testing.F) {
	for seed := range uint64(4) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		compareDictRead(t, seed)
	})
}

// TestReadDictChunkReadsPramkitFiles: pramkit's own Parquet files take
// the path when the batches do not straddle row groups, and read as
// pqarrow reads them.
func TestReadDictChunkReadsPramkitFiles(t *testing.T) {
	cols, rows := dictRows(10_500)
	p := writeParquetRows(t, cols, rows, 1000)
	for _, batch := range []int{1000, 250, 300} {
		want, _, err := readDictBatches(t, p, batch, false, cols...)
		if err != nil {
			t.Fatal(err)
		}
		got, fast, err := readDictBatches(t, p, batch, true, cols...)
		if err != nil {
			t.Fatal(err)
		}
		sameBatches(t, got, want)
		if on := fast[0] == fastDictUTF8; on != (1000%batch == 0) {
			t.Errorf("batch %d: column %s read by readDictChunk: %v", batch, cols[0], on)
		}
	}
}

// TestReadDictChunkOnCorruptFiles flips bytes of a pramkit Parquet file:
// readDictChunk's read never panics (an error names the file), and when
// both reads succeed they agree.
func TestReadDictChunkOnCorruptFiles(t *testing.T) {
	cols, rows := dictRows(3000)
	good, err := os.ReadFile(writeParquetRows(t, cols, rows, 1000))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(14, 1))
	p := filepath.Join(t.TempDir(), "bad.parquet")
	fastRead := 0
	for trial := range 300 {
		bad := slices.Clone(good)
		for range 1 + rng.IntN(3) {
			// Bytes of the row groups, not the footer: the pages.
			bad[4+rng.IntN(len(bad)/2)] ^= byte(1 + rng.IntN(255))
		}
		if err := os.WriteFile(p, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		want, _, werr := readDictBatches(t, p, 500, false, cols...)
		got, fast, err := readDictBatches(t, p, 500, true, cols...)
		if err != nil {
			var de *DataError
			if !errors.As(err, &de) || de.File != p {
				t.Fatalf("trial %d: error %v does not name the file", trial, err)
			}
		}
		if len(fast) > 0 && fast[0] != fastNone {
			fastRead++
		}
		if err == nil && werr == nil {
			sameBatches(t, got, want)
		}
	}
	if fastRead < 100 {
		t.Errorf("readDictChunk read %d of 300 corrupt files", fastRead)
	}
}
