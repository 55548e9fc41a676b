package anonymize

import (
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pramkit/pramkit/pkg/table"
)

// interner numbers the distinct cells of one column in order of first
// appearance: every cell gets a code, every code keeps its text once.
// Lookups do not allocate (string cells are looked up with the batch's
// memory, integer cells by value); only a new distinct value is copied.
type interner struct {
	strs   map[string]uint32
	ints   map[int64]uint32
	values []string // text of each code
}

func newInterner() *interner {
	return &interner{strs: map[string]uint32{}}
}

// typedCells is one batch column with its typed view, if it has one:
// string, int64 and int32 cells are read without going through Values.
type typedCells struct {
	str *array.String
	i64 *array.Int64
	i32 *array.Int32
	any table.Values
}

func typedCellsOf(a arrow.Array) typedCells {
	c := typedCells{any: table.ValuesOf(a)}
	switch a := a.(type) {
	case *array.String:
		c.str = a
	case *array.Int64:
		c.i64 = a
	case *array.Int32:
		c.i32 = a
	}
	return c
}

// column reads the cells of one batch column through an interner.
type column struct {
	in *interner
	typedCells
}

func (in *interner) column(a arrow.Array) column {
	return column{in: in, typedCells: typedCellsOf(a)}
}

// code returns the code of cell i, and whether the value is new.
func (c column) code(i int) (uint32, bool) {
	if (c.i64 != nil || c.i32 != nil) && !c.i64IsNull(i) {
		var v int64
		if c.i64 != nil {
			v = c.i64.Value(i)
		} else {
			v = int64(c.i32.Value(i))
		}
		if k, ok := c.in.ints[v]; ok {
			return k, false
		}
		return c.in.addInt(v), true
	}
	var s string
	if c.str != nil && !c.str.IsNull(i) {
		s = c.str.Value(i)
	} else {
		s = c.any.String(i) // nulls read as ""
	}
	if k, ok := c.in.strs[s]; ok {
		return k, false
	}
	k := uint32(len(c.in.values))
	s = strings.Clone(s)
	c.in.strs[s] = k
	c.in.values = append(c.in.values, s)
	return k, true
}

func (c column) i64IsNull(i int) bool {
	if c.i64 != nil {
		return c.i64.IsNull(i)
	}
	return c.i32.IsNull(i)
}

// addInt gives integer v a code. Its text is the decimal form, which is
// also what a string column holding it would read, so both spellings share
// the code.
func (in *interner) addInt(v int64) uint32 {
	if in.ints == nil {
		in.ints = map[int64]uint32{}
	}
	s := strconv.FormatInt(v, 10)
	k, ok := in.strs[s]
	if !ok {
		k = uint32(len(in.values))
		in.strs[s] = k
		in.values = append(in.values, s)
	}
	in.ints[v] = k
	return k
}

// codes is a growing column of value codes stored in the narrowest width
// that holds the largest code so far: 1 byte per row while the column has
// at most 256 distinct values, 2 bytes up to 65 536, 4 bytes beyond.
// Widening copies the column once per width, so appends stay O(1)
// amortized.
type codes struct {
	c8  []uint8
	c16 []uint16
	c32 []uint32
	w   int // bytes per row: 1, 2 or 4
}

func newCodes(capacity int) *codes {
	return &codes{c8: make([]uint8, 0, capacity), w: 1}
}

// append adds the code of the next row.
func (c *codes) append(k uint32) {
	switch {
	case c.w == 1 && k <= 0xff:
		c.c8 = append(c.c8, uint8(k))
		return
	case c.w == 1:
		c.widen(k)
	}
	switch {
	case c.w == 2 && k <= 0xffff:
		c.c16 = append(c.c16, uint16(k))
		return
	case c.w == 2:
		c.widen(k)
	}
	c.c32 = append(c.c32, k)
}

// widen moves the column to the width code k needs.
func (c *codes) widen(k uint32) {
	n := c.len()
	if k <= 0xffff {
		c.c16 = make([]uint16, n, max(2*n, 1024))
		for i, x := range c.c8 {
			c.c16[i] = uint16(x)
		}
		c.c8, c.w = nil, 2
		return
	}
	c.c32 = make([]uint32, n, max(2*n, 1024))
	switch c.w {
	case 1:
		for i, x := range c.c8 {
			c.c32[i] = uint32(x)
		}
	case 2:
		for i, x := range c.c16 {
			c.c32[i] = uint32(x)
		}
	}
	c.c8, c.c16, c.w = nil, nil, 4
}

// at returns the code of row i.
func (c *codes) at(i uint32) uint32 {
	switch c.w {
	case 1:
		return uint32(c.c8[i])
	case 2:
		return uint32(c.c16[i])
	}
	return c.c32[i]
}

func (c *codes) len() int {
	switch c.w {
	case 1:
		return len(c.c8)
	case 2:
		return len(c.c16)
	}
	return len(c.c32)
}

// bytes is the memory the codes take, capacity included.
func (c *codes) bytes() int {
	return cap(c.c8) + 2*cap(c.c16) + 4*cap(c.c32)
}
