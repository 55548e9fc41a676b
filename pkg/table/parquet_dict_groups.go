package table

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
)

// DictGroups reads the columns of a Parquet file row group by row group,
// each column chunk as its dictionary's labels and an index per row
// (readDictChunk), for a caller that works whole row groups on several
// goroutines at once (estimate's count). A batch read hands each column's
// decoded batch from its goroutine to the one that assembles batches and
// on to a worker: on this 2-core machine each hand-over moved the batch's
// buffers between the cores' caches, and estimate's count of a 10M-row
// release took 1.6 times the CPU time on 2 cores that it took on one.
type DictGroups struct{ p *parquetReader }

// ParquetDictGroups returns the DictGroups of r, a Parquet reader from
// Open that has not been read, when all its columns are utf8 columns read
// as dictionaries (ReadOptions.DictColumns) that readDictChunk decodes;
// nil otherwise.
func ParquetDictGroups(r Reader) *DictGroups {
	p, ok := r.(*parquetReader)
	if !ok || p.ahead != nil || p.rows > 0 || len(p.fast) == 0 {
		return nil
	}
	for _, k := range p.fast {
		if k != fastDictUTF8 {
			return nil
		}
	}
	return &DictGroups{p}
}

// ParquetDictGroupsOf returns the DictGroups of r, a Parquet reader from
// Open that has not been read, for its columns cols (indices into
// r.Schema()), when each is a utf8 column that readDictChunk decodes in
// every row group — whatever the types r itself reads them as: estimate
// counts the release columns of the file it has open, without opening it
// again with those columns read as dictionaries (a second set of pqarrow
// column readers, each reading and decompressing the first row group's
// chunk: ~2 ms of the serial start on a 10M-row release). Only cols may
// be passed to Read and Add. It returns nil otherwise.
func ParquetDictGroupsOf(r Reader, cols []int) *DictGroups {
	p, ok := r.(*parquetReader)
	if !ok || p.ahead != nil || p.rows > 0 || len(cols) == 0 {
		return nil
	}
	// The columns as DictColumns would have them read.
	fields := slices.Clone(p.colSch.Fields())
	for _, c := range cols {
		if c < 0 || c >= len(fields) || fields[c].Type.ID() != arrow.STRING {
			return nil
		}
		fields[c].Type = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	}
	fast := fastColumns(p.pf, p.leaves, p.groups, arrow.NewSchema(fields, nil))
	for _, c := range cols {
		if fast[c] != fastDictUTF8 {
			return nil
		}
	}
	return &DictGroups{p}
}

// Len is the number of row groups.
func (d *DictGroups) Len() int { return len(d.p.groups) }

// Rows is the number of rows of the i-th row group.
func (d *DictGroups) Rows(i int) int {
	return int(d.p.pf.MetaData().RowGroup(d.p.groups[i]).NumRows())
}

// DictScratch holds a goroutine's buffers for DictGroups.Read and Add:
// the decoded indices and labels, and the column chunks' bytes and page
// readers (chunkReader), reused from row group to row group. Close
// releases it.
type DictScratch struct {
	idx    []int32
	offs   []int32
	strs   []byte
	labels []string
	chunks chunkScratch
}

// Close releases the page readers that s keeps.
func (s *DictScratch) Close() { s.chunks.close() }

// Read decodes column j of the i-th row group: the labels of its
// dictionary and one index into them per row, both valid until the next
// Read with the same scratch. Safe for concurrent use with distinct
// scratches.
func (d *DictGroups) Read(i, j int, s *DictScratch) (labels []string, idx []int32, err error) {
	p := d.p
	defer recovered(p.name, &err)
	g := p.groups[i]
	rows := d.Rows(i)
	pr, done, err := s.chunks.reader(p, g, j)
	if err != nil {
		return nil, nil, errorf(p.name, "reading row group %d: %v; the file is corrupt or truncated", g+1, err)
	}
	defer done()
	if cap(s.idx) < rows {
		s.idx = make([]int32, rows)
	}
	s.labels = s.labels[:0]
	err = readDictChunk(pr, rows, s.idx[:rows], s.dictLabels, nil)
	if err != nil {
		return nil, nil, errorf(p.name, "reading row group %d: %v; the file is corrupt or truncated", g+1, err)
	}
	return s.labels, s.idx[:rows], nil
}

// dictLabels sets s.labels to the n labels of a PLAIN BYTE_ARRAY
// dictionary page.
func (s *DictScratch) dictLabels(data []byte, n int) error {
	var err error
	if s.offs, s.strs, err = plainByteArrays(s.offs, s.strs, data, n); err != nil {
		return err
	}
	s.labels = s.labels[:0]
	for k := range n {
		s.labels = append(s.labels, string(s.strs[s.offs[k]:s.offs[k+1]]))
	}
	return nil
}

// Add decodes column j of the i-th row group and adds to dst[r], for
// each of its Rows(i) rows r, lut[x] where x is the row's index in the
// chunk's dictionary and lut = values(labels) is what the caller makes
// of the dictionary's labels (one entry per label): one pass over the
// chunk, no index per row kept (decodeDictAdd). It fails, with Read's
// errors, where Read fails; dst then holds a partial sum.
func (d *DictGroups) Add(i, j int, s *DictScratch, dst []uint32, values func(labels []string) []uint32) (err error) {
	p := d.p
	defer recovered(p.name, &err)
	g := p.groups[i]
	rows := d.Rows(i)
	if len(dst) != rows {
		return fmt.Errorf("internal error: %d sums for the %d rows of row group %d", len(dst), rows, g+1)
	}
	pr, done, err := s.chunks.reader(p, g, j)
	if err != nil {
		return errorf(p.name, "reading row group %d: %v; the file is corrupt or truncated", g+1, err)
	}
	defer done()
	var lut []uint32
	err = readDictPages(pr, rows, func(data []byte, n int) error {
		if err := s.dictLabels(data, n); err != nil {
			return err
		}
		lut = values(s.labels)
		if len(lut) != n {
			return fmt.Errorf("internal error: %d values for %d dictionary entries", len(lut), n)
		}
		return nil
	}, func(data []byte, n, _, off int) error {
		return decodeDictAdd(dst[off:off+n], data, lut)
	})
	if err != nil {
		return errorf(p.name, "reading row group %d: %v; the file is corrupt or truncated", g+1, err)
	}
	return nil
}
