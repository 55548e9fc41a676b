package table

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
)

// ownLabelPages turns labelPages on; tests turn it off to show that the
// file's bytes are the same either way.
var ownLabelPages = true

// labelPagesChunks counts the column chunks labelPages wrote (for tests).
var labelPagesChunks atomic.Int64

// labelDictBufs holds labelPages' scratch (the PLAIN-encoded dictionary
// and a set of the labels), reused across columns and row groups.
var labelDictBufs = newScratchList[labelScratch]()

type labelScratch struct {
	dict []byte
	// slots is an open-addressed set of a dictionary's labels, by index
	// plus one (0: empty), at most half full. A map[string]struct{} took
	// 8.7 MB of decrypt's peak over a 1M-label column (three scratches
	// of ~60k labels each); this takes 4 bytes a slot.
	slots []int32
}

// labelSeed hashes labels for labelScratch.distinct.
var labelSeed = maphash.MakeSeed()

// distinct reports whether labels holds no value twice.
func (s *labelScratch) distinct(labels *array.String) bool {
	n := labels.Len()
	size := 1 << bits.Len(uint(2*n-1))
	if cap(s.slots) < size {
		s.slots = make([]int32, size)
	}
	slots := s.slots[:size]
	clear(slots)
	mask := uint64(size - 1)
	for i := range n {
		v := labels.Value(i)
		for k := maphash.String(labelSeed, v) & mask; ; k = (k + 1) & mask {
			j := slots[k]
			if j == 0 {
				slots[k] = int32(i + 1)
				break
			}
			if labels.Value(int(j-1)) == v {
				return false
			}
		}
	}
	return true
}

// labelPages writes a dictionary column of strings — codebook labels over
// codes (Labels), or stringDicts' dictionaries — as column j's whole chunk
// of finished pages (dictPages) and reports true, or writes nothing and
// reports false when the column writer must do it.
//
// Why: pqarrow hands such a column's dictionary to the column writer
// whole (dictEncoder.PutDictionary, in the array's order, unused labels
// included) and its indices to dictEncoder.PutIndices; the page is then
// RLE/bit-packed by one RleEncoder.Put per value, most of decrypt →
// Parquet's encoding work. appendRLEHybrid writes the same bytes a group
// of 8 values at a time.
//
// The column writer's result, copied here: the dictionary page is the
// dictionary's values in order, each a 4-byte little-endian length and its
// bytes; the indices take bits.Len(entries-1) bits (1 for one entry). A
// dictionary with a repeated value makes pqarrow fall back to plain
// encoding, and a null index or a nullable column adds definition levels:
// both are left to the column writer, as are indices out of range (its
// error), index widths past maxRLEWidth and columns the props give
// statistics or V2 pages.
func (rg *pqRowGroup) labelPages(j int, d *array.Dictionary) (bool, error) {
	if !ownLabelPages || !rg.canWriteDictPages(j, parquet.Types.ByteArray) || d.Len() == 0 || d.NullN() != 0 {
		return false, nil
	}
	labels, ok := d.Dictionary().(*array.String)
	if !ok || labels.NullN() != 0 || labels.Len() == 0 {
		return false, nil
	}
	idx, ok := d.Indices().(*array.Int32)
	if !ok {
		return false, nil
	}
	entries := labels.Len()
	if bits.Len32(uint32(entries-1)) > maxRLEWidth {
		return false, nil
	}
	vals := idx.Int32Values()
	if maxUnsigned(vals) >= uint32(entries) {
		return false, nil
	}
	s := labelDictBufs.get()
	defer labelDictBufs.put(s)
	if !s.distinct(labels) {
		return false, nil
	}
	dict := s.dict[:0]
	for i := range entries {
		v := labels.Value(i)
		dict = binary.LittleEndian.AppendUint32(dict, uint32(len(v)))
		dict = append(dict, v...)
	}
	s.dict = dict
	if err := rg.dictPages(j, dict, entries, vals); err != nil {
		return true, err
	}
	labelPagesChunks.Add(1)
	return true, nil
}

// canWriteDictPages reports whether column j can be written by dictPages:
// a required, flat column of physical type phys, dictionary-encoded,
// without statistics, in V1 data pages, not yet written.
func (rg *pqRowGroup) canWriteDictPages(j int, phys parquet.Type) bool {
	d := rg.colMeta[j].Descr()
	p := rg.f.props
	return d.PhysicalType() == phys && d.MaxDefinitionLevel() == 0 && d.MaxRepetitionLevel() == 0 &&
		p.DictionaryEnabledFor(d.Path()) && !p.StatisticsEnabledFor(d.Path()) &&
		p.DataPageVersion() == parquet.DataPageV1 && rg.writers[j] == nil && rg.pageRows[j] == 0
}
