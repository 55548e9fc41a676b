package table

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
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
	t := newThriftWalk(bufio.NewReaderSize(io.NewSectionReader(f, st.Size()-8-n, n), 64<<10))
	// FileMetaData: field 5 is key_value_metadata, a list of KeyValue.
	err = t.fields(func(id int16, typ byte) error {
		if id != 5 || typ != thriftList {
			return t.skip(typ, false, 0)
		}
		etyp, size, err := t.listHeader()
		if err != nil {
			return err
		}
		for range size {
			if etyp != thriftStruct {
				if err := t.skip(etyp, true, 0); err != nil {
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

// thriftWalk reads a Thrift compact-protocol struct from a stream,
// skipping what its caller does not ask for without allocating it.
type thriftWalk struct {
	thriftDec
	r *bufio.Reader
}

func newThriftWalk(r *bufio.Reader) *thriftWalk { return &thriftWalk{thriftDec{r}, r} }

// fields calls field with each field of a struct up to its stop byte.
func (t *thriftWalk) fields(field func(id int16, typ byte) error) error {
	var last int16
	for {
		typ, id, err := t.field(last)
		if err != nil || typ == thriftStop {
			return err
		}
		last = id
		if err := field(id, typ); err != nil {
			return err
		}
	}
}

// binary reads a binary value, keeping at most its first max bytes.
func (t *thriftWalk) binary(max int) (head string, n int, err error) {
	v, err := t.uvarint()
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
			return t.skip(typ, false, 1)
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

// longSidecarString is the longest string of a sidecar that
// sidecarStageOf keeps as it is: stageItem ignores any item longer than
// 256 bytes, and no key it looks for comes near it.
const longSidecarString = 4096

// longStringStandIn replaces each longer string: a string that stageItem
// ignores too, in 302 bytes.
var longStringStandIn = strings.Repeat("x", 300)

// sidecarStageOf is sidecarStage of the sidecar read from r, a piece at a
// time, without holding it: each string longer than longSidecarString
// bytes (an item such as the codebook: 20 MB at 2M labels) is checked as
// json.Unmarshal checks it (escapes, no control character) and stands in
// the copy given to sidecarStage as longStringStandIn, which it decodes
// the same way. Reading the sidecar whole to check that an output does
// not replace a key file had put it on the heap beside the run's own
// state: anonymize A′ at 2M labels over its last output, 96 → 130 MB.
func sidecarStageOf(r io.Reader) (string, bool) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out, str []byte
	var scan jsonStringScan
	inStr, long := false, false
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", false
		}
		if !inStr {
			out = append(out, c)
			if c == '"' {
				inStr, long, str, scan = true, false, str[:0], jsonStringScan{}
			}
			continue
		}
		end, bad := scan.step(c)
		switch {
		case bad:
			return "", false
		case end:
			if long {
				out = append(out, longStringStandIn...)
			} else {
				out = append(out, str...)
			}
			out = append(out, '"')
			inStr = false
			continue
		}
		if !long {
			if str = append(str, c); len(str) > longSidecarString {
				long = true
			}
		}
	}
	if inStr {
		return "", false
	}
	return sidecarStage(out)
}

// jsonStringScan follows the content of a JSON string a byte at a time
// (sidecarStageOf, sidecarDigester).
type jsonStringScan struct {
	esc     bool // after a backslash
	hexLeft int  // hex digits of a \u escape still to come
}

// step takes the string's next byte: end when it is the closing quote,
// bad when the string cannot be valid JSON (an unknown escape, a \u
// escape without its four hex digits, a control character).
func (s *jsonStringScan) step(c byte) (end, bad bool) {
	switch {
	case s.hexLeft > 0:
		s.hexLeft--
		return false, !isHexDigit(c)
	case s.esc:
		s.esc = false
		if c == 'u' {
			s.hexLeft = 4
		}
		return false, !strings.ContainsRune(`"\/bfnrtu`, rune(c))
	case c == '\\':
		s.esc = true
	case c == '"':
		return true, false
	case c < ' ':
		return false, true
	}
	return false, false
}

// inEscape reports whether the last byte taken is inside an escape.
func (s *jsonStringScan) inEscape() bool { return s.esc || s.hexLeft > 0 }

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// arrowStage is parquetStage for an Arrow IPC file or stream: the "stage"
// item of its schema's custom_metadata (the stream's first message, or the
// file's footer, which arrow-go's file reader takes the schema from),
// found by walking the flatbuffers with small reads at their offsets, so
// that no other item is read: decrypt → Arrow at 2M labels over its last
// output had held that output's codebook, opened whole (81 → 133 MB).
// ours says whether it has pramkit items. Any error leaves the answer to
// Open.
func arrowStage(f *os.File) (stage string, ours bool, err error) {
	st, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	fb := &flatWalk{r: f}
	var head [8]byte
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return "", false, err
	}
	var schema int64 // the Schema table
	if bytes.HasPrefix(head[:], arrowFileMagic) {
		// Footer: … footer, its int32 length, "ARROW1"; its field 1
		// is the Schema.
		var tail [10]byte
		if _, err := f.ReadAt(tail[:], st.Size()-10); err != nil || !bytes.Equal(tail[4:], arrowFileMagic) {
			return "", false, errors.New("no Arrow file footer")
		}
		n := int64(int32(binary.LittleEndian.Uint32(tail[:4])))
		fb.base, fb.end = st.Size()-10-n, st.Size()-10
		if n <= 0 || n > maxIPCMetadata || fb.base < 8 {
			// (Past maxIPCMetadata the whole open refuses it too.)
			return "", false, errors.New("bad footer length")
		}
		footer, err := fb.root()
		if err != nil {
			return "", false, err
		}
		if schema, err = fb.offsetField(footer, 1); err != nil {
			return "", false, err
		}
	} else {
		// Stream: [0xFFFFFFFF] int32 length, then the Message; its
		// header (field 2) is the Schema when header_type (field 1) is 1.
		pos := int64(0)
		n := binary.LittleEndian.Uint32(head[:4])
		if n == 0xFFFFFFFF {
			pos, n = 4, binary.LittleEndian.Uint32(head[4:])
		}
		fb.base, fb.end = pos+4, pos+4+int64(int32(n))
		if int32(n) <= 0 || fb.end > st.Size() {
			return "", false, errors.New("bad message length")
		}
		msg, err := fb.root()
		if err != nil {
			return "", false, err
		}
		at, ok, err := fb.field(msg, 1)
		if err != nil || !ok {
			return "", false, errors.New("no message header type")
		}
		if b, err := fb.bytes(at, 1); err != nil || b[0] != 1 {
			return "", false, errors.New("the first message is not a schema")
		}
		if schema, err = fb.offsetField(msg, 2); err != nil {
			return "", false, err
		}
	}
	// Schema field 2: custom_metadata, a vector of KeyValue (key 0, value 1).
	vec, ok, err := fb.follow(schema, 2)
	if err != nil || !ok {
		return "", false, err
	}
	n, err := fb.u32(vec)
	if err != nil || int64(n) > (fb.end-vec)/4 {
		return "", false, errors.New("bad metadata vector")
	}
	for i := range int64(n) {
		kv, err := fb.offset(vec + 4 + 4*i)
		if err != nil {
			return "", false, err
		}
		key, _, err := fb.stringField(kv, 0, 256)
		if err != nil {
			return "", false, err
		}
		if _, isOurs := metaKey(key); !isOurs {
			continue
		}
		ours = true
		if key == MetaPrefix+"stage" {
			if stage, _, err = fb.stringField(kv, 1, 64); err != nil {
				return "", false, err
			}
		}
	}
	return stage, ours, nil
}

// flatWalk reads a flatbuffer that lies at [base, end) of r, a few bytes
// at a time, checking every offset against those bounds.
type flatWalk struct {
	r         io.ReaderAt
	base, end int64
}

// bytes reads n bytes at absolute position at.
func (w *flatWalk) bytes(at, n int64) ([]byte, error) {
	if at < w.base || n < 0 || at+n > w.end {
		return nil, errors.New("flatbuffer offset out of bounds")
	}
	b := make([]byte, n)
	_, err := w.r.ReadAt(b, at)
	return b, err
}

func (w *flatWalk) u32(at int64) (uint32, error) {
	b, err := w.bytes(at, 4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

// offset follows the uoffset at position at.
func (w *flatWalk) offset(at int64) (int64, error) {
	v, err := w.u32(at)
	return at + int64(v), err
}

// root is the root table's position.
func (w *flatWalk) root() (int64, error) { return w.offset(w.base) }

// field is where field i of the table at t is, if it is present.
func (w *flatWalk) field(t int64, i int) (int64, bool, error) {
	so, err := w.u32(t)
	if err != nil {
		return 0, false, err
	}
	vt := t - int64(int32(so))
	b, err := w.bytes(vt, 2)
	if err != nil {
		return 0, false, err
	}
	if size := int64(binary.LittleEndian.Uint16(b)); 4+2*int64(i)+2 > size {
		return 0, false, nil
	}
	b, err = w.bytes(vt+4+2*int64(i), 2)
	if err != nil {
		return 0, false, err
	}
	off := int64(binary.LittleEndian.Uint16(b))
	return t + off, off != 0, nil
}

// follow is where offset field i of the table at t points, if present.
func (w *flatWalk) follow(t int64, i int) (int64, bool, error) {
	at, ok, err := w.field(t, i)
	if err != nil || !ok {
		return 0, false, err
	}
	p, err := w.offset(at)
	return p, err == nil, err
}

// offsetField follows field i of the table at t, which must be present.
func (w *flatWalk) offsetField(t int64, i int) (int64, error) {
	p, ok, err := w.follow(t, i)
	if err == nil && !ok {
		err = errors.New("a required flatbuffer field is absent")
	}
	return p, err
}

// stringField reads string field i of the table at t, keeping at most
// its first max bytes ("" when absent, and when longer than max: it is
// then no key or stage looked for).
func (w *flatWalk) stringField(t int64, i int, max int64) (string, bool, error) {
	s, ok, err := w.follow(t, i)
	if err != nil || !ok {
		return "", false, err
	}
	n, err := w.u32(s)
	if err != nil {
		return "", false, err
	}
	if int64(n) > max {
		if s+4+int64(n) > w.end { // in bounds all the same, unread
			return "", false, errors.New("flatbuffer string out of bounds")
		}
		return "", true, nil
	}
	b, err := w.bytes(s+4, int64(n))
	return string(b), true, err
}
