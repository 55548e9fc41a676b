package table

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// Dictionary-encoded column chunks, read without pqarrow.
//
// Every Parquet file pramkit writes stores its columns (codes as INT32,
// labels as BYTE_ARRAY) required and dictionary-encoded: per row group and
// column, a PLAIN dictionary page and data pages of RLE_DICTIONARY indices
// (Parquet format, Encodings.md: a bit width byte, then the RLE /
// bit-packing hybrid). pqarrow reads them through its record readers,
// which for every batch build fresh buffers, zero them, gather the values
// through the dictionary into a builder and validate the result again: at
// 10M rows that was most of estimate's count of a Parquet release and a
// fifth of decrypt's reading, and its buffers (~650 MB of garbage for
// estimate) kept the collector busy. readDictChunk decodes a chunk's
// indices straight into the batch's own buffer, checking each against the
// dictionary's size as it goes.

// dictChunk is one column chunk as decoded by readDictChunk: its
// dictionary page's PLAIN bytes and number of entries, and one index per
// row.
type dictChunk struct {
	dict  []byte // the dictionary page's data (valid until the next page)
	dictN int
	idx   []int32
}

// errNotDictChunk is readDictChunk's error for a chunk it does not decode
// (not dictionary-encoded, or levels): the metadata promised otherwise.
var errNotDictChunk = errors.New("a page is not a dictionary-encoded page of a required column, as the file's metadata says")

// readDictChunk reads the pages of one required column chunk of rows
// rows: the dictionary page, which it hands to dict (its bytes are valid
// during the call only), then the data pages, whose indices it writes to
// idx[:rows] (checked against the dictionary's size) — or, when values
// is not nil, the entries of *values (which dict has filled) they point
// to.
func readDictChunk(pr file.PageReader, rows int, idx []int32, dict func(data []byte, n int) error, values *[]int32) error {
	if len(idx) < rows {
		return fmt.Errorf("internal error: %d indices for %d rows", len(idx), rows)
	}
	return readDictPages(pr, rows, dict, func(data []byte, n, dictN, off int) error {
		if values != nil {
			if len(*values) != dictN {
				return fmt.Errorf("internal error: %d dictionary values for %d entries", len(*values), dictN)
			}
			return decodeDictValues(idx[off:off+n], data, *values)
		}
		return decodeDictIndices(idx[off:off+n], data, dictN)
	})
}

// readDictPages reads the pages of one required column chunk of rows
// rows: it hands the dictionary page to dict, then each data page's
// RLE_DICTIONARY data, its number of values n and the number of rows
// before it (off) to page, having checked the page's encoding, that the
// dictionary came first and that the page's values fit in the rows; and
// it checks that the pages hold rows values in all.
func readDictPages(pr file.PageReader, rows int, dict func(data []byte, n int) error, page func(data []byte, n, dictN, off int) error) error {
	dictN, off := -1, 0
	for pr.Next() {
		switch pg := pr.Page().(type) {
		case *file.DictionaryPage:
			if dictN >= 0 {
				return errors.New("a column chunk has two dictionary pages")
			}
			if parquet.Encoding(pg.Encoding()) != parquet.Encodings.Plain && parquet.Encoding(pg.Encoding()) != parquet.Encodings.PlainDict {
				return errNotDictChunk
			}
			dictN = int(pg.NumValues())
			if dictN < 0 {
				return fmt.Errorf("a dictionary page declares %d entries", dictN)
			}
			if err := dict(pg.Data(), dictN); err != nil {
				return err
			}
		case *file.DataPageV1:
			if err := dataPage(parquet.Encoding(pg.Encoding()), pg.Data(), int(pg.NumValues()), dictN, rows, &off, page); err != nil {
				return err
			}
		case *file.DataPageV2:
			skip := int64(pg.DefinitionLevelByteLen()) + int64(pg.RepetitionLevelByteLen())
			data := pg.Data()
			if pg.NumNulls() != 0 || skip < 0 || skip > int64(len(data)) {
				return errNotDictChunk
			}
			if err := dataPage(parquet.Encoding(pg.Encoding()), data[skip:], int(pg.NumValues()), dictN, rows, &off, page); err != nil {
				return err
			}
		default:
			return errNotDictChunk
		}
	}
	if err := pr.Err(); err != nil {
		return err
	}
	if off != rows {
		return fmt.Errorf("a column chunk holds %d values for the row group's %d rows", off, rows)
	}
	return nil
}

// dataPage checks a data page of n values against the chunk's rows rows
// and hands it to page, then advances *off.
func dataPage(enc parquet.Encoding, data []byte, n, dictN, rows int, off *int, page func(data []byte, n, dictN, off int) error) error {
	if enc != parquet.Encodings.RLEDict && enc != parquet.Encodings.PlainDict {
		return errNotDictChunk
	}
	if dictN < 0 {
		return errors.New("a data page comes before its dictionary page")
	}
	if n < 0 || n > rows-*off {
		return fmt.Errorf("a data page declares %d values, more than the row group's %d rows", n, rows)
	}
	if err := page(data, n, dictN, *off); err != nil {
		return err
	}
	*off += n
	return nil
}

// decodeDictIndices decodes len(dst) dictionary indices from data, a
// data page's bit width byte and RLE / bit-packed hybrid runs, and checks
// each against the dictionary's n entries.
func decodeDictIndices(dst []int32, data []byte, n int) error {
	return decodeDict(dst, data, n, nil)
}

// decodeDictValues is decodeDictIndices writing the dictionary's values
// (dict[index]) instead of the indices: an INT32 column's values in one
// pass, not a pass of indices and one of look-ups.
func decodeDictValues(dst []int32, data []byte, dict []int32) error {
	return decodeDict(dst, data, len(dict), dict)
}

// decodeDict is decodeDictIndices, or decodeDictValues when lut is not
// nil (n = len(lut)).
func decodeDict(dst []int32, data []byte, n int, lut []int32) error {
	if len(dst) == 0 {
		return nil
	}
	if len(data) < 1 {
		return errors.New("a data page has no bit width")
	}
	w := int(data[0])
	if w > 32 {
		return fmt.Errorf("a data page's indices are %d bits wide", w)
	}
	data = data[1:]
	mask := uint64(1)<<w - 1
	var pad [48]byte
	for len(dst) > 0 {
		h, k := binary.Uvarint(data)
		if k <= 0 || h > 1<<33 {
			return errors.New("a data page's run header is corrupt")
		}
		data = data[k:]
		if h&1 == 0 { // a run of one value
			count, vb := int(h>>1), (w+7)/8
			if len(data) < vb {
				return errors.New("a data page ends inside a run")
			}
			var v uint64
			for i := range vb {
				v |= uint64(data[i]) << (8 * i)
			}
			data = data[vb:]
			if count > len(dst) {
				count = len(dst) // (runs may cover padding past the page's values)
			}
			if count > 0 && v >= uint64(n) {
				return fmt.Errorf("an index %d points past the dictionary's %d entries", v, n)
			}
			fill, out := dst[:count], int32(v)
			if lut != nil && count > 0 {
				out = lut[v]
			}
			for i := range fill {
				fill[i] = out
			}
			dst = dst[count:]
			continue
		}
		groups := int(h >> 1) // bit-packed: groups of 8 values, w bytes each
		// Whole groups with 8 bytes to spare, at most 8 bits a value
		// (dictionaries of up to 256 entries: every categorical column):
		// one load, and one check of the largest index, per group.
		check := uint64(n) <= mask // else every w-bit index is an entry
		for ; w <= 8 && groups > 0 && len(dst) >= 8 && len(data) >= 8; groups-- {
			word, s := binary.LittleEndian.Uint64(data), uint(w)
			v0, v1, v2, v3 := word&mask, word>>s&mask, word>>(2*s)&mask, word>>(3*s)&mask
			v4, v5, v6, v7 := word>>(4*s)&mask, word>>(5*s)&mask, word>>(6*s)&mask, word>>(7*s)&mask
			if check {
				if v := max(v0, v1, v2, v3, v4, v5, v6, v7); v >= uint64(n) {
					return fmt.Errorf("an index %d points past the dictionary's %d entries", v, n)
				}
			}
			d := dst[:8:8]
			if lut != nil {
				d[0], d[1], d[2], d[3] = lut[v0], lut[v1], lut[v2], lut[v3]
				d[4], d[5], d[6], d[7] = lut[v4], lut[v5], lut[v6], lut[v7]
			} else {
				d[0], d[1], d[2], d[3] = int32(v0), int32(v1), int32(v2), int32(v3)
				d[4], d[5], d[6], d[7] = int32(v4), int32(v5), int32(v6), int32(v7)
			}
			data, dst = data[w:], dst[8:]
		}
		for ; groups > 0 && len(dst) > 0; groups-- {
			m := min(8, len(dst))
			if len(data) < (m*w+7)/8 {
				return errors.New("a data page ends inside a bit-packed run")
			}
			// Value i lies in the 8 bytes from bit i·w on: w+8 bytes
			// cover the group (padded with zeros near the page's end).
			g := data
			if len(g) < w+8 {
				clear(pad[:])
				copy(pad[:], data)
				g = pad[:]
			}
			data = data[min(w, len(data)):]
			for i := range m {
				bit := i * w
				v := binary.LittleEndian.Uint64(g[bit>>3:]) >> (bit & 7) & mask
				if v >= uint64(n) {
					return fmt.Errorf("an index %d points past the dictionary's %d entries", v, n)
				}
				if lut != nil {
					dst[i] = lut[v]
				} else {
					dst[i] = int32(v)
				}
			}
			dst = dst[m:]
		}
	}
	return nil
}

// plainInt32s returns the n values of a PLAIN INT32 dictionary page.
func plainInt32s(dst []int32, data []byte, n int) ([]int32, error) {
	if n > len(data)/4 {
		return nil, fmt.Errorf("a dictionary page of %d bytes declares %d 4-byte values", len(data), n)
	}
	dst = dst[:0]
	for i := range n {
		dst = append(dst, int32(binary.LittleEndian.Uint32(data[4*i:])))
	}
	return dst, nil
}

// plainByteArrays returns the n values of a PLAIN BYTE_ARRAY dictionary
// page as Arrow offsets and bytes (appended to offs and vals).
func plainByteArrays(offs []int32, vals []byte, data []byte, n int) ([]int32, []byte, error) {
	if n > len(data)/4 {
		return nil, nil, fmt.Errorf("a dictionary page of %d bytes declares %d values", len(data), n)
	}
	offs = append(offs[:0], 0)
	vals = vals[:0]
	for range n {
		if len(data) < 4 {
			return nil, nil, errors.New("a dictionary page ends inside a value")
		}
		k := binary.LittleEndian.Uint32(data)
		data = data[4:]
		if uint64(k) > uint64(len(data)) {
			return nil, nil, errors.New("a dictionary page ends inside a value")
		}
		vals = append(vals, data[:k]...)
		data = data[k:]
		offs = append(offs, int32(len(vals)))
	}
	return offs, vals, nil
}

// readDictFast enables readDictChunk; tests turn it off to read the same
// files through pqarrow and compare.
var readDictFast = true

// fastKind is how readDictChunk's indices become a column's batches.
type fastKind int

const (
	fastNone     fastKind = iota // read through pqarrow
	fastInt32                    // INT32 values, looked up in the dictionary
	fastDictUTF8                 // an Arrow dictionary of utf8 (ReadOptions.DictColumns)
)

// fastColumns tells for each column (leaves[j], read as colSch's field
// j) whether readDictChunk reads it: a required flat INT32 column read as
// int32, or a required BYTE_ARRAY column read as a dictionary of utf8
// with int32 indices, whose chunks in every row group read say (in their
// page encoding statistics) that they hold a dictionary page and only
// dictionary-encoded data pages.
func fastColumns(pf *file.Reader, leaves, groups []int, colSch *arrow.Schema) []fastKind {
	fast := make([]fastKind, len(leaves))
	if !readDictFast {
		return fast
	}
	md := pf.MetaData()
	for _, g := range groups {
		// A row group is decoded whole (4 bytes a row, in one buffer
		// sized from the footer's count, which a crafted file sets at
		// will): past maxDecodeAlloc it is left to pqarrow, which reads
		// batch by batch.
		if n := md.RowGroup(g).NumRows(); n < 0 || n > maxDecodeAlloc/4 {
			return fast
		}
	}
	if md.IsSetEncryptionAlgorithm() {
		return fast
	}
	for j, leaf := range leaves {
		c := md.Schema.Column(leaf)
		if c.MaxDefinitionLevel() != 0 || c.MaxRepetitionLevel() != 0 || j >= colSch.NumFields() {
			continue
		}
		var kind fastKind
		switch t := colSch.Field(j).Type.(type) {
		case *arrow.Int32Type:
			if c.PhysicalType() == parquet.Types.Int32 {
				kind = fastInt32
			}
		case *arrow.DictionaryType:
			if c.PhysicalType() == parquet.Types.ByteArray && t.IndexType.ID() == arrow.INT32 && t.ValueType.ID() == arrow.STRING {
				kind = fastDictUTF8
			}
		}
		for _, g := range groups {
			if kind == fastNone {
				break
			}
			cc, err := md.RowGroup(g).ColumnChunk(leaf)
			if err != nil || !cc.HasDictionaryPage() || cc.CryptoMetadata() != nil || !dictPagesOnly(cc.EncodingStats()) {
				kind = fastNone
			}
		}
		fast[j] = kind
	}
	return fast
}

// batchesInGroups tells whether batches of batch rows do not straddle
// row groups (each one's rows, but the last's, a multiple of batch): only
// then are readDictChunk's batches those pqarrow cuts, and a column may
// be read either way beside the others.
func batchesInGroups(pf *file.Reader, groups []int, batch int) bool {
	for _, g := range groups[:max(0, len(groups)-1)] {
		if pf.MetaData().RowGroup(g).NumRows()%int64(batch) != 0 {
			return false
		}
	}
	return true
}

// dictPagesOnly tells whether a column chunk's page encoding statistics
// list dictionary-encoded data pages only.
func dictPagesOnly(stats []metadata.PageEncodingStats) bool {
	data := false
	for _, s := range stats {
		switch s.PageType {
		case file.PageTypeDataPage, file.PageTypeDataPageV2:
			if s.Encoding != parquet.Encodings.RLEDict && s.Encoding != parquet.Encodings.PlainDict {
				return false
			}
			data = true
		case file.PageTypeDictionaryPage:
		default:
			return false
		}
	}
	return data
}

// decodeDictColumn is decodeColumn for a column that fastColumns chose:
// row group by row group, readDictChunk's indices, cut into batches.
func (p *parquetReader) decodeDictColumn(j int, out chan<- parquetColumn) {
	defer p.stopped.Done()
	defer close(out)
	send := func(c parquetColumn) bool {
		select {
		case out <- c:
			return true
		case <-p.quit:
			if c.arr != nil {
				c.arr.Release()
			}
			return false
		}
	}
	var s dictScratch
	for _, g := range p.groups {
		if err := p.dictGroup(j, g, &s, send); err != nil {
			if err != errClosed {
				send(parquetColumn{err: err})
			}
			return
		}
	}
	send(parquetColumn{err: io.EOF})
}

// dictScratch is a column's buffers, reused row group after row group.
type dictScratch struct {
	idx  []int32
	vals []int32
	offs []int32
	strs []byte
}

// dictGroup sends the batches of column j in row group g. A panic (a
// bug: the decoder checks what it reads) is reported as an error.
func (p *parquetReader) dictGroup(j, g int, s *dictScratch, send func(parquetColumn) bool) (err error) {
	defer recovered(p.name, &err)
	rows := int(p.pf.MetaData().RowGroup(g).NumRows())
	pr, err := p.pf.RowGroup(g).GetColumnPageReader(p.leaves[j])
	if err != nil {
		return err
	}
	defer pr.Close()
	// A row group of one batch (pramkit's files at the default batch
	// size) is decoded straight into the batch's buffer; a larger one
	// into scratch, then copied out batch by batch.
	var whole []byte
	var idx []int32
	if rows <= int(p.batch) {
		whole = allocNoClear(p.mem, 4*rows)
		idx = arrow.Int32Traits.CastFromBytes(whole)[:rows]
	} else {
		if cap(s.idx) < rows {
			s.idx = make([]int32, rows)
		}
		idx = s.idx[:rows]
	}
	var dict arrow.Array
	defer func() {
		if dict != nil {
			dict.Release()
		}
	}()
	kind := p.fast[j]
	var values *[]int32 // an INT32 column is decoded to its values
	if kind == fastInt32 {
		values = &s.vals
	}
	err = readDictChunk(pr, rows, idx, func(data []byte, n int) error {
		var err error
		if kind == fastInt32 {
			s.vals, err = plainInt32s(s.vals, data, n)
			return err
		}
		s.offs, s.strs, err = plainByteArrays(s.offs, s.strs, data, n)
		if err != nil {
			return err
		}
		// Copies: the page's bytes are gone after the next page.
		bufs := []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(slices.Clone(s.offs))), memory.NewBufferBytes(slices.Clone(s.strs))}
		d := array.NewData(arrow.BinaryTypes.String, n, bufs, nil, 0, 0)
		dict = array.MakeFromData(d)
		d.Release()
		return nil
	}, values)
	if err != nil || rows == 0 {
		if whole != nil {
			p.mem.Free(whole)
		}
		return err
	}
	for from := 0; from < rows; from += int(p.batch) {
		n := min(int(p.batch), rows-from)
		b := whole
		if b == nil {
			b = allocNoClear(p.mem, 4*n)
		}
		dst := arrow.Int32Traits.CastFromBytes(b)[:n]
		if whole == nil {
			copy(dst, idx[from:from+n])
		}
		var d *array.Data
		buf := memory.NewBufferWithAllocator(b, p.mem)
		if kind == fastInt32 {
			d = array.NewData(arrow.PrimitiveTypes.Int32, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
		} else {
			d = array.NewData(p.colSch.Field(j).Type, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
			d.SetDictionary(dict.Data())
		}
		buf.Release()
		arr := array.MakeFromData(d)
		d.Release()
		if !send(parquetColumn{arr: arr}) {
			return errClosed
		}
	}
	return nil
}

// errClosed ends a column's goroutine after Close; nobody reads it.
var errClosed = errors.New("closed")

// allocNoClear is mem.Allocate(size) without the zeroing that a pooled
// buffer gets (the caller writes every byte).
func allocNoClear(mem memory.Allocator, size int) []byte {
	if pa, ok := mem.(poolAllocator); ok {
		return pa.allocate(size, false)
	}
	return mem.Allocate(size)
}
