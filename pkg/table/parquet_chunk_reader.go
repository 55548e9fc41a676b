package table

import (
	"fmt"
	"io"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// chunkScratch reads column chunks into one buffer and through one page
// reader per column, both reused from row group to row group.
//
// arrow-go's RowGroupReader.GetColumnPageReader reads each column chunk
// into a new buffer the size of the chunk and gives it a new page reader,
// whose page and decompression buffers grow anew for the chunk's first
// pages: on a 10M-row release of 4 columns (612 chunks) estimate's count
// allocated ~55 MB that way and the collector ran 8 times in a 0.1 s run;
// on 2 cores the fresh memory cost page faults and more kernel time than
// on one. Here a chunk's bytes are read (pread) into the scratch's buffer
// and the column's page reader is Reset onto them, keeping its buffers.
//
// The first chunk of each column, and any chunk whose metadata the reuse
// cannot take as it is (an old parquet-mr file whose chunk lengths need
// arrow-go's padding, offsets outside the file, a page index arrow-go
// cannot read, an unknown codec, a short read), goes through
// GetColumnPageReader: a corrupt file fails with arrow-go's own error,
// as it did before.
type chunkScratch struct {
	buf    []byte
	stream chunkStream
	prs    []file.PageReader // by column
	// group and groupOK cache whether row group group's page index
	// reader (which GetColumnPageReader asks for) is readable.
	group   int
	groupOK bool
}

// reader returns a page reader over column j of row group g of p, and
// the function to call once done with it.
func (c *chunkScratch) reader(p *parquetReader, g, j int) (file.PageReader, func(), error) {
	if pr := c.reuse(p, g, j); pr != nil {
		return pr, func() {}, nil
	}
	pr, err := p.pf.RowGroup(g).GetColumnPageReader(p.leaves[j])
	if err != nil {
		return nil, nil, err
	}
	if len(c.prs) < len(p.leaves) {
		c.prs = append(c.prs, make([]file.PageReader, len(p.leaves)-len(c.prs))...)
	}
	if c.prs[j] == nil {
		// Kept for the column's next chunks (Reset releases its page).
		c.prs[j] = pr
		return pr, func() {}, nil
	}
	return pr, func() { pr.Close() }, nil
}

// reuse returns column j's page reader Reset onto the bytes of its chunk
// in row group g, or nil when the chunk is to be read by arrow-go.
func (c *chunkScratch) reuse(p *parquetReader, g, j int) file.PageReader {
	if !reuseChunks || j >= len(c.prs) || c.prs[j] == nil {
		return nil
	}
	md := p.pf.MetaData()
	if md.WriterVersion().LessThan(metadata.Parquet816FixedVersion) {
		return nil
	}
	if c.group != g+1 {
		_, err := p.pf.GetPageIndexReader().RowGroup(g)
		c.group, c.groupOK = g+1, err == nil
	}
	if !c.groupOK {
		return nil
	}
	col, err := md.RowGroup(g).ColumnChunk(p.leaves[j])
	if err != nil || col.CryptoMetadata() != nil {
		return nil
	}
	// The chunk's bytes, as GetColumnPageReader finds them.
	start := col.DataPageOffset()
	if col.HasDictionaryPage() && col.DictionaryPageOffset() > 0 && start > col.DictionaryPageOffset() {
		start = col.DictionaryPageOffset()
	}
	n := col.TotalCompressedSize()
	if start < 0 || n <= 0 || n > md.GetSourceFileSize() || start > md.GetSourceFileSize()-n {
		return nil
	}
	if _, err := compress.GetCodec(col.Compression()); err != nil {
		return nil
	}
	if int64(cap(c.buf)) < n {
		c.buf = make([]byte, n)
	}
	buf := c.buf[:n]
	if k, err := p.f.ReadAt(buf, start); k != len(buf) || (err != nil && err != io.EOF) {
		return nil
	}
	c.stream = chunkStream{buf: buf}
	chunkReuses.Add(1)
	pr := c.prs[j]
	pr.Reset(&c.stream, col.NumValues(), col.Compression(), nil)
	return pr
}

// reuseChunks enables the reuse; tests turn it off to read the same
// chunks through GetColumnPageReader and compare.
var reuseChunks = true

// chunkReuses counts the chunks read through a reused page reader, for
// tests.
var chunkReuses atomic.Int64

func (c *chunkScratch) close() {
	for j, pr := range c.prs {
		if pr != nil {
			pr.Close()
			c.prs[j] = nil
		}
	}
}

// chunkStream is a column chunk's bytes as the parquet.BufferedReader a
// page reader reads pages from, with arrow-go's byte reader's semantics
// (Peek and Discard short at the end, with io.EOF). Page readers call
// Outer and Reset (left to the nil embedded reader) only to seek within
// a chunk (SeekToPageWithRow) or to read a dictionary page alone
// (GetDictionaryPage), which readDictChunk does not ask for.
type chunkStream struct {
	parquet.BufferedReader
	buf []byte
	pos int
}

func (r *chunkStream) Read(b []byte) (int, error) {
	if r.pos >= len(r.buf) {
		return 0, io.EOF
	}
	n := copy(b, r.buf[r.pos:])
	r.pos += n
	return n, nil
}

func (r *chunkStream) Peek(n int) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("chunk reader: negative count %d", n)
	}
	k := min(n, len(r.buf)-r.pos)
	if k < n {
		return r.buf[r.pos : r.pos+k], io.EOF
	}
	return r.buf[r.pos : r.pos+k], nil
}

func (r *chunkStream) Discard(n int) (int, error) {
	if n < 0 {
		return 0, fmt.Errorf("chunk reader: negative count %d", n)
	}
	k := min(n, len(r.buf)-r.pos)
	r.pos += k
	if k < n {
		return k, io.EOF
	}
	return k, nil
}

func (r *chunkStream) BufferSize() int { return len(r.buf) }
