package table

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// footerRowGroups holds the metadata of a Parquet file's closed row groups
// until the footer is written, as the bytes the footer will hold: each
// RowGroup struct Thrift compact-encoded, as arrow-go encodes it inside
// the FileMetaData (rowGroupBytes).
//
// Why: arrow-go's FileMetaDataBuilder keeps every row group's metadata as
// Go structs until the footer, ~420 bytes a column chunk. perturb
// --mechanism bitflip at L = 4,000 bits writes 4,000 column chunks a
// 64Ki-row group: 52 MB of structs live at the end of 2M rows (~250 MB at
// 10M), peak RSS 158–161 MB; encoded they are ~70 bytes a chunk (the
// 2M-row file's footer: 8.8 MB for 31 row groups), and with them held so
// the run peaks at 95–96 MB.
//
// What stays in memory: the encoded row groups up to footerHeldBytes
// (plus the last one added; 1 MiB is ~4 row groups of 4,000 chunks), the
// rest appended to a temporary file, unlinked at once; and add's scratch,
// one row group's FileMetaData encoded (schema included). Encoding a row
// group's own FileMetaData to cut its RowGroup out converts and encodes
// the schema once a row group: ~8 ms and 6 MB of garbage at 4,000 columns
// (BenchmarkRowGroupMetadata), where a 2M-row bitflip run spends ~1.5 s a
// row group.
type footerRowGroups struct {
	held    []byte // the row groups' bytes not in spill, in order
	spill   *scratchFile
	spilled int64 // the bytes in spill, the row groups before held's
	n       int   // row groups added
	rows    int64 // their rows
	scratch bytes.Buffer
}

// footerHeldBytes bounds the row groups' bytes held in memory (a variable:
// tests lower it to make small files spill).
var footerHeldBytes = 1 << 20

// footerUnlinkSpill says to unlink the temporary file at once; tests turn
// it off to take the path of systems where an open file cannot be
// unlinked. footerSpilled, when a test sets it, is called with the file's
// name once it is made.
var (
	footerUnlinkSpill = true
	footerSpilled     func(name string)
)

// add stores the metadata of the next row group, rows rows: rg, the
// metadata builder of a row group that is its only one, finished
// (RowGroupMetaDataBuilder.Finish).
func (s *footerRowGroups) add(rg *metadata.FileMetaDataBuilder, rows int64) error {
	md, err := rg.Finish()
	if err != nil {
		return err
	}
	s.scratch.Reset()
	if _, err := md.WriteTo(&s.scratch, nil); err != nil {
		return err
	}
	b, err := rowGroupBytes(s.scratch.Bytes())
	if err != nil {
		return fmt.Errorf("parquet writer: row group %d's metadata: %w", s.n, err)
	}
	s.held = append(s.held, b...)
	s.n++
	s.rows += rows
	if len(s.held) > footerHeldBytes {
		return s.flush()
	}
	return nil
}

// flush appends held to spill, made on first use.
func (s *footerRowGroups) flush() error {
	if s.spill == nil {
		f, err := newScratchFile(footerUnlinkSpill)
		if err != nil {
			return fmt.Errorf("a temporary file for the metadata of %d row groups: %w (set TMPDIR to a folder with room)", s.n, err)
		}
		s.spill = f
		if footerSpilled != nil {
			footerSpilled(f.Name())
		}
	}
	if _, err := s.spill.Write(s.held); err != nil {
		return fmt.Errorf("writing the metadata of %d row groups to a temporary file: %w (set TMPDIR to a folder with room)", s.n, err)
	}
	s.spilled += int64(len(s.held))
	s.held = s.held[:0]
	return nil
}

// release lets go of the temporary file and the bytes held; safe to call
// twice.
func (s *footerRowGroups) release() {
	s.spill.close()
	s.spill = nil
	s.held = nil
	s.scratch = bytes.Buffer{}
}

// writeFooter writes the file's FileMetaData to w: meta, the file's
// metadata builder with no row group and no key-value metadata (schema,
// created_by, column orders), serialized as arrow-go serializes it, with
// field 3 (num_rows) the rows added, field 4 (row_groups) the row groups
// added and field 5 (key_value_metadata) kv — the bytes arrow-go writes
// for the builder holding those row groups and items. An item whose key
// later has is written from that item, a piece at a time. It returns
// the bytes written.
func (s *footerRowGroups) writeFooter(meta *metadata.FileMetaDataBuilder, kv metadata.KeyValueMetadata, later map[string]sizedItem, w io.Writer) (int64, error) {
	md, err := meta.Snapshot()
	if err != nil {
		return 0, err
	}
	if md.KeyValueMetadata().Len() != 0 {
		return 0, errors.New("parquet writer: the footer's builder holds key-value items: they are written from kv")
	}
	sp := &footerSplice{rg: s, kv: kv, later: later, w: w}
	if _, err := md.WriteTo(sp, nil); err != nil {
		return sp.n, err
	}
	if err := sp.finish(); err != nil {
		return sp.n, err
	}
	return sp.n, nil
}

// footerSplice is the io.Writer the row-group-less FileMetaData is
// serialized into (arrow-go hands it over in one Write, which is spliced
// without a copy: a key-value item of 10 MB is not held twice); it writes
// the footer to w.
type footerSplice struct {
	rg      *footerRowGroups
	kv      metadata.KeyValueMetadata
	later   map[string]sizedItem // kv's items made now, by key
	w       io.Writer
	pending []byte // what was given, when it came in several Writes
	piece   []byte // binaryField's copy of a string, a piece at a time
	done    bool
	n       int64
}

func (sp *footerSplice) Write(p []byte) (int, error) {
	if sp.done {
		return 0, errors.New("parquet writer: footer metadata after its end")
	}
	if len(sp.pending) == 0 {
		switch err := sp.splice(p); {
		case err == nil:
			sp.done = true
			return len(p), nil
		case !errors.Is(err, errThriftShort):
			return 0, err
		}
	}
	sp.pending = append(sp.pending, p...)
	return len(p), nil
}

// finish splices what came in several Writes.
func (sp *footerSplice) finish() error {
	if sp.done {
		return nil
	}
	sp.done = true
	return sp.splice(sp.pending)
}

// splice writes meta, a whole serialized FileMetaData with no row group,
// with num_rows and row_groups replaced. Nothing is written unless meta
// is whole.
func (sp *footerSplice) splice(meta []byte) error {
	num, list, err := footerFields(meta)
	if err != nil {
		return err
	}
	rg := sp.rg
	var tmp [2 * binary.MaxVarintLen64]byte
	parts := [][]byte{
		meta[:num[0]],
		binary.AppendVarint(tmp[:0], rg.rows), // zigzag, as compact i64s are
		meta[num[1]:list[0]],
		appendListHeader(tmp[binary.MaxVarintLen64:binary.MaxVarintLen64], thriftStruct, rg.n),
	}
	for _, p := range parts {
		if err := sp.write(p); err != nil {
			return err
		}
	}
	if rg.spilled > 0 {
		buf := make([]byte, 64<<10)
		n, err := io.CopyBuffer(sp.writer(), io.NewSectionReader(rg.spill, 0, rg.spilled), buf)
		if err == nil && n != rg.spilled {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return fmt.Errorf("copying the row groups' metadata from a temporary file: %w", err)
		}
	}
	if err := sp.write(rg.held); err != nil {
		return err
	}
	rest := meta[list[1]:]
	if len(sp.kv) > 0 {
		if err := sp.keyValues(); err != nil {
			return err
		}
		// The next field's header gives its id as a delta from the last
		// one's, 4 without the items and 5 now; a long header (delta 0)
		// gives the id itself, and a stop none.
		if h := rest[0]; h>>4 > 1 {
			if err := sp.write([]byte{(h>>4-1)<<4 | h&0x0F}); err != nil {
				return err
			}
			rest = rest[1:]
		} else if h>>4 == 1 {
			return fmt.Errorf("parquet writer: the footer's metadata already has field %d after row_groups", 5)
		}
	}
	return sp.write(rest)
}

// keyValues writes field 5, key_value_metadata: a list of KeyValue
// structs (field 1 key, field 2 value when set, both binary), with their
// strings written from where they are.
func (sp *footerSplice) keyValues() error {
	var tmp [2 + binary.MaxVarintLen64]byte
	if err := sp.write(appendListHeader(append(tmp[:0], (5-4)<<4|thriftList), thriftStruct, len(sp.kv))); err != nil {
		return err
	}
	for _, item := range sp.kv {
		if err := sp.binaryField(1<<4, item.Key); err != nil {
			return err
		}
		if d, ok := sp.later[item.Key]; ok {
			if err := sp.deferredField(1<<4, d); err != nil {
				return err
			}
		} else if item.Value != nil {
			if err := sp.binaryField(1<<4, *item.Value); err != nil {
				return err
			}
		}
		if err := sp.write([]byte{thriftStop}); err != nil {
			return err
		}
	}
	return nil
}

// binaryField writes a binary field, its header's delta given, of s: in
// pieces of at most 64 KiB, so that a long string is not copied whole.
func (sp *footerSplice) binaryField(delta byte, s string) error {
	var tmp [1 + binary.MaxVarintLen64]byte
	if err := sp.write(binary.AppendUvarint(append(tmp[:0], delta|thriftBinary), uint64(len(s)))); err != nil {
		return err
	}
	if sp.piece == nil && len(s) > 0 {
		sp.piece = make([]byte, 64<<10)
	}
	for len(s) > 0 {
		k := copy(sp.piece, s)
		if err := sp.write(sp.piece[:k]); err != nil {
			return err
		}
		s = s[k:]
	}
	return nil
}

// deferredField is binaryField of d's value, written as d gives it.
func (sp *footerSplice) deferredField(delta byte, d sizedItem) error {
	var tmp [1 + binary.MaxVarintLen64]byte
	if err := sp.write(binary.AppendUvarint(append(tmp[:0], delta|thriftBinary), uint64(d.n))); err != nil {
		return err
	}
	wrote := 0
	if err := d.Write(func(p []byte) error {
		wrote += len(p)
		return sp.write(p)
	}); err != nil {
		return err
	}
	if wrote != d.n {
		return fmt.Errorf("parquet writer: metadata item %s gave %d bytes, then %d", d.Key, d.n, wrote)
	}
	return nil
}

func (sp *footerSplice) write(p []byte) error {
	n, err := sp.w.Write(p)
	sp.n += int64(n)
	return err
}

// writer is sp.write as an io.Writer (for io.CopyBuffer).
func (sp *footerSplice) writer() io.Writer { return (*footerCount)(sp) }

type footerCount footerSplice

func (c *footerCount) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// appendListHeader appends the compact header of a list of n elements of
// type typ: one byte n<<4|typ below 15 elements, else 0xF0|typ and n as
// a uvarint.
func appendListHeader(dst []byte, typ byte, n int) []byte {
	if n < 15 {
		return append(dst, byte(n)<<4|typ)
	}
	return binary.AppendUvarint(append(dst, 0xF0|typ), uint64(n))
}

// footerFields finds, in a serialized FileMetaData, field 3's value
// (num_rows) and field 4's list header (row_groups), which must be an
// empty list of structs: the bytes [num[0], num[1]) and [list[0],
// list[1]). The bytes must end with the struct.
func footerFields(b []byte) (num, list [2]int, err error) {
	r := newThriftReader(b)
	var last int16
	for {
		typ, id, err := r.field(last)
		if err != nil {
			return num, list, err
		}
		if typ == thriftStop {
			break
		}
		start := r.pos
		switch {
		case id == 3 && typ == thriftI64:
			num = [2]int{start, 0}
		case id == 4 && typ == thriftList:
			et, n, err := r.listHeader()
			if err != nil {
				return num, list, err
			}
			if et != thriftStruct || n != 0 {
				return num, list, fmt.Errorf("parquet writer: the footer without row groups has a row_groups list of %d elements of type %d", n, et)
			}
			list = [2]int{start, r.pos}
			last = id
			continue
		}
		if err := r.skip(typ, false, 0); err != nil {
			return num, list, err
		}
		if id == 3 && typ == thriftI64 {
			num[1] = r.pos
		}
		last = id
	}
	if r.pos != len(b) {
		return num, list, fmt.Errorf("parquet writer: %d bytes after the footer's metadata", len(b)-r.pos)
	}
	if num[1] == 0 || list[1] == 0 || num[1] > list[0] {
		return num, list, errors.New("parquet writer: the footer's metadata has no num_rows then row_groups")
	}
	return num, list, nil
}

// rowGroupBytes returns, in a serialized FileMetaData of one row group,
// that RowGroup struct's bytes (field 4, row_groups: a list of one
// struct).
func rowGroupBytes(b []byte) ([]byte, error) {
	r := newThriftReader(b)
	var last int16
	for {
		typ, id, err := r.field(last)
		if err != nil {
			return nil, err
		}
		if typ == thriftStop {
			return nil, errors.New("no row_groups field")
		}
		if id == 4 && typ == thriftList {
			et, n, err := r.listHeader()
			if err != nil {
				return nil, err
			}
			if et != thriftStruct || n != 1 {
				return nil, fmt.Errorf("row_groups is a list of %d elements of type %d, not one struct", n, et)
			}
			start := r.pos
			if err := r.skip(thriftStruct, true, 0); err != nil {
				return nil, err
			}
			return b[start:r.pos], nil
		}
		if err := r.skip(typ, false, 0); err != nil {
			return nil, err
		}
		last = id
	}
}
