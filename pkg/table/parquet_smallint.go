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
	if !ok || a.NullN() != 0 || a.Len() == 0 {
		return nil, false
	}
	var hi int32
	for _, v := range a.Int32Values() {
		if uint32(v) >= maxSmallInt {
			return nil, false
		}
		hi = max(hi, v)
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
