package table

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// maxSmallInt bounds the values of an int32 column written through
// smallIntDict: its dictionary page lists every value from 0 to the
// column's maximum, 4 bytes each.
const maxSmallInt = 1 << 12

// smallIntDict returns an int32 column without nulls whose values all lie
// in [0, maxSmallInt) as a dictionary array over the values 0..max whose
// indices are the column's own buffer (no copy), and ok; else ok is false.
//
// Why: Parquet dictionary-encodes an int32 column by hashing every cell to
// find its dictionary index, which was a third of perturb --mechanism
// bitflip's CPU (17 columns of 0/1 reports). A value in [0, max] is its own
// index in the dictionary 0..max, so pqarrow's direct dictionary path
// writes the same values, RLE/bit-packed as before, with no hashing. Codes
// and one-hot bits are such columns; readers still see int32.
func smallIntDict(col arrow.Array) (arrow.Array, bool) {
	a, ok := col.(*array.Int32)
	if !ok {
		return nil, false
	}
	hi, ok := smallIntMax(a)
	if !ok {
		return nil, false
	}
	dict := make([]int32, hi+1)
	for i := range dict {
		dict[i] = int32(i)
	}
	dd := array.NewData(arrow.PrimitiveTypes.Int32, len(dict),
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(dict))}, nil, 0, 0)
	defer dd.Release()
	typ := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.PrimitiveTypes.Int32}
	src := a.Data()
	d := array.NewData(typ, src.Len(), src.Buffers(), nil, 0, src.Offset())
	defer d.Release()
	d.SetDictionary(dd)
	return array.MakeFromData(d), true
}

// smallIntMax returns the largest value of a, and true when a is not
// empty, has no nulls and all its values lie in [0, maxSmallInt).
func smallIntMax(a *array.Int32) (int32, bool) {
	if a.NullN() != 0 || a.Len() == 0 {
		return 0, false
	}
	// The largest value as unsigned: a negative value is then above
	// maxSmallInt too, so one comparison a value decides both.
	hi := maxUnsigned(a.Int32Values())
	if hi >= maxSmallInt {
		return 0, false
	}
	return int32(hi), true
}

// maxUnsigned returns the largest of v read as unsigned (0 for none):
// four maxima side by side, for a column of 17 one-hot bits' worth of
// cells a row.
func maxUnsigned(v []int32) uint32 {
	var h0, h1, h2, h3 uint32
	i := 0
	for ; i+4 <= len(v); i += 4 {
		h0 = max(h0, uint32(v[i]))
		h1 = max(h1, uint32(v[i+1]))
		h2 = max(h2, uint32(v[i+2]))
		h3 = max(h3, uint32(v[i+3]))
	}
	for ; i < len(v); i++ {
		h0 = max(h0, uint32(v[i]))
	}
	return max(h0, h1, h2, h3)
}

// stringDicts turns string columns into dictionary arrays for Parquet,
// with a Go map per column reused across batches.
//
// Why: arrow-go's dictionary encoder boxes every cell it hashes (an
// allocation per cell: the largest cost of anonymize on 10M rows, with
// the collector it fed). A map lookup by the cell's bytes allocates
// nothing; the dictionary comes out in order of first appearance, as the
// encoder's own would, and pqarrow writes it and the indices directly.
// A column whose distinct values pass maxDictPage bytes in one batch is
// left as it is: the encoder then falls back to plain encoding at the same
// size.
//
// A column that passed the bound once is left as it is for the rest of
// the file (an id column would otherwise fill a map on every batch).
type stringDicts struct {
	seen map[int]map[string]int32 // by column index
	// indices, reused: pqarrow keeps none after a write, but the row
	// groups being written at once (openGroups) have one each (slot)
	idx  map[[2]int][]int32
	wide map[int]bool // columns that passed maxDictPage
}

// forColumn returns column j (col, which it takes over) as it is to be
// written: as dict's dictionary array when dict makes one (col released),
// else col itself, with wide telling that the column passed maxDictPage.
func (s *stringDicts) forColumn(j int, col arrow.Array, slot int) (arrow.Array, bool) {
	if d, ok := s.dict(j, col, slot); ok {
		col.Release()
		return d, false
	}
	return col, s.wide[j]
}

// dict returns column j (col) as a table.DictType array and true, or
// false when col is not a string column without nulls or has too many
// distinct values. Its indices are slot's buffer, which the row group
// written at once in another slot does not use.
func (s *stringDicts) dict(j int, col arrow.Array, slot int) (arrow.Array, bool) {
	a, ok := col.(*array.String)
	if !ok || a.NullN() != 0 || a.Len() == 0 {
		return nil, false
	}
	if s.seen == nil {
		s.seen, s.idx, s.wide = map[int]map[string]int32{}, map[[2]int][]int32{}, map[int]bool{}
	}
	if s.wide[j] {
		return nil, false
	}
	m := s.seen[j]
	if m == nil {
		m = map[string]int32{}
		s.seen[j] = m
	}
	// Keys point into a's buffer: cleared before and after each batch.
	clear(m)
	defer clear(m)
	idx := s.idx[[2]int{j, slot}]
	if cap(idx) < a.Len() {
		idx = make([]int32, a.Len())
		s.idx[[2]int{j, slot}] = idx
	}
	idx = idx[:a.Len()]
	var data []byte
	offs := []int32{0}
	for i := range idx {
		v := a.Value(i)
		k, ok := m[v]
		if !ok {
			if len(data)+len(v) > maxDictPage {
				s.wide[j] = true
				return nil, false
			}
			k = int32(len(offs) - 1)
			m[v] = k
			data = append(data, v...)
			offs = append(offs, int32(len(data)))
		}
		idx[i] = k
	}
	dd := array.NewData(arrow.BinaryTypes.String, len(offs)-1, []*memory.Buffer{nil,
		memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offs)), memory.NewBufferBytes(data)}, nil, 0, 0)
	defer dd.Release()
	d := array.NewData(DictType, len(idx), []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(idx))}, nil, 0, 0)
	defer d.Release()
	d.SetDictionary(dd)
	return array.MakeFromData(d), true
}
