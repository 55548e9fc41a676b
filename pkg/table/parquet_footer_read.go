package table

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// readParquetFooter reads the footer of the Parquet file f, size bytes,
// when it is a plain one (not encrypted), and parses it as arrow-go's
// reader does, but for the pramkit items of its key-value metadata: those
// are taken out of the bytes arrow-go parses and returned as ours. A value
// of more than metaCloneBytes is the footer's own bytes, not a copy; a
// smaller one is copied, so that the footer's memory goes once the large
// ones are dropped (Reader.Meta: a caller deletes an item it has decoded).
//
// Why: a release's or a key file's codebook is one key-value item (21 MB
// of JSON at 2M labels). arrow-go's Thrift decoder reads a string into a
// buffer it grows by doubling, then copies it: ~48 MB live at once for
// that item, at the start of every stage that reads such a file, with the
// stage's own codebook being parsed right after.
//
// plain is false when the file ends without a plain footer ("PAR1"): the
// caller leaves the file to arrow-go, which says what is wrong with it or
// decrypts it. An error is a plain footer that cannot be parsed.
func readParquetFooter(f *os.File, size int64) (md *metadata.FileMetaData, ours Meta, plain bool, err error) {
	var tail [8]byte
	if size < 12 {
		return nil, nil, false, nil
	}
	if _, err := f.ReadAt(tail[:], size-8); err != nil {
		return nil, nil, false, nil
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if string(tail[4:]) != "PAR1" || n > size-12 {
		return nil, nil, false, nil
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-8-n); err != nil {
		return nil, nil, true, fmt.Errorf("reading the footer: %w", err)
	}
	stripped, ours, err := takePramkitItems(buf)
	if err != nil {
		return nil, nil, true, err
	}
	md, err = metadata.NewFileMetaData(stripped, nil)
	if err != nil {
		return nil, nil, true, err
	}
	if md.IsSetEncryptionAlgorithm() {
		// A plaintext footer of an encrypted file: arrow-go checks it.
		return nil, nil, false, nil
	}
	md.SetSourceFileSize(size)
	return md, ours, true, nil
}

// metaCloneBytes is the largest metadata value readParquetFooter copies
// out of the footer.
const metaCloneBytes = 64 << 10

// takePramkitItems returns the serialized FileMetaData b without the
// pramkit items of its key_value_metadata (field 5: a list of KeyValue
// structs, key field 1, value field 2), and those items. b itself is
// returned when it has none; else the bytes are new, and b holds the
// large values returned.
func takePramkitItems(b []byte) (stripped []byte, ours Meta, err error) {
	r := newThriftReader(b)
	var last int16
	var listAt, listEnd int // the list's header, and its end
	var kept [][2]int       // the other items' bytes
	for {
		typ, id, err := r.field(last)
		if err != nil {
			return nil, nil, err
		}
		if typ == thriftStop {
			break
		}
		if id != 5 || typ != thriftList {
			if err := r.skip(typ, false, 0); err != nil {
				return nil, nil, err
			}
			last = id
			continue
		}
		listAt = r.pos
		et, n, err := r.listHeader()
		if err != nil {
			return nil, nil, err
		}
		if et != thriftStruct {
			return nil, nil, fmt.Errorf("key_value_metadata is a list of type %d, not of structs", et)
		}
		for range n {
			at := r.pos
			key, value, hasValue, err := r.keyValue()
			if err != nil {
				return nil, nil, err
			}
			k, ok := metaKey(string(b[key[0]:key[1]]))
			if !ok || !hasValue {
				kept = append(kept, [2]int{at, r.pos})
				continue
			}
			if ours == nil {
				ours = Meta{}
			}
			if v := b[value[0]:value[1]]; len(v) > metaCloneBytes {
				ours[k] = unsafe.String(&v[0], len(v))
			} else {
				ours[k] = string(v)
			}
		}
		listEnd = r.pos
		last = id
	}
	if r.pos != len(b) {
		return nil, nil, fmt.Errorf("%d bytes after the footer's metadata", len(b)-r.pos)
	}
	if ours == nil {
		return b, nil, nil
	}
	size := listAt + binary.MaxVarintLen64 + 1 + len(b) - listEnd
	for _, k := range kept {
		size += k[1] - k[0]
	}
	stripped = make([]byte, 0, size)
	stripped = append(stripped, b[:listAt]...)
	stripped = appendListHeader(stripped, thriftStruct, len(kept))
	for _, k := range kept {
		stripped = append(stripped, b[k[0]:k[1]]...)
	}
	return append(stripped, b[listEnd:]...), ours, nil
}

// keyValue reads a KeyValue struct: where its key's and value's bytes are
// (value only when hasValue), skipping any other field.
func (r *thriftReader) keyValue() (key, value [2]int, hasValue bool, err error) {
	var last int16
	hasKey := false
	for {
		typ, id, err := r.field(last)
		if err != nil {
			return key, value, false, err
		}
		if typ == thriftStop {
			break
		}
		last = id
		if typ != thriftBinary || (id != 1 && id != 2) {
			if err := r.skip(typ, false, 0); err != nil {
				return key, value, false, err
			}
			continue
		}
		n, err := r.uvarint()
		if err != nil {
			return key, value, false, err
		}
		at := r.pos
		if err := r.skipBytes(n); err != nil {
			return key, value, false, err
		}
		if id == 1 {
			key, hasKey = [2]int{at, r.pos}, true
		} else {
			value, hasValue = [2]int{at, r.pos}, true
		}
	}
	if !hasKey {
		return key, value, false, errors.New("a key-value item without its key")
	}
	return key, value, hasValue, nil
}
