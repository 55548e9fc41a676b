package table

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Thrift compact protocol types (the Thrift specification,
// doc/specs/thrift-compact-protocol.md).
const (
	thriftStop   = 0
	thriftTrue   = 1
	thriftFalse  = 2
	thriftByte   = 3
	thriftI16    = 4
	thriftI32    = 5
	thriftI64    = 6
	thriftDouble = 7
	thriftBinary = 8
	thriftList   = 9
	thriftSet    = 10
	thriftMap    = 11
	thriftStruct = 12
	thriftUUID   = 13
)

// maxThriftDepth bounds the nesting that skip follows (Parquet's footer
// nests a handful of levels).
const maxThriftDepth = 64

var errThriftShort = errors.New("thrift: truncated")

// thriftSource is what a thriftDec reads: a stream (keypeek's
// bufio.Reader over a file's footer) or bytes in memory (thriftBytes).
type thriftSource interface {
	io.ByteReader
	Discard(n int) (int, error)
}

// thriftDec reads Thrift compact-protocol values from src: field and list
// headers, and past values of any type without holding them. The footer
// reader (thriftReader, in memory) and keypeek (parquetStage, streamed)
// both walk Parquet footers with it.
type thriftDec struct{ src thriftSource }

func (d thriftDec) byte() (byte, error) { return d.src.ReadByte() }

func (d thriftDec) uvarint() (uint64, error) { return binary.ReadUvarint(d.src) }

// skipBytes reads past n bytes.
func (d thriftDec) skipBytes(n uint64) error {
	if n > 1<<31 {
		return errThriftShort // no footer is that long
	}
	_, err := d.src.Discard(int(n))
	return err
}

// field reads a field header after the field lastID: the field's type
// (thriftStop at the struct's end) and id. A header byte is delta<<4|type,
// the id lastID+delta, or, with delta 0, a zigzag varint i16 follows.
// A bool field's value is its type (thriftTrue, thriftFalse).
func (d thriftDec) field(lastID int16) (typ byte, id int16, err error) {
	c, err := d.byte()
	if err != nil || c == thriftStop {
		return thriftStop, 0, err
	}
	typ, delta := c&0x0F, int16(c>>4)
	if delta != 0 {
		return typ, lastID + delta, nil
	}
	v, err := d.uvarint()
	if err != nil {
		return 0, 0, err
	}
	return typ, int16(int64(v>>1) ^ -int64(v&1)), nil
}

// listHeader reads a list's (or set's) header: its element type and size.
func (d thriftDec) listHeader() (typ byte, n uint64, err error) {
	c, err := d.byte()
	if err != nil {
		return 0, 0, err
	}
	typ, n = c&0x0F, uint64(c>>4)
	if n == 15 {
		n, err = d.uvarint()
	}
	return typ, n, err
}

// skip reads past a value of type typ; depth counts the containers
// around it. A bool is a byte of its own in a list, set or map (elem),
// nothing in a field header.
func (d thriftDec) skip(typ byte, elem bool, depth int) error {
	if depth > maxThriftDepth {
		return errors.New("thrift: nested too deep")
	}
	switch typ {
	case thriftTrue, thriftFalse:
		if elem {
			_, err := d.byte()
			return err
		}
		return nil
	case thriftByte:
		_, err := d.byte()
		return err
	case thriftI16, thriftI32, thriftI64:
		_, err := d.uvarint()
		return err
	case thriftDouble:
		return d.skipBytes(8)
	case thriftUUID:
		return d.skipBytes(16)
	case thriftBinary:
		n, err := d.uvarint()
		if err != nil {
			return err
		}
		return d.skipBytes(n)
	case thriftList, thriftSet:
		et, n, err := d.listHeader()
		if err != nil {
			return err
		}
		for range n {
			if err := d.skip(et, true, depth+1); err != nil {
				return err
			}
		}
		return nil
	case thriftMap:
		n, err := d.uvarint()
		if err != nil || n == 0 {
			return err
		}
		kv, err := d.byte()
		if err != nil {
			return err
		}
		for range n {
			if err := d.skip(kv>>4, true, depth+1); err != nil {
				return err
			}
			if err := d.skip(kv&0x0F, true, depth+1); err != nil {
				return err
			}
		}
		return nil
	case thriftStruct:
		var last int16
		for {
			t, id, err := d.field(last)
			if err != nil {
				return err
			}
			if t == thriftStop {
				return nil
			}
			if err := d.skip(t, false, depth+1); err != nil {
				return err
			}
			last = id
		}
	}
	return fmt.Errorf("thrift: unknown type %d", typ)
}

// thriftBytes is a thriftSource of bytes in memory, which says where it
// is (pos): running out is errThriftShort.
type thriftBytes struct {
	b   []byte
	pos int
}

func (s *thriftBytes) ReadByte() (byte, error) {
	if s.pos >= len(s.b) {
		return 0, errThriftShort
	}
	c := s.b[s.pos]
	s.pos++
	return c, nil
}

func (s *thriftBytes) Discard(n int) (int, error) {
	if n > len(s.b)-s.pos {
		return 0, errThriftShort
	}
	s.pos += n
	return n, nil
}

// thriftReader reads Thrift compact-protocol bytes in memory, enough to
// find fields and skip values of any type, and says where they are (pos),
// which keypeek, reading a stream, cannot.
type thriftReader struct {
	*thriftBytes
	thriftDec
}

func newThriftReader(b []byte) *thriftReader {
	s := &thriftBytes{b: b}
	return &thriftReader{s, thriftDec{s}}
}
