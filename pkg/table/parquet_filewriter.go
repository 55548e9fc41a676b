package table

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// pqFile writes a Parquet file as arrow-go's file.Writer does with
// buffered row groups — the same bytes, from the same page writers and
// metadata builders — except that an int32 column of small values
// (smallIntMax) may be written as finished pages (intPages) instead of
// through a column writer.
//
// Why: a column writer takes dictionary indices one value at a time
// (dictEncoder.PutIndices, then RleEncoder.Put per value when the page is
// flushed): a third of perturb --mechanism bitflip's CPU. arrow-go's
// exported PageWriter takes finished pages, but only a row group writer of
// its own making hands one out, so the file and row group bookkeeping
// (magic, row group and column chunk metadata, footer) is done here, with
// arrow-go's builders. The properties newParquetWriter sets need no bloom
// filter, page index or encryption, which this writer does not write
// (newPQFile refuses them).
//
// The closed row groups' metadata is held encoded (footerRowGroups), not
// in meta: arrow-go's builder would hold ~420 bytes of Go structs a column
// chunk until the footer.
type pqFile struct {
	sink   *tellSink
	props  *parquet.WriterProperties
	schema *schema.Schema
	// meta is the file's metadata builder: schema, and with streamFooter
	// off the key-value metadata and every row group's metadata.
	meta      *metadata.FileMetaDataBuilder
	kv        metadata.KeyValueMetadata // with streamFooter, the items meta does not hold
	later     lateItems                 // items made for the footer, with streamFooter
	footer    footerRowGroups
	rowGroups int
	// open are the row groups appended and not closed, in order: several
	// may be written at once (parquetWriter encodes the next while the
	// last columns of one finish), and they close in order, which puts
	// their chunks in the file in order.
	open   []*pqRowGroup
	closed bool
}

// tellSink counts the bytes written to a sink (arrow-go's page writers ask
// where they are, to record offsets).
type tellSink struct {
	s sink
	n int64
}

func (t *tellSink) Write(p []byte) (int, error) {
	n, err := t.s.Write(p)
	t.n += int64(n)
	return n, err
}

func (t *tellSink) Tell() int64 { return t.n }

// newPQFile starts a Parquet file of the given schema (stored in the file
// as pqarrow.WithStoreSchema stores it, its metadata as the file's
// key-value metadata) on s.
func newPQFile(sch *arrow.Schema, s sink, props *parquet.WriterProperties, later lateItems) (*pqFile, error) {
	if props.FileEncryptionProperties() != nil || props.PageIndexEnabled() {
		return nil, fmt.Errorf("parquet writer: encryption and page indexes are not supported")
	}
	pqschema, err := pqarrow.ToParquet(sch, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, err
	}
	for i := range pqschema.NumColumns() {
		if path := pqschema.Column(i).Path(); props.BloomFilterEnabledFor(path) || props.PageIndexEnabledFor(path) {
			return nil, fmt.Errorf("parquet writer: column %s: bloom filters and page indexes are not supported", path)
		}
	}
	f := &pqFile{sink: &tellSink{s: s}, props: props, schema: pqschema, later: later}
	if kv := fileKeyValues(sch, props, later.size); streamFooter {
		// The key-value items are written into the footer from their
		// strings (footerRowGroups.writeFooter), not through arrow-go's
		// serializer, whose growing buffer held a 21 MB codebook item
		// three times over.
		f.meta, f.kv = metadata.NewFileMetadataBuilder(pqschema, props, nil), kv
	} else {
		f.meta = metadata.NewFileMetadataBuilder(pqschema, props, kv)
	}
	if _, err := f.sink.Write(parquetMagic); err != nil {
		return nil, err
	}
	return f, nil
}

// fileKeyValues is the file's key-value metadata: the schema's, then the
// Arrow schema as pqarrow.WithStoreSchema stores it — with the schema's
// metadata only while it is at most storedSchemaMeta bytes, counting
// later bytes of items the footer will make (lateItems).
func fileKeyValues(sch *arrow.Schema, props *parquet.WriterProperties, later int) metadata.KeyValueMetadata {
	md := sch.Metadata()
	kv := make(metadata.KeyValueMetadata, 0, md.Len()+1)
	size := later
	for i, k := range md.Keys() {
		kv.Append(k, md.Values()[i])
		size += len(k) + len(md.Values()[i])
	}
	stored := sch
	if size > storedSchemaMeta {
		stored = arrow.NewSchema(sch.Fields(), nil)
	}
	kv.Append("ARROW:schema", base64.StdEncoding.EncodeToString(flight.SerializeSchema(stored, props.Allocator())))
	return kv
}

// storedSchemaMeta bounds the metadata the stored Arrow schema repeats.
// pqarrow stores the schema's metadata twice: as the file's key-value
// metadata and inside ARROW:schema, base64-encoded. A release's metadata
// holds its codebook: with a sensitive column of 1M values, 12 MB of JSON
// became 28 MB of footer, held by the writer for the whole run and read
// three times over by a reader (the footer's strings, the base64, the
// decoded schema: ~60 MB). Past this size the stored schema keeps its
// fields only; the metadata stays in the key-value pairs, where pyarrow
// and DuckDB read it and this package's reader too (metaOfParquet). An
// arrow-go program reading such a file with pqarrow finds it there
// (FileMetaData.KeyValueMetadata), not in the schema.
const storedSchemaMeta = 64 << 10

// pqRowGroup is one row group being written: each column chunk is
// written (by one goroutine per column at most) into a buffered page
// writer of its own, and close copies the chunks to the file in column
// order.
type pqRowGroup struct {
	f       *pqFile
	ordinal int16
	meta    *metadata.RowGroupMetaDataBuilder
	// fileMeta, with streamFooter, is a file metadata builder of this
	// row group only, that close encodes into f.footer.
	fileMeta *metadata.FileMetaDataBuilder
	colMeta  []*metadata.ColumnChunkMetaDataBuilder
	// Each column's page writer, made by openColumn and dropped once its
	// chunk is in the file: a page writer with its buffers is ~2 KB,
	// 9 MB a row group at L = 4,000 bits were they all made at once.
	pagers  []file.PageWriter
	writers []file.ColumnChunkWriter // column writers, made by writer
	// For a column written as finished pages (dictPages, plainPages): its
	// rows, the bytes its pages took, and whether they have no dictionary.
	pageRows  []int
	pageBytes []int64
	plain     []bool
	// The chunks copied to the file so far (closeColumn), their rows and
	// bytes.
	closed  int
	rows    int
	written int64
}

// streamFooter turns on footerRowGroups; tests turn it off to show that
// the file's bytes are the same either way.
var streamFooter = true

// appendRowGroup starts the next row group. Row groups are written into
// buffers of their own, so the previous ones may still be open; they must
// be closed in order.
func (f *pqFile) appendRowGroup() (*pqRowGroup, error) {
	rg := &pqRowGroup{f: f, ordinal: int16(f.rowGroups)}
	if streamFooter {
		// The same schema and properties as f.meta's: the same RowGroup.
		rg.fileMeta = metadata.NewFileMetadataBuilder(f.schema, f.props, nil)
		rg.meta = rg.fileMeta.AppendRowGroup()
	} else {
		rg.meta = f.meta.AppendRowGroup()
	}
	f.rowGroups++
	f.open = append(f.open, rg)
	n := f.schema.NumColumns()
	rg.colMeta = make([]*metadata.ColumnChunkMetaDataBuilder, n)
	rg.pagers = make([]file.PageWriter, n)
	rg.writers = make([]file.ColumnChunkWriter, n)
	rg.pageRows = make([]int, n)
	rg.pageBytes = make([]int64, n)
	rg.plain = make([]bool, n)
	for j := range n {
		rg.colMeta[j] = rg.meta.NextColumnChunk()
	}
	return rg, nil
}

// openColumn makes column j's page writer, unless made: before anything
// is written to the column, by the column's writer only.
func (rg *pqRowGroup) openColumn(j int) error {
	if rg.pagers[j] != nil {
		return nil
	}
	f, cm := rg.f, rg.colMeta[j]
	path := cm.Descr().Path()
	pager, err := file.NewPageWriter(f.sink, f.props.CompressionFor(path), f.props.CompressionLevelFor(path), cm,
		rg.ordinal, int16(j), f.props.Allocator(), true, nil, nil)
	rg.pagers[j] = pager
	return err
}

// writer returns column j's column writer (for pqarrow), made on first
// use; openColumn must have made its page writer.
func (rg *pqRowGroup) writer(j int) file.ColumnChunkWriter {
	if rg.writers[j] == nil {
		rg.writers[j] = file.NewColumnChunkWriter(rg.colMeta[j], rg.pagers[j], rg.f.props)
	}
	return rg.writers[j]
}

// canWriteIntPages reports whether column j can take intPages with values
// up to hi: a required, flat int32 column, dictionary-encoded, without
// statistics, in V1 data pages — where a column writer given the same
// values as a dictionary array over 0..hi (smallIntDict) writes one
// dictionary page and one data page, which intPages writes alike.
func (rg *pqRowGroup) canWriteIntPages(j int, hi int32) bool {
	return rg.canWriteDictPages(j, parquet.Types.Int32) && uint32(hi) < maxSmallInt &&
		4*(int(hi)+1) < int(rg.f.props.DictionaryPageSizeLimit())
}

// smallDictBytes is the dictionary 0..maxSmallInt-1, PLAIN-encoded (int32
// little-endian): a dictionary 0..hi is its first 4(hi+1) bytes.
var smallDictBytes = func() []byte {
	b := make([]byte, 4*maxSmallInt)
	for i := range maxSmallInt {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(i))
	}
	return b
}()

// pageBufs holds the scratch of intPages (encoded indices, compressed
// page), reused across columns and row groups.
var pageBufs = sync.Pool{New: func() any { return new([2][]byte) }}

// intPagesChunks counts the column chunks intPages wrote (for tests).
var intPagesChunks atomic.Int64

// intPages writes vals, all in [0, hi] (canWriteIntPages must hold), as
// column j's whole chunk: the dictionary page 0..hi and one data page of
// RLE/bit-packed indices (each value its own index) — the pages a column
// writer writes for smallIntDict's array, byte for byte.
func (rg *pqRowGroup) intPages(j int, vals []int32, hi int32) error {
	if err := rg.dictPages(j, smallDictBytes[:4*(int(hi)+1)], int(hi)+1, vals); err != nil {
		return err
	}
	intPagesChunks.Add(1)
	return nil
}

// bitPages is intPages for the n cells of a 0/1 column held as bits (cell
// i is bit i%8 of byte i/8), hi its largest cell: the same pages, with no
// int32 cell made.
func (rg *pqRowGroup) bitPages(j int, bits []byte, n int, hi int32) error {
	if err := rg.dictPagesOf(j, smallDictBytes[:4*(int(hi)+1)], int(hi)+1, n, func(dst []byte, width int) []byte {
		return appendRLEBits(dst, bits, n)
	}); err != nil {
		return err
	}
	intPagesChunks.Add(1)
	return nil
}

// dictPages writes column j's whole chunk as a column writer fed a
// dictionary array writes it (pqarrow's direct dictionary path, then
// Close): the dictionary page, dict (entries values, PLAIN-encoded), then
// one data page of the indices, RLE/bit-packed at the width the entries
// need. The column must be required and flat, dictionary-encoded, without
// statistics, in V1 data pages, and untouched so far; every index must be
// below entries, and the width at most maxRLEWidth.
func (rg *pqRowGroup) dictPages(j int, dict []byte, entries int, idx []int32) error {
	return rg.dictPagesOf(j, dict, entries, len(idx), func(dst []byte, width int) []byte {
		return appendRLEHybrid(dst, idx, width)
	})
}

// dictPagesOf is dictPages for n indices that appendIdx appends to dst,
// RLE/bit-packed at width bits.
func (rg *pqRowGroup) dictPagesOf(j int, dict []byte, entries, n int, appendIdx func(dst []byte, width int) []byte) error {
	p := rg.f.props
	descr := rg.colMeta[j].Descr()
	if err := rg.openColumn(j); err != nil {
		return err
	}
	pager := rg.pagers[j]
	dn, err := pager.WriteDictionaryPage(file.NewDictionaryPage(memory.NewBufferBytes(dict), int32(entries), p.DictionaryPageEncoding()))
	if err != nil {
		return err
	}

	// The data page: the indices' bit width in a byte, then the indices
	// (dictEncoder.WriteIndices; a one-entry dictionary takes 1 bit).
	width := max(1, bits.Len32(uint32(entries-1)))
	bufs := pageBufs.Get().(*[2][]byte)
	defer pageBufs.Put(bufs)
	enc := append(bufs[0][:0], byte(width))
	enc = appendIdx(enc, width)
	bufs[0] = enc
	data := enc
	if codec := p.CompressionFor(descr.Path()); codec != compress.Codecs.Uncompressed {
		c, err := compress.GetCodec(codec)
		if err != nil {
			return err
		}
		bound := int(c.CompressBound(int64(len(enc))))
		if cap(bufs[1]) < bound {
			bufs[1] = make([]byte, bound)
		}
		data = c.EncodeLevel(bufs[1][:bound], enc, p.CompressionLevelFor(descr.Path()))
	}
	// The page statistics of a column without statistics: none, signed
	// as the column's sort order says (columnWriter.buildDataPageV1).
	var stats metadata.EncodedStatistics
	stats.ApplyStatSizeLimits(int(p.MaxStatsSizeFor(descr.Path())))
	stats.Signed = descr.SortOrder() == schema.SortSIGNED
	page := file.NewDataPageV1WithConfig(memory.NewBufferBytes(data), parquet.Encodings.RLE, parquet.Encodings.RLE, file.DataPageConfig{
		Num:              int32(n),
		Encoding:         p.DictionaryIndexEncoding(),
		UncompressedSize: int32(len(enc)),
		Stats:            stats,
		FirstRowIndex:    0,
	})
	pn, err := pager.WriteDataPage(page)
	if err != nil {
		return err
	}
	rg.pageRows[j], rg.pageBytes[j] = n, dn+pn
	return nil
}

// closeColumn checks that column j has as many rows as column 0 and
// copies its chunk to the file: the chunks go in column order, each as
// soon as it is written and those before it are in the file, so that a
// wide row group's encoded chunks need not all wait for close
// (writeWideGroup). Column j must be the next one, and the row groups
// before rg closed.
func (rg *pqRowGroup) closeColumn(j int) error {
	if f := rg.f; len(f.open) == 0 || f.open[0] != rg {
		return fmt.Errorf("parquet writer: row group %d closed before the row groups before it", rg.ordinal)
	}
	if j != rg.closed {
		return fmt.Errorf("parquet writer: row group %d: column %d closed before column %d", rg.ordinal, j, rg.closed)
	}
	if err := rg.openColumn(j); err != nil {
		return err
	}
	// A chunk of finished pages has no column writer: making one (as
	// close once did for every column) took a dictionary encoder and its
	// hash table per column, 21 MB a row group at L = 4,000 bits.
	n := rg.pageRows[j]
	if rg.pageBytes[j] == 0 {
		n = rg.writer(j).RowsWritten()
	}
	if j > 0 && n != rg.rows {
		return fmt.Errorf("parquet writer: row group %d: column %d has %d rows, column 0 has %d", rg.ordinal, j, n, rg.rows)
	}
	rg.rows = n
	if rg.pageBytes[j] > 0 {
		if err := rg.pagers[j].Close(!rg.plain[j], false); err != nil {
			return err
		}
		rg.written += rg.pageBytes[j]
	} else {
		w := rg.writers[j]
		if err := w.Close(); err != nil {
			return err
		}
		rg.written += w.TotalBytesWritten()
	}
	rg.pagers[j], rg.writers[j] = nil, nil
	rg.closed++
	return nil
}

// close copies the column chunks not yet copied to the file, in column
// order, each checked to have as many rows as column 0 (closeColumn), and
// records the row group's metadata (rowGroupWriter.Close). The row groups
// before it must be closed.
func (rg *pqRowGroup) close() error {
	for j := rg.closed; j < len(rg.pagers); j++ {
		if err := rg.closeColumn(j); err != nil {
			return err
		}
	}
	if f := rg.f; len(f.open) == 0 || f.open[0] != rg {
		return fmt.Errorf("parquet writer: row group %d closed before the row groups before it", rg.ordinal)
	}
	rg.meta.SetNumRows(rg.rows)
	if err := rg.meta.Finish(rg.written, rg.ordinal); err != nil {
		return err
	}
	if rg.fileMeta != nil {
		if err := rg.f.footer.add(rg.fileMeta, int64(rg.rows)); err != nil {
			return err
		}
		// Only the encoded bytes stay.
		rg.fileMeta, rg.meta, rg.colMeta = nil, nil, nil
	}
	rg.f.open = rg.f.open[1:]
	return nil
}

// close writes the footer (the file metadata, its length, the magic) and
// closes the sink, even after an error, and removes footerRowGroups'
// temporary file. After a row group failed, the file is broken: close
// writes no footer and says so (the writer's caller discards the file).
func (f *pqFile) close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	defer f.footer.release()
	var err error
	if len(f.open) > 0 {
		err = fmt.Errorf("parquet writer: row group %d was not finished; no footer written", f.open[0].ordinal)
	} else {
		err = f.writeFooter()
	}
	if cerr := f.sink.s.Close(); err == nil {
		err = cerr
	}
	return err
}

func (f *pqFile) writeFooter() error {
	var (
		n   int64
		err error
	)
	if streamFooter {
		kv, later := keyValuesWith(f.kv, f.later)
		f.kv, f.later = nil, lateItems{}
		if n, err = f.footer.writeFooter(f.meta, kv, later, f.sink); err != nil {
			return err
		}
	} else {
		md, err := f.meta.Snapshot()
		if err != nil {
			return err
		}
		if n, err = md.WriteTo(f.sink, nil); err != nil {
			return err
		}
	}
	var tail [8]byte
	binary.LittleEndian.PutUint32(tail[:4], uint32(n))
	copy(tail[4:], parquetMagic)
	_, err = f.sink.Write(tail[:])
	return err
}
