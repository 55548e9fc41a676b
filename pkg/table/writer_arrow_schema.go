package table

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"slices"
	"sort"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// An Arrow output's schema message carries the stage's metadata, and with
// it the codebook's JSON: ~10 MB at 1M labels. arrow-go encodes it with a
// flatbuffers builder that starts at 1 KiB and doubles (an 8 and a 16 MiB
// buffer side by side at the last doubling), then copies the finished bytes
// into a buffer of their own: a 10 MB value held as ~35 MB more, which put
// decrypt → Arrow at 105–135 MB of peak RSS where → CSV took 90.
//
// writeSchemaMessage writes the same bytes without that copy. It has
// arrow-go encode the schema with each long metadata value replaced by a
// placeholder of its length mod 8 (a few bytes), then writes that small
// message with each placeholder's bytes replaced by the value's own, and
// the offsets that span a placeholder lengthened by what it lost.
//
// This is exact because a flatbuffer's layout does not depend on the bytes
// of its strings, only on their lengths modulo the alignment (8 at most in
// Arrow's schemas): every padding is the same, every offset is relative,
// and all offsets are in the tables written after the strings, which the
// builder puts before them (it fills the buffer back to front). In the
// schema message those tables are the root, Message, Schema, the metadata
// vector and its KeyValues, all known and walked; the fields, written
// first, lie after every string and are copied untouched. A layout other
// than that (a later arrow-go adding another table there) makes it write
// arrow-go's own encoding instead, and its test against arrow-go's bytes
// fails.

// bigMetaValue is the length from which a metadata value is written from
// its string rather than copied through arrow-go's builder. Short enough
// that the tests' and the stages' ordinary metadata take this path too.
const bigMetaValue = 256

// placeholders holds the placeholder strings: placeholders[:r] for r < 8.
const placeholders = "\x00\x00\x00\x00\x00\x00\x00"

// errSchemaLayout is writeSchemaMessage's finding of a layout it does not
// know; it then writes arrow-go's encoding.
var errSchemaLayout = errors.New("schema message layout not recognised")

// writeSchemaMessage writes schema s as one encapsulated IPC message
// (continuation, length, flatbuffer Message, padding to 8 bytes), byte for
// byte what arrow-go's ipc.Writer writes first.
func writeSchemaMessage(w io.Writer, s *arrow.Schema) error {
	pieces, err := schemaPieces(s)
	if errors.Is(err, errSchemaLayout) {
		return writeArrowSchemaPayload(w, s)
	}
	if err != nil {
		return err
	}
	size := 0
	for _, p := range pieces {
		size += len(p)
	}
	padded := (size + 8 + 7) &^ 7 // as arrow-go's writeMessage
	if padded > math.MaxInt32 {
		return errors.New("the metadata is too large for an Arrow schema message (2 GiB)")
	}
	var head [8]byte
	binary.LittleEndian.PutUint32(head[:], ipcContinuation)
	binary.LittleEndian.PutUint32(head[4:], uint32(padded-8))
	if _, err := w.Write(head[:]); err != nil {
		return err
	}
	for _, p := range pieces {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	_, err = w.Write(make([]byte, padded-8-size))
	return err
}

// schemaPieces returns s's flatbuffer Message in pieces to be written one
// after the other, or errSchemaLayout.
func schemaPieces(s *arrow.Schema) ([][]byte, error) {
	md := s.Metadata()
	vals := md.Values()
	short := slices.Clone(vals)
	var long []int
	for i, v := range vals {
		if len(v) >= bigMetaValue {
			short[i] = placeholders[:len(v)%8]
			long = append(long, i)
		}
	}
	if len(long) == 0 {
		return [][]byte{schemaFlatbuffer(s)}, nil
	}
	smd := arrow.NewMetadata(md.Keys(), short)
	fb := schemaFlatbuffer(arrow.NewSchemaWithEndian(s.Fields(), &smd, s.Endianness()))
	return spliceSchema(fb, md.Len(), long, vals)
}

// writeArrowSchemaPayload writes arrow-go's own encoding of s.
func writeArrowSchemaPayload(w io.Writer, s *arrow.Schema) error {
	p := ipc.GetSchemaPayload(s, memory.DefaultAllocator)
	defer p.Release()
	_, err := p.WritePayload(w)
	return err
}

// schemaFlatbuffer returns arrow-go's flatbuffer Message for schema s.
func schemaFlatbuffer(s *arrow.Schema) []byte {
	p := ipc.GetSchemaPayload(s, memory.DefaultAllocator)
	defer p.Release()
	m := p.Meta()
	defer m.Release()
	return slices.Clone(m.Bytes())
}

// spliceSchema returns the pieces of the schema message that holds vals,
// given fb, its encoding with the values long replaced by placeholders of
// len(v)%8 bytes (n is the metadata's length): fb's bytes with its offsets
// mended, and between them the long values (pointing into their strings;
// io.Writer neither keeps nor modifies what it is given).
func spliceSchema(fb fbuf, n int, long []int, vals []string) ([][]byte, error) {
	type slot struct {
		pos    int
		signed bool // a table's soffset to its vtable, else a uoffset
	}
	var slots []slot
	// uref records the uoffset in field vo of table tab and returns its
	// target (0 when absent).
	uref := func(tab, vo int) (int, error) {
		p, err := fb.field(tab, vo)
		if err != nil || p == 0 {
			return 0, err
		}
		slots = append(slots, slot{pos: p})
		u, err := fb.u32(p)
		return p + u, err
	}
	// table records table t's vtable offset, checking that the vtable has
	// at most fields slots.
	table := func(t, fields int) error {
		if t <= 0 || t+4 > len(fb) {
			return errSchemaLayout
		}
		vt := t - int(int32(binary.LittleEndian.Uint32(fb[t:])))
		if vt < 0 || vt+2 > len(fb) || int(binary.LittleEndian.Uint16(fb[vt:])) > 4+2*fields {
			return errSchemaLayout
		}
		slots = append(slots, slot{pos: t, signed: true})
		return nil
	}

	slots = append(slots, slot{pos: 0})
	msg, err := fb.u32(0)
	if err != nil {
		return nil, errSchemaLayout
	}
	// Message: version, header_type, header, bodyLength (custom_metadata
	// is empty: absent).
	if err := table(msg, 4); err != nil {
		return nil, err
	}
	if ht, err := fb.field(msg, 6); err != nil || ht == 0 || fb[ht] != 1 {
		return nil, errSchemaLayout
	}
	sch, err := uref(msg, 8)
	if err != nil || sch == 0 {
		return nil, errSchemaLayout
	}
	// Schema: endianness, fields, custom_metadata (no features).
	if err := table(sch, 3); err != nil {
		return nil, err
	}
	if _, err := uref(sch, 6); err != nil {
		return nil, errSchemaLayout
	}
	vec, err := uref(sch, 8)
	if err != nil || vec == 0 {
		return nil, errSchemaLayout
	}
	if k, err := fb.u32(vec); err != nil || k != n || vec+4+4*n > len(fb) {
		return nil, errSchemaLayout
	}
	strs := make([]int, n) // each value string's position
	for i := range n {
		p := vec + 4 + 4*i
		slots = append(slots, slot{pos: p})
		u, _ := fb.u32(p)
		kv := p + u
		if err := table(kv, 2); err != nil {
			return nil, err
		}
		if k, err := uref(kv, 4); err != nil || k == 0 {
			return nil, errSchemaLayout
		}
		if strs[i], err = uref(kv, 6); err != nil || strs[i] == 0 {
			return nil, errSchemaLayout
		}
	}

	// The placeholders' bytes, in fb's order, and what each lengthens.
	type cut struct{ at, short, grow int }
	cuts := make([]cut, 0, len(long))
	for _, i := range long {
		short := len(vals[i]) % 8
		p := strs[i]
		if l, err := fb.u32(p); err != nil || l != short || p+4+short >= len(fb) {
			return nil, errSchemaLayout
		}
		if len(vals[i]) > math.MaxInt32 {
			return nil, errors.New("a metadata value is too large for an Arrow schema message (2 GiB)")
		}
		cuts = append(cuts, cut{at: p + 4, short: short, grow: len(vals[i]) - short})
	}
	sort.Slice(cuts, func(a, b int) bool { return cuts[a].at < cuts[b].at })
	// moved is where position x of fb ends up: after every placeholder
	// that ends at or before it, shifted by what they grow.
	moved := func(x int) int {
		y := x
		for _, c := range cuts {
			if x >= c.at+c.short {
				y += c.grow
			}
		}
		return y
	}
	out := slices.Clone([]byte(fb))
	for _, s := range slots {
		v := int(int32(binary.LittleEndian.Uint32(fb[s.pos:])))
		var d int
		if s.signed {
			d = moved(s.pos) - moved(s.pos-v) // soffset: table − vtable
		} else {
			d = moved(s.pos+v) - moved(s.pos) // uoffset: target − slot
		}
		binary.LittleEndian.PutUint32(out[s.pos:], uint32(int32(d)))
	}
	for _, i := range long {
		binary.LittleEndian.PutUint32(out[strs[i]:], uint32(len(vals[i])))
	}

	pieces := make([][]byte, 0, 2*len(cuts)+1)
	last := 0
	byPos := make(map[int]string, len(long))
	for _, i := range long {
		byPos[strs[i]+4] = vals[i]
	}
	for _, c := range cuts {
		v := byPos[c.at]
		pieces = append(pieces, out[last:c.at], unsafe.Slice(unsafe.StringData(v), len(v)))
		last = c.at + c.short
	}
	return append(pieces, out[last:]), nil
}
