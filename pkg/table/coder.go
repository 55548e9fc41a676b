package table

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Coder turns the cells of a column into codebook codes, whatever the
// column's Arrow type: utf8 (CSV), a dictionary (Parquet read with
// ReadOptions.DictColumns, Arrow IPC written from codes), or integers. The
// point is the dictionary case: a dictionary's labels are looked up once per
// batch — and not at all when the batch carries the same dictionary as the
// previous one, as every batch of a Parquet row group does — after which a
// cell costs one array index, with no string ever materialised per row.
//
// A Coder is not safe for concurrent use; give each goroutine its own.
type Coder struct {
	lookup func(label string) (uint32, error)

	// The dictionary mapped last, retained, and the code of each entry:
	// dictErrs holds the error of each entry that has none (its dictCodes
	// entry is noCode). Retained, not copied, to recognise it in the next
	// batch: its buffers cannot be freed, hence not reused, while held.
	// At 1M labels the copy was ~10 MB and an error per entry 16 MB, in
	// each worker's Coder: estimate on an Arrow release took 213–240 MB.
	dict      arrow.Array
	dictCodes []uint32
	dictErrs  map[int]error

	// Codes of integer cells seen so far (capped, for columns of a few
	// distinct numbers such as a Parquet int32 "age").
	ints map[int64]uint32

	// Codes of text cells seen so far (utf8 columns: CSV).
	cache *labelCache

	// label, if set, is the label of a code (false past the last):
	// mapDictionary tries the code after the previous entry's first.
	label func(code uint32) (string, bool)

	// all, if set, codes many labels at once (Coder.Batch); labels,
	// found, codes and cells are its scratch.
	all    func(labels []string, codes []uint32, found []bool)
	labels []string
	found  []bool
	codes  []uint32
	cells  []int
}

// textBlock is the cells textBlocks codes together.
const textBlock = 256

// textBlocks is Codes of a utf8 column without nulls once the cache is
// full: the cells the cache does not hold are coded with c.all, a block
// at a time, and those it finds no code for with lookup, in order.
func (c *Coder) textBlocks(dst []uint32, col *array.String, off int) (int, error) {
	// The batch's bytes: hold none. (A closure: c.labels may be another
	// slice by then, and every block's entries go, up to its capacity.)
	defer func() { clear(c.labels[:cap(c.labels)]) }()
	for base := 0; base < len(dst); base += textBlock {
		n := min(textBlock, len(dst)-base)
		c.labels, c.cells = c.labels[:0], c.cells[:0]
		for i := base; i < base+n; i++ {
			s := col.Value(off + i)
			if code, ok := c.cache.get(s); ok {
				dst[i] = code
				continue
			}
			c.labels, c.cells = append(c.labels, s), append(c.cells, i)
		}
		m := len(c.labels)
		c.codes = slices.Grow(c.codes[:0], m)[:m]
		c.found = slices.Grow(c.found[:0], m)[:m]
		c.all(c.labels, c.codes, c.found)
		for j, i := range c.cells {
			if c.found[j] {
				dst[i] = c.codes[j]
				continue
			}
			code, err := c.lookup(c.labels[j])
			if err != nil {
				return i, err
			}
			dst[i] = code
		}
	}
	return -1, nil
}

// Batch makes c code a dictionary's entries with all, many at once, where
// it would call lookup for each (from the first entry, or once InOrder
// gives up guessing): all sets codes[i] and found[i] for labels[i], as
// lookup would (codebook.Column.LabelIndexes overlaps the cache misses of
// a large column's lookups); an entry without a code is looked up alone,
// for lookup's error. It returns c.
func (c *Coder) Batch(all func(labels []string, codes []uint32, found []bool)) *Coder {
	c.all = all
	return c
}

// maxIntCache bounds Coder's cache of integer cells.
const maxIntCache = 1 << 12

// NewCoder returns a Coder that codes a label with lookup, which must be a
// pure function (it is called once per dictionary entry, entries no row
// refers to included, and its errors are kept and reported only for cells
// that use the entry). A null cell is the label "", as Values reads it.
func NewCoder(lookup func(label string) (code uint32, err error)) *Coder {
	return &Coder{lookup: lookup}
}

// MapCoder returns a Coder over a label → code map; a label outside it is
// an error naming the label.
func MapCoder(codes map[string]uint32) *Coder {
	return LookupCoder(func(s string) (uint32, bool) {
		c, ok := codes[s]
		return c, ok
	})
}

// LookupCoder is MapCoder over a lookup function (a codebook column's own
// label index, codebook.Column.LabelIndex, which costs a few bytes a label
// where a map costs ~55).
func LookupCoder(code func(string) (uint32, bool)) *Coder {
	return NewCoder(func(s string) (uint32, error) {
		if c, ok := code(s); ok {
			return c, nil
		}
		// Cloned: s may point into a batch whose buffers the reader
		// lends to a later one (ReadOptions.ReuseBuffers).
		return 0, &UnknownLabelError{Label: strings.Clone(s)}
	})
}

// InOrder makes c try, for each entry of a dictionary it maps, the code
// after the previous entry's (0 for the first) before calling lookup:
// label gives the label of a code, false past the last. A dictionary in
// code order — a release decrypt wrote, whose Arrow dictionary is the
// codebook's labels — is then mapped by comparing each entry with one
// label, and lookup, with the label index it builds on first use (~6
// bytes a label, 5.7 MB at 1M labels: issue 11, peak RSS ≤ 100 MB), is
// never called. Codes come out the same either way: lookup must give
// label's inverse. It returns c.
func (c *Coder) InOrder(label func(code uint32) (string, bool)) *Coder {
	c.label = label
	return c
}

// UnknownLabelError is MapCoder's error for a label outside its map.
type UnknownLabelError struct{ Label string }

func (e *UnknownLabelError) Error() string {
	return "value " + QuoteCell(e.Label) + " is not in the codebook"
}

// Codes sets dst[i] to the code of cell off+i of a, for i < len(dst). On
// failure it returns the index i of the first cell that has no code and
// lookup's error for it (cells before i are coded); else -1 and nil.
func (c *Coder) Codes(dst []uint32, a arrow.Array, off int) (int, error) {
	switch col := a.(type) {
	case *array.Dictionary:
		return c.dictionary(dst, col, off)
	case *array.String:
		if col.NullN() == 0 && c.all != nil && c.cache != nil && c.cache.n >= maxCachedLabels {
			// Past what the cache keeps (a column of many labels):
			// the misses are looked up in blocks.
			return c.textBlocks(dst, col, off)
		}
		if col.NullN() == 0 {
			for i := range dst {
				code, err := c.text(col.Value(off + i))
				if err != nil {
					return i, err
				}
				dst[i] = code
			}
			return -1, nil
		}
		for i := range dst {
			if col.IsNull(off + i) {
				code, err := c.lookup("")
				if err != nil {
					return i, err
				}
				dst[i] = code
				continue
			}
			code, err := c.text(col.Value(off + i))
			if err != nil {
				return i, err
			}
			dst[i] = code
		}
		return -1, nil
	case *array.Int32, *array.Int64, *array.Uint32:
		vs := ValuesOf(a)
		for i := range dst {
			v, ok := vs.Int(off + i)
			if !ok { // null
				code, err := c.lookup("")
				if err != nil {
					return i, err
				}
				dst[i] = code
				continue
			}
			code, err := c.intCode(v)
			if err != nil {
				return i, err
			}
			dst[i] = code
		}
		return -1, nil
	}
	vs := ValuesOf(a)
	for i := range dst {
		code, err := c.lookup(vs.String(off + i))
		if err != nil {
			return i, err
		}
		dst[i] = code
	}
	return -1, nil
}

func (c *Coder) intCode(v int64) (uint32, error) {
	if code, ok := c.ints[v]; ok {
		return code, nil
	}
	code, err := c.lookup(strconv.FormatInt(v, 10))
	if err != nil {
		return 0, err
	}
	if c.ints == nil {
		c.ints = make(map[int64]uint32)
	}
	if len(c.ints) < maxIntCache {
		c.ints[v] = code
	}
	return code, nil
}

// dictionary codes a dictionary column: the dictionary once, then indices.
func (c *Coder) dictionary(dst []uint32, d *array.Dictionary, off int) (int, error) {
	c.mapDictionary(d.Dictionary())
	var nullCode uint32
	var nullErr error
	if d.NullN() > 0 {
		nullCode, nullErr = c.lookup("")
	}
	if idx, ok := d.Indices().(*array.Int32); ok && d.NullN() == 0 {
		vals := idx.Int32Values()[off : off+len(dst)]
		for i, k := range vals {
			// validateBatch checked 0 ≤ k < len(dictionary).
			code := c.dictCodes[k]
			if code == noCode {
				if err := c.dictErrs[int(k)]; err != nil {
					return i, err
				}
			}
			dst[i] = code
		}
		return -1, nil
	}
	for i := range dst {
		if d.IsNull(off + i) {
			if nullErr != nil {
				return i, nullErr
			}
			dst[i] = nullCode
			continue
		}
		k := d.GetValueIndex(off + i)
		code := c.dictCodes[k]
		if code == noCode {
			if err := c.dictErrs[k]; err != nil {
				return i, err
			}
		}
		dst[i] = code
	}
	return -1, nil
}

// noCode marks a dictionary entry that may have no code: its error, if it
// has one, is in Coder.dictErrs (a real code of that value has none).
const noCode = math.MaxUint32

// inOrderMisses is the entries in a row of one dictionary that InOrder's
// guess may miss before mapDictionary stops guessing for that dictionary.
const inOrderMisses = 8

// mapDictionary looks up every entry of dict, unless dict holds the same
// labels as the dictionary mapped last.
func (c *Coder) mapDictionary(dict arrow.Array) {
	if c.dict != nil && sameLabels(dict, c.dict) {
		return
	}
	if c.dict != nil {
		c.dict.Release()
	}
	dict.Retain()
	c.dict = dict
	n := dict.Len()
	c.dictCodes = slices.Grow(c.dictCodes[:0], n)[:n]
	clear(c.dictErrs)
	vs := ValuesOf(dict)
	next := uint32(0) // the code after the previous entry's
	// The entries tried in order and missed in a row: past
	// inOrderMisses the dictionary is not in code order (or, a row
	// group's of a high-cardinality column, has gaps everywhere), and
	// each try read a label from a random place of the codebook for
	// nothing.
	missed := 0
	for k := range n {
		if c.all != nil && (c.label == nil || missed >= inOrderMisses) {
			c.mapAll(vs, k, n)
			return
		}
		v := vs.String(k)
		if c.label != nil && missed < inOrderMisses && !dict.IsNull(k) {
			if l, ok := c.label(next); ok && l == v {
				c.dictCodes[k] = next
				next++
				missed = 0
				continue
			}
			missed++
		}
		code, err := c.lookup(v)
		if err != nil {
			if c.dictErrs == nil {
				c.dictErrs = make(map[int]error)
			}
			c.dictErrs[k] = err
			code = noCode
		} else {
			next = code + 1
		}
		c.dictCodes[k] = code
	}
}

// mapAll codes entries from..n-1 of the dictionary whose values are vs
// with c.all (Batch).
func (c *Coder) mapAll(vs Values, from, n int) {
	m := n - from
	c.labels = slices.Grow(c.labels[:0], m)[:m]
	c.found = slices.Grow(c.found[:0], m)[:m]
	for i := range m {
		c.labels[i] = vs.String(from + i)
	}
	codes := c.dictCodes[from:n]
	c.all(c.labels, codes, c.found)
	for i, ok := range c.found {
		if ok {
			continue
		}
		code, err := c.lookup(c.labels[i])
		if err != nil {
			if c.dictErrs == nil {
				c.dictErrs = make(map[int]error)
			}
			c.dictErrs[from+i] = err
			code = noCode
		}
		codes[i] = code
	}
	// The labels are the dictionary's bytes, which the reader may lend
	// to a later batch (ReadOptions.ReuseBuffers): hold none.
	clear(c.labels)
}

// sameLabels reports whether dictionaries a and b are string arrays
// without nulls of the same labels in the same order (others are never
// the same: they are mapped again).
func sameLabels(a, b arrow.Array) bool {
	sa, ok := a.(*array.String)
	sb, ok2 := b.(*array.String)
	if !ok || !ok2 || sa.NullN() != 0 || sb.NullN() != 0 || sa.Len() != sb.Len() {
		return false
	}
	if sa.Len() == 0 {
		return true
	}
	oa, ob := sa.ValueOffsets(), sb.ValueOffsets()
	return bytes.Equal(sa.ValueBytes()[oa[0]:oa[len(oa)-1]], sb.ValueBytes()[ob[0]:ob[len(ob)-1]]) &&
		sameOffsets(oa, ob)
}

// sameOffsets reports whether offs and base, each rebased to start at 0,
// are equal.
func sameOffsets(offs, base []int32) bool {
	if len(offs) != len(base) {
		return false
	}
	for i, o := range offs {
		if o-offs[0] != base[i]-base[0] {
			return false
		}
	}
	return true
}
