package table

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// Arrow IPC metadata is a flatbuffer whose vector lengths arrow-go trusts:
// it allocates make([]arrow.Field, n) for a schema of n fields, and a
// corrupt n of 4 billion kills the process with an out-of-memory error that
// no recover can catch. Its stream reader also ignores its own limits on
// message sizes. The checks below walk the few flatbuffer tables arrow-go
// sizes allocations from (Message, Schema, Field, KeyValue, Union, Footer;
// field slots from Arrow's format/Message.fbs, Schema.fbs, File.fbs) and
// refuse any vector that does not fit in its buffer, before arrow-go sees
// the bytes.

const (
	// maxIPCMetadata is arrow-go's default limit on one message's metadata
	// (WithMetadataSizeLimit).
	maxIPCMetadata = 64 << 20
	// ipcContinuation starts every message of the current IPC format.
	ipcContinuation = 0xFFFFFFFF
	fbMaxDepth      = 64
)

var errFlatbuffer = errors.New("the message metadata is corrupt")

type fbuf []byte

func (b fbuf) u32(p int) (int, error) {
	if p < 0 || p+4 > len(b) {
		return 0, errFlatbuffer
	}
	return int(binary.LittleEndian.Uint32(b[p:])), nil
}

// field returns the position of table tab's field at vtable offset vo, or
// 0 when the field is absent.
func (b fbuf) field(tab, vo int) (int, error) {
	if tab < 0 || tab+4 > len(b) {
		return 0, errFlatbuffer
	}
	vt := tab - int(int32(binary.LittleEndian.Uint32(b[tab:])))
	if vt < 0 || vt+4 > len(b) {
		return 0, errFlatbuffer
	}
	// Present when vo < the vtable's size, as the flatbuffers runtime
	// decides, even for an odd (corrupt) size.
	if vo >= int(binary.LittleEndian.Uint16(b[vt:])) {
		return 0, nil
	}
	if vt+vo+2 > len(b) {
		return 0, errFlatbuffer
	}
	off := int(binary.LittleEndian.Uint16(b[vt+vo:]))
	if off == 0 {
		return 0, nil
	}
	if tab+off >= len(b) {
		return 0, errFlatbuffer
	}
	return tab + off, nil
}

// ref follows the offset stored in field vo of tab: a table, vector or
// string position, or 0 when absent.
func (b fbuf) ref(tab, vo int) (int, error) {
	p, err := b.field(tab, vo)
	if err != nil || p == 0 {
		return 0, err
	}
	u, err := b.u32(p)
	if err != nil {
		return 0, err
	}
	return p + u, nil
}

// vector returns the element positions' start and count of the vector in
// field vo of tab, checking that count elements of elem bytes fit.
func (b fbuf) vector(tab, vo, elem int) (start, n int, err error) {
	p, err := b.ref(tab, vo)
	if err != nil || p == 0 {
		return 0, 0, err
	}
	if n, err = b.u32(p); err != nil {
		return 0, 0, err
	}
	if int64(n)*int64(elem) > int64(len(b)-p-4) {
		return 0, 0, errFlatbuffer
	}
	return p + 4, n, nil
}

// tables calls fn with each table of the vector of tables in field vo.
func (b fbuf) tables(tab, vo int, fn func(t int) error) error {
	start, n, err := b.vector(tab, vo, 4)
	if err != nil {
		return err
	}
	for i := range n {
		p := start + 4*i
		u, _ := b.u32(p)
		if err := fn(p + u); err != nil {
			return err
		}
	}
	return nil
}

func (b fbuf) keyValues(tab, vo int) error {
	return b.tables(tab, vo, func(kv int) error {
		for _, vo := range []int{4, 6} { // key, value
			if _, _, err := b.vector(kv, vo, 1); err != nil {
				return err
			}
		}
		return nil
	})
}

func (b fbuf) schema(tab int) error {
	// Every field is visited once per parent that lists it: a crafted
	// schema whose fields list the same child twice, 60 levels deep, is
	// 1.3 KB and 2^60 visits (here and in arrow-go after). A field is a
	// table of at least 4 bytes, so a schema of distinct fields visits
	// at most len(b)/4.
	budget := len(b)/4 + 1
	if err := b.tables(tab, 6, func(f int) error { return b.fieldDef(f, 0, &budget) }); err != nil {
		return err
	}
	if err := b.keyValues(tab, 8); err != nil {
		return err
	}
	_, _, err := b.vector(tab, 10, 8) // features
	return err
}

func (b fbuf) fieldDef(tab, depth int, budget *int) error {
	if *budget--; depth > fbMaxDepth || *budget < 0 {
		return errFlatbuffer
	}
	if _, _, err := b.vector(tab, 4, 1); err != nil { // name
		return err
	}
	tt, err := b.field(tab, 8) // type_type
	if err != nil {
		return err
	}
	if tt != 0 {
		typ, err := b.ref(tab, 10)
		if err != nil {
			return err
		}
		switch b[tt] {
		case 14: // Union: typeIds
			if typ != 0 {
				if _, _, err := b.vector(typ, 6, 4); err != nil {
					return err
				}
			}
		case 10: // Timestamp: timezone
			if typ != 0 {
				if _, _, err := b.vector(typ, 6, 1); err != nil {
					return err
				}
			}
		}
	}
	if err := b.tables(tab, 14, func(c int) error { return b.fieldDef(c, depth+1, budget) }); err != nil {
		return err
	}
	return b.keyValues(tab, 16)
}

// checkIPCMessage checks one message's metadata flatbuffer and returns its
// body length.
func checkIPCMessage(meta []byte) (body int64, err error) {
	b := fbuf(meta)
	root, err := b.u32(0)
	if err != nil {
		return 0, err
	}
	if err := b.keyValues(root, 12); err != nil {
		return 0, err
	}
	if ht, err := b.field(root, 6); err != nil {
		return 0, err
	} else if ht != 0 && b[ht] == 1 { // Schema
		h, err := b.ref(root, 8)
		if err != nil {
			return 0, err
		}
		if h != 0 {
			if err := b.schema(h); err != nil {
				return 0, err
			}
		}
	} else if ht != 0 && (b[ht] == 2 || b[ht] == 3) { // DictionaryBatch, RecordBatch
		h, err := b.ref(root, 8)
		if err != nil {
			return 0, err
		}
		if h != 0 && b[ht] == 2 {
			if h, err = b.ref(h, 6); err != nil { // DictionaryBatch.data
				return 0, err
			}
		}
		if h != 0 {
			for _, v := range [][2]int{{6, 16}, {8, 16}, {12, 8}} { // nodes, buffers, variadicBufferCounts
				if _, _, err := b.vector(h, v[0], v[1]); err != nil {
					return 0, err
				}
			}
		}
	}
	p, err := b.field(root, 10)
	if err != nil || p == 0 {
		return 0, err
	}
	if p+8 > len(b) {
		return 0, errFlatbuffer
	}
	return int64(binary.LittleEndian.Uint64(b[p:])), nil
}

// checkedStream passes an Arrow IPC stream through, checking each
// message's metadata before arrow-go reads it, and refusing message sizes
// beyond arrow-go's own default limits, which its stream reader does not
// apply.
type checkedStream struct {
	r       io.Reader
	pending []byte // checked bytes not yet returned
	body    int64  // body bytes still to pass through
	err     error
}

func (s *checkedStream) Read(p []byte) (int, error) {
	if len(s.pending) == 0 && s.body == 0 && s.err == nil {
		s.err = s.nextMessage()
	}
	if len(s.pending) > 0 {
		n := copy(p, s.pending)
		if s.pending = s.pending[n:]; len(s.pending) == 0 {
			s.pending = nil // an empty tail still holds the message (10 MB for a schema with a 1M-label codebook)
		}
		return n, nil
	}
	if s.body > 0 {
		if int64(len(p)) > s.body {
			p = p[:s.body]
		}
		n, err := s.r.Read(p)
		s.body -= int64(n)
		if errors.Is(err, io.EOF) && s.body > 0 {
			err = io.ErrUnexpectedEOF
		}
		return n, err
	}
	return 0, s.err
}

// nextMessage reads the next message's prefix and metadata into pending
// and sets body, or returns io.EOF at the end of the stream.
func (s *checkedStream) nextMessage() error {
	var hdr [8]byte
	n, err := io.ReadFull(s.r, hdr[:4])
	if n == 0 && errors.Is(err, io.EOF) {
		return io.EOF
	}
	if err != nil {
		return io.ErrUnexpectedEOF
	}
	size := binary.LittleEndian.Uint32(hdr[:4])
	head := hdr[:4]
	if size == ipcContinuation {
		if _, err := io.ReadFull(s.r, hdr[4:]); err != nil {
			return io.ErrUnexpectedEOF
		}
		size, head = binary.LittleEndian.Uint32(hdr[4:]), hdr[:8]
	}
	if size == 0 { // end-of-stream marker
		s.pending = head
		return nil
	}
	if size > maxIPCMetadata {
		return fmt.Errorf("message metadata of %d bytes, more than the %d-byte limit", size, maxIPCMetadata)
	}
	msg, err := readPrefixed(s.r, head, int(size))
	if err != nil {
		return err
	}
	body, err := checkIPCMessage(msg[len(head):])
	if err != nil {
		return err
	}
	if body < 0 || body > maxDecodeAlloc {
		return fmt.Errorf("message body of %d bytes declared, more than the %d-byte limit", body, maxDecodeAlloc)
	}
	s.pending = msg
	s.body = body
	return nil
}

// ipcFirstRead is the most of a message's metadata readPrefixed allocates
// before any of it has come.
const ipcFirstRead = 1 << 20

// readPrefixed returns head followed by the next size bytes of r, in one
// buffer. It allocates as the bytes come rather than size at once (a size
// that may be a lie), doubling up to size: the buffer is never more than
// twice what was read, and it is the one handed on, not a copy (io.ReadAll
// then append(head, …) held a schema message three times, 30 MB for a
// release with a 1M-label codebook: issue 11).
func readPrefixed(r io.Reader, head []byte, size int) ([]byte, error) {
	end := len(head) + size
	buf := make([]byte, len(head), len(head)+min(size, ipcFirstRead))
	copy(buf, head)
	for len(buf) < end {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(cap(buf), end-len(buf)))
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), end)])
		buf = buf[:len(buf)+n]
		if err != nil && len(buf) < end {
			if errors.Is(err, io.EOF) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// checkArrowFile checks the footer of an Arrow IPC file and the metadata
// of every message it points to, before arrow-go's file reader sees them.
func checkArrowFile(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if size < 18 {
		return errors.New("too short for an Arrow file")
	}
	var tail [10]byte
	if _, err := f.ReadAt(tail[:], size-10); err != nil {
		return err
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n <= 0 || n > size-18 || n > maxIPCMetadata {
		return errors.New("the footer length is corrupt")
	}
	foot := make([]byte, n)
	if _, err := f.ReadAt(foot, size-10-n); err != nil {
		return err
	}
	b := fbuf(foot)
	root, err := b.u32(0)
	if err != nil {
		return err
	}
	if sch, err := b.ref(root, 6); err != nil {
		return err
	} else if sch != 0 {
		if err := b.schema(sch); err != nil {
			return err
		}
	}
	if err := b.keyValues(root, 12); err != nil {
		return err
	}
	// The blocks' metadata lies before the footer, each block's its own:
	// in all no more than those bytes. Blocks that all pointed at one
	// large region were each read and checked — a few MB of file, time
	// and allocation quadratic in it.
	before := size - 10 - n
	var total int64
	for _, vo := range []int{8, 10} { // dictionaries, recordBatches: Block structs
		start, k, err := b.vector(root, vo, 24)
		if err != nil {
			return err
		}
		for i := range k {
			blk := foot[start+24*i:]
			off := int64(binary.LittleEndian.Uint64(blk))
			metaLen := int64(int32(binary.LittleEndian.Uint32(blk[8:])))
			if off < 0 || metaLen < 8 || metaLen > maxIPCMetadata || off > before-metaLen {
				return fmt.Errorf("block %d lies outside the file", i+1)
			}
			if total += metaLen; total > before {
				return fmt.Errorf("the blocks' metadata adds up to more than the file holds (block %d)", i+1)
			}
			meta := make([]byte, metaLen)
			if _, err := f.ReadAt(meta, off); err != nil {
				return err
			}
			skip := 4
			if binary.LittleEndian.Uint32(meta) == ipcContinuation {
				skip = 8
			}
			if _, err := checkIPCMessage(meta[skip:]); err != nil {
				return err
			}
		}
	}
	return nil
}
