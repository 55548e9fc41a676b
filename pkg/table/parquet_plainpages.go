package table

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// ownPlainPages turns plainPages on; tests turn it off to compare.
var ownPlainPages = true

// plainPagesChunks counts the column chunks plainPages wrote (for tests).
var plainPagesChunks atomic.Int64

// plainPages writes a string column without nulls as column j's whole
// chunk of PLAIN data pages, no dictionary, and reports true; or writes
// nothing and reports false when the column writer must do it.
//
// It is for the columns stringDicts found wide (an id: too many distinct
// values for a dictionary page). Given such a column with dictionary
// encoding on, arrow-go's column writer hashes every cell into a memo
// table until the dictionary page passes its limit, then writes that
// dictionary and re-encodes the column plain: per 64K-row row group of
// anonymize's id column, about 15 ms of a row group's encoding, which the
// other columns' finished pages (labelPages, intPages) take a millisecond
// or two for; the row groups are encoded one after another, so it set the
// pace of anonymize's output on 2 cores. Here a cell is its 4-byte
// little-endian length and its bytes, as arrow-go's plain encoder writes
// them, in pages cut where its column writer cuts them with dictionary
// encoding off (after each WriteBatchSize values, once the page holds
// DataPageSize bytes): the chunk is the one arrow-go writes for the column
// with dictionary encoding off, byte for byte (a test checks), which is
// also what it writes with dictionary encoding on when it falls back
// before its first data page, as it does for such a column.
func (rg *pqRowGroup) plainPages(j int, a *array.String) (bool, error) {
	d := rg.colMeta[j].Descr()
	p := rg.f.props
	if !ownPlainPages || a.Len() == 0 || a.NullN() != 0 || d.PhysicalType() != parquet.Types.ByteArray ||
		d.MaxDefinitionLevel() != 0 || d.MaxRepetitionLevel() != 0 || p.StatisticsEnabledFor(d.Path()) ||
		p.DataPageVersion() != parquet.DataPageV1 || rg.writers[j] != nil || rg.pageRows[j] != 0 {
		return false, nil
	}
	var codec compress.Codec
	if c := p.CompressionFor(d.Path()); c != compress.Codecs.Uncompressed {
		var err error
		if codec, err = compress.GetCodec(c); err != nil {
			return true, err
		}
	}
	// The page statistics of a column without statistics: none, signed as
	// the column's sort order says (columnWriter.buildDataPageV1).
	var stats metadata.EncodedStatistics
	stats.ApplyStatSizeLimits(int(p.MaxStatsSizeFor(d.Path())))
	stats.Signed = d.SortOrder() == schema.SortSIGNED
	bufs := pageBufs.Get().(*[2][]byte)
	defer pageBufs.Put(bufs)
	n, batch, limit := a.Len(), int(p.WriteBatchSize()), int(p.DataPageSize())
	pager := rg.pagers[j]
	var written int64
	for start := 0; start < n; {
		enc := bufs[0][:0]
		end := start
		for end < n && len(enc) < limit {
			for stop := min(n, end+batch); end < stop; end++ {
				v := a.Value(end)
				enc = binary.LittleEndian.AppendUint32(enc, uint32(len(v)))
				enc = append(enc, v...)
			}
		}
		bufs[0] = enc
		data := enc
		if codec != nil {
			bound := int(codec.CompressBound(int64(len(enc))))
			if cap(bufs[1]) < bound {
				bufs[1] = make([]byte, bound)
			}
			data = codec.EncodeLevel(bufs[1][:bound], enc, p.CompressionLevelFor(d.Path()))
		}
		page := file.NewDataPageV1WithConfig(memory.NewBufferBytes(data), parquet.Encodings.RLE, parquet.Encodings.RLE, file.DataPageConfig{
			Num:              int32(end - start),
			Encoding:         parquet.Encodings.Plain,
			UncompressedSize: int32(len(enc)),
			Stats:            stats,
			FirstRowIndex:    int64(start),
		})
		pn, err := pager.WriteDataPage(page)
		if err != nil {
			return true, err
		}
		written += pn
		start = end
	}
	rg.pageRows[j], rg.pageBytes[j], rg.plain[j] = n, written, true
	plainPagesChunks.Add(1)
	return true, nil
}
