package table

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
)

// Checking that an output would not replace a key file (keyKind) reads the
// metadata of whatever is at the output's path, which is most often the
// previous run's output: for decrypt at 1M labels, a Parquet file or a
// CSV sidecar that carries a 10 MB codebook. Opening the Parquet file
// parsed its footer (the thrift decoder grows a buffer by doubling for the
// codebook's string: ~45 MB live at once), and decoding the sidecar made
// the codebook a string again, while the run held its own codebook and
// output metadata (issue 11: peak RSS ≤ 100 MB per stage). The stage item
// alone decides, so these functions read it without keeping the others.

// parquetStage reads the "stage" item of the Parquet file f from its
// footer's key-value metadata, skipping every other value without
// holding it: ours says whether the footer has pramkit items at all
// (else the metadata comes from the stored Arrow schema, metaOfParquet).
// Any error (not Parquet, an encrypted footer, a footer it cannot walk)
// leaves the answer to Open.
func parquetStage(f *os.File) (stage string, ours bool, err error) {
	st, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	var tail [8]byte
	if st.Size() < 12 {
		return "", false, errors.New("too short")
	}
	if _, err := f.ReadAt(tail[:], st.Size()-8); err != nil {
		return "", false, err
	}
	if string(tail[4:]) != "PAR1" {
		return "", false, errors.New("no plain Parquet footer")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > st.Size()-12 {
		return "", false, errors.New("bad footer length")
	}
	t := &thriftWalk{r: bufio.NewReaderSize(io.NewSectionReader(f, st.Size()-8-n, n), 64<<10)}
	// FileMetaData: field 5 is key_value_metadata, a list of KeyValue.
	err = t.fields(func(id int16, typ byte) error {
		if id != 5 || typ != thriftList {
			return t.skip(typ, 0)
		}
		size, etyp, err := t.listHeader()
		if err != nil {
			return err
		}
		for range size {
			if etyp != thriftStruct {
				if err := t.skip(etyp, 0); err != nil {
					return err
				}
				continue
			}
			key, value, hasValue, err := t.keyValue()
			if err != nil {
				return err
			}
			if _, ok := metaKey(key); ok && hasValue {
				ours = true
				if key == MetaPrefix+"stage" {
					stage = value
				}
			}
		}
		return nil
	})
	return stage, ours, err
}

// Thrift compact protocol types (the Thrift specification,
// doc/specs/thrift-compact-protocol.md).
const (
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
)

// thriftWalk reads a Thrift compact-protocol struct, skipping what its
// caller does not ask for without allocating it.
type thriftWalk struct {
	r *bufio.Reader
}

// maxThriftDepth bounds the nesting that skip follows (Parquet's footer
// nests a handful of levels).
const maxThriftDepth = 64

func (t *thriftWalk) varint() (uint64, error) { return binary.ReadUvarint(t.r) }

// fields calls field with each field of a struct up to its stop byte.
func (t *thriftWalk) fields(field func(id int16, typ byte) error) error {
	var last int16
	for {
		b, err := t.r.ReadByte()
		if err != nil {
			return err
		}
		if b == 0 {
			return nil
		}
		id := last + int16(b>>4)
		if b>>4 == 0 {
			v, err := t.varint()
			if err != nil {
				return err
			}
			id = int16(int64(v>>1) ^ -int64(v&1))
		}
		last = id
		if err := field(id, b&0x0f); err != nil {
			return err
		}
	}
}

// listHeader reads a list's or a set's size and element type.
func (t *thriftWalk) listHeader() (int, byte, error) {
	b, err := t.r.ReadByte()
	if err != nil {
		return 0, 0, err
	}
	size := uint64(b >> 4)
	if size == 15 {
		if size, err = t.varint(); err != nil {
			return 0, 0, err
		}
	}
	if size > 1<<31 {
		return 0, 0, errors.New("list too long")
	}
	return int(size), b & 0x0f, nil
}

// binary reads a binary value, keeping at most its first max bytes.
func (t *thriftWalk) binary(max int) (head string, n int, err error) {
	v, err := t.varint()
	if err != nil {
		return "", 0, err
	}
	if v > 1<<31 {
		return "", 0, errors.New("binary too long")
	}
	n = int(v)
	keep := min(n, max)
	b := make([]byte, keep)
	if _, err := io.ReadFull(t.r, b); err != nil {
		return "", 0, err
	}
	if _, err := t.r.Discard(n - keep); err != nil {
		return "", 0, err
	}
	return string(b), n, nil
}

// keyValue reads a KeyValue struct (1: key, 2: optional value); a value
// longer than any stage is given as "" and hasValue (it is not "key").
func (t *thriftWalk) keyValue() (key, value string, hasValue bool, err error) {
	const maxKey, maxValue = 256, 64
	err = t.fields(func(id int16, typ byte) error {
		if typ != thriftBinary || (id != 1 && id != 2) {
			return t.skip(typ, 1)
		}
		head, n, err := t.binary(max(maxKey, maxValue))
		if err != nil {
			return err
		}
		if id == 1 {
			key = head
			if n > maxKey {
				key += "…" // longer than any key looked for, prefix kept
			}
			return nil
		}
		hasValue, value = true, head
		if n > maxValue {
			value = ""
		}
		return nil
	})
	return key, value, hasValue, err
}

// skip reads past a value of type typ.
func (t *thriftWalk) skip(typ byte, depth int) error {
	if depth > maxThriftDepth {
		return errors.New("nested too deep")
	}
	var err error
	switch typ {
	case thriftTrue, thriftFalse:
		// a field's value is in its header; a list element takes a byte,
		// read by the list's case
	case thriftByte:
		_, err = t.r.ReadByte()
	case thriftI16, thriftI32, thriftI64:
		_, err = t.varint()
	case thriftDouble:
		_, err = t.r.Discard(8)
	case thriftBinary:
		_, _, err = t.binary(0)
	case thriftList, thriftSet:
		size, etyp, e := t.listHeader()
		if e != nil {
			return e
		}
		for range size {
			if err := t.skipElement(etyp, depth+1); err != nil {
				return err
			}
		}
	case thriftMap:
		size, e := t.varint()
		if e != nil {
			return e
		}
		if size == 0 {
			return nil
		}
		kv, e := t.r.ReadByte()
		if e != nil {
			return e
		}
		for range size {
			for _, et := range []byte{kv >> 4, kv & 0x0f} {
				if err := t.skipElement(et, depth+1); err != nil {
					return err
				}
			}
		}
	case thriftStruct:
		err = t.fields(func(_ int16, typ byte) error { return t.skip(typ, depth+1) })
	default:
		err = errors.New("unknown thrift type")
	}
	return err
}

// skipElement reads past an element of a list, set or map of type typ: a
// boolean element takes a byte of its own, unlike a boolean field.
func (t *thriftWalk) skipElement(typ byte, depth int) error {
	if typ == thriftTrue || typ == thriftFalse {
		_, err := t.r.ReadByte()
		return err
	}
	return t.skip(typ, depth)
}

// sidecarStage is decodeSidecarFull(b).Meta["stage"], and whether it
// decodes, without making strings of the other items: they are checked
// to be strings (or null), as Meta's decoding checks them, and left in b.
func sidecarStage(b []byte) (string, bool) {
	var s struct {
		Pramkit int                  `json:"pramkit"`
		Meta    map[string]stageItem `json:"meta"`
		Data    *dataDigest          `json:"data,omitempty"`
	}
	if err := json.Unmarshal(b, &s); err != nil || s.Pramkit != 1 {
		return "", false
	}
	return s.Meta["stage"].s, true
}

// stageItem is a metadata item decoded only if it is short enough to be a
// stage, whose value is then s.
type stageItem struct{ s string }

func (v *stageItem) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		return nil // as a string in Meta: left as it is
	case len(b) == 0 || b[0] != '"':
		return errors.New("a metadata item that is not a string")
	case len(b) > 256:
		return nil // longer than any stage: not "key"
	}
	return json.Unmarshal(b, &v.s)
}
