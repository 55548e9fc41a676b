package table

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// metaLinePrefix starts the optional first line of a CSV stream that carries
// pramkit metadata when there is no file for a sidecar.
const metaLinePrefix = "#pramkit "

// csvReader reads RFC 4180 CSV with a header row. Every column is read as
// utf8: the data is categorical, and type inference from the first rows
// goes wrong on values like "007" (see DEPENDENCIES.md). Empty fields are
// empty strings, not nulls.
type csvReader struct {
	fileSource // of a file without a sidecar (sameSource)
	name       string
	file       *os.File
	schema     *arrow.Schema // projected by ReadOptions.Columns
	ncols      int           // the file's columns, which every record must have
	sel        []int         // the columns read (ReadOptions.Columns), nil for all
	meta       Meta
	batch      int
	cur        arrow.RecordBatch
	rows       int64
	done       bool
	err        error // the error Next returned, returned again
	br         *bufio.Reader
	bind       *binding     // the sidecar's digest, checked at the end of the data
	side       *binding     // the sidecar's path and digest (not got), for ReadOptions.SidecarOf
	hr         *hashReader  // the file's hashing reader, when there is a sidecar
	first      int          // lines before the first record (metadata line, header)
	pipe       *csvPipeline // started by the first Next
	labels     []*Labels    // per file column: read as codes (ReadOptions.Labels), or nil
	reuse      bool         // ReadOptions.ReuseBuffers: batches lend pooled buffers
	text       *textMode    // row-text mode (LendRowText), or nil
	// digested names the items of meta that are their MetaDigest
	// (ReadOptions.DigestMeta), for a reader that reuses the sidecar.
	digested []string
}

// binding is what a sidecar says of its data file, and where the data's
// digest is computed while it is read.
type binding struct {
	sidecar string
	want    dataDigest
	got     *digester
}

func openCSV(name string, file *os.File, br *bufio.Reader, opt ReadOptions, side *sidecarInput) (rd Reader, err error) {
	defer func() {
		if err != nil && file != nil {
			file.Close()
		}
	}()
	meta := Meta{}
	var bind *binding
	skipped := 0 // lines before the header, for line numbers in errors
	// A "#pramkit {…}" first line carries the metadata of a CSV stream.
	if head, _ := br.Peek(len(metaLinePrefix)); string(head) == metaLinePrefix {
		line, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		m, err := decodeSidecar([]byte(strings.TrimSpace(line[len(metaLinePrefix):])))
		if err != nil {
			return nil, &DataError{File: name, Line: 1, Err: fmt.Errorf("the #pramkit metadata line is not valid: %v; remove the line or rewrite the file with the stage that made it", err)}
		}
		meta = m
		skipped = 1
	} else if side != nil {
		b, err := bindSidecar(name, side)
		if err != nil {
			return nil, err
		}
		if b != nil {
			meta, bind = b.meta, b.bind
		}
	}
	if bind == nil && side != nil {
		side.hr.d = nil // nothing to check: stop hashing
	}
	// Items a sidecar read here had digested are left, and those the
	// reader whose sidecar is reused had; the others (a metadata line,
	// one read whole, another reader's full text) are digested now. An
	// item of a digest's form that was not digested is hashed too: it is
	// a text that reads like a digest (an edit), not what it claims.
	switch {
	case side != nil && side.bound != nil:
		digestItems(meta, slices.DeleteFunc(slices.Clone(opt.DigestMeta), func(k string) bool {
			return slices.Contains(side.bound.digested, k)
		}), false)
	default:
		digestItems(meta, opt.DigestMeta, side != nil && side.digested)
	}
	// Skip a UTF-8 byte-order mark, which spreadsheet exports add.
	if bom, _ := br.Peek(3); bytes.Equal(bom, []byte{0xef, 0xbb, 0xbf}) {
		br.Discard(3)
	}
	// encoding/csv reads the header (it consumes exactly its lines from br);
	// the scanner reads the records.
	r := csv.NewReader(br)
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, errorf(name, "the file is empty: a table needs at least a header row")
	}
	if err != nil {
		return nil, csvError(name, err, 0, skipped)
	}
	fields := make([]arrow.Field, len(header))
	seen := make(map[string]int, len(header))
	for i, h := range header {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, &DataError{File: name, Line: skipped + 1, Err: fmt.Errorf("column %d of the header row has no name; name every column", i+1)}
		}
		if j, dup := seen[h]; dup {
			return nil, &DataError{File: name, Line: skipped + 1, Err: fmt.Errorf("columns %d and %d are both named %s; give every column a distinct name", j+1, i+1, QuoteCell(h))}
		}
		seen[h] = i
		fields[i] = arrow.Field{Name: h, Type: arrow.BinaryTypes.String}
	}
	labels := codeColumns(fields, nil, opt.Labels)
	schema := arrow.NewSchema(fields, nil)
	sel, err := projection(name, schema, opt.Columns)
	if err != nil {
		return nil, err
	}
	line, _ := r.FieldPos(len(header) - 1)
	line += strings.Count(header[len(header)-1], "\n")
	c := &csvReader{
		name:     name,
		file:     file,
		schema:   projectSchema(schema, sel),
		ncols:    len(fields),
		sel:      sel,
		meta:     meta,
		batch:    opt.BatchSize,
		br:       br,
		bind:     bind,
		side:     bind,
		first:    skipped + line,
		labels:   labels,
		reuse:    opt.ReuseBuffers,
		digested: opt.DigestMeta,
	}
	if bind != nil {
		c.hr = side.hr
	}
	return c, nil
}

type boundSidecar struct {
	meta     Meta
	bind     *binding
	digested []string // the items of meta that are digests (ReadOptions.DigestMeta)
}

// bindSidecar reads a CSV file's sidecar, if there is one, and checks that
// it describes a file of the data's size; the digest is checked when the
// data has been read (csvReader.verify). A sidecar without a digest is
// refused rather than accepted with a warning: nothing would show that it
// belongs to this data, and a warning scrolls by in a pipeline while the
// stage goes on to trust n, m and γ from another run.
func bindSidecar(name string, side *sidecarInput) (*boundSidecar, error) {
	switch {
	case errors.Is(side.err, os.ErrNotExist):
		return nil, nil
	case side.err != nil:
		return nil, fmt.Errorf("%s: %w", side.path, unwrapPathError(side.err))
	}
	if b := side.bound; b != nil {
		if b.bind.want.Bytes != side.size {
			return nil, mismatch(name, side.path, fmt.Sprintf("the sidecar describes a file of %d bytes, the file has %d", b.bind.want.Bytes, side.size), b.bind.want.Bytes > side.size)
		}
		return &boundSidecar{meta: b.meta, bind: &binding{sidecar: side.path, want: b.bind.want, got: side.hr.d}}, nil
	}
	s, err := decodeSidecarFull(side.data, true)
	side.data = nil // decoded (a large item in place, sharing its memory: decodeSidecarOwned)
	if err != nil {
		return nil, fmt.Errorf("%s: metadata sidecar is not valid: %v; delete it or rewrite the file with the stage that made it", side.path, err)
	}
	if s.Data == nil {
		return nil, fmt.Errorf("%s: the metadata sidecar does not record the size and SHA-256 of %s, so nothing shows that the two belong together (an older pramkit or a hand wrote it); run the stage that wrote %s again, or, for a table made by hand, put the metadata in its first line as #pramkit {…} and delete the sidecar", side.path, name, name)
	}
	if s.Data.Bytes != side.size {
		return nil, mismatch(name, side.path, fmt.Sprintf("the sidecar describes a file of %d bytes, the file has %d", s.Data.Bytes, side.size), s.Data.Bytes > side.size)
	}
	return &boundSidecar{meta: s.Meta, bind: &binding{sidecar: side.path, want: *s.Data, got: side.hr.d}}, nil
}

// reusedSidecar is the sidecar at path as r, a CSV reader of its data
// file, bound it: a copy of r's metadata now and the digest the sidecar
// recorded; nil when r is not such a reader (ReadOptions.SidecarOf).
func reusedSidecar(r Reader, path string) *boundSidecar {
	c, ok := r.(*csvReader)
	if !ok || c.side == nil || c.side.sidecar != path {
		return nil
	}
	return &boundSidecar{meta: c.meta.Clone(), bind: &binding{sidecar: path, want: c.side.want}, digested: c.digested}
}

func mismatch(name, sidecar, why string, short bool) error {
	cause := "they come from different runs, or one was edited or copied without the other"
	if short {
		cause = "the file was cut short (or edited, or the two come from different runs)"
	}
	return fmt.Errorf("%s does not match its metadata sidecar %s (%s): %s; run the stage that wrote %s again, or copy both files again", name, sidecar, why, cause, name)
}

// verify checks, once the whole input has been read, that the bytes read
// are those the sidecar describes.
func (c *csvReader) verify() error {
	if c.bind == nil {
		return nil
	}
	b := c.bind
	c.bind = nil
	c.pipe.waitHashed()
	got := b.got.digest()
	switch {
	case got.Bytes != b.want.Bytes:
		return mismatch(c.name, b.sidecar, fmt.Sprintf("the sidecar describes a file of %d bytes, %d were read", b.want.Bytes, got.Bytes), b.want.Bytes > got.Bytes)
	case got.SHA256 != b.want.SHA256:
		return mismatch(c.name, b.sidecar, "the file's SHA-256 differs from the one the sidecar records", false)
	}
	return nil
}

// csvError turns encoding/csv's errors into one-line DataErrors with a fix.
func csvError(name string, err error, row int64, lineOffset int) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		var why string
		switch {
		case errors.Is(pe.Err, csv.ErrFieldCount):
			why = "the row has a different number of fields than the header; every row needs one value per column (quote values that contain commas)"
		case errors.Is(pe.Err, csv.ErrQuote), errors.Is(pe.Err, csv.ErrBareQuote):
			why = "a quote is misplaced; RFC 4180 wants a field that contains quotes wrapped in quotes, with inner quotes doubled"
		default:
			why = pe.Err.Error()
		}
		return &DataError{File: name, Line: pe.StartLine + lineOffset, Row: row, Err: errors.New(why)}
	}
	return fmt.Errorf("%s: %w", name, err)
}

func (c *csvReader) Name() string          { return c.name }
func (c *csvReader) Format() Format        { return CSV }
func (c *csvReader) Schema() *arrow.Schema { return c.schema }
func (c *csvReader) Meta() Meta            { return c.meta }
func (c *csvReader) RowsRead() int64       { return c.rows }
func (c *csvReader) NumRows() int64        { return -1 }

func (c *csvReader) Next() (arrow.RecordBatch, error) {
	if c.cur != nil {
		c.cur.Release()
		c.cur = nil
	}
	c.dropText()
	if c.err != nil {
		return nil, c.err
	}
	if c.done {
		return nil, io.EOF
	}
	if c.pipe == nil {
		c.pipe = c.startPipeline()
	}
	rec, text, err := c.pipe.next(c)
	if errors.Is(err, io.EOF) {
		c.done = true
		if err := c.verify(); err != nil {
			c.err = err
			return nil, err
		}
		return nil, io.EOF
	}
	if err != nil {
		c.err = err
		return nil, err
	}
	c.rows += rec.NumRows()
	c.cur = rec
	if c.text != nil {
		c.text.last = text
	}
	return rec, nil
}

// dropText releases the text of the last batch if RowTextOf did not
// claim it.
func (c *csvReader) dropText() {
	if c.text != nil && c.text.last != nil {
		c.text.last.Release()
		c.text.last = nil
	}
}

func (c *csvReader) Close() error {
	if c.cur != nil {
		c.cur.Release()
		c.cur = nil
	}
	c.dropText()
	if c.pipe != nil {
		c.pipe.stop()
	}
	if c.file != nil {
		return c.file.Close()
	}
	return nil
}

// codeColumns sets the fields that labels names (per file column, as
// ReadOptions.Labels) to DictType and returns labels per file column:
// have (nil: none yet) with those added, nil if none is coded.
func codeColumns(fields []arrow.Field, have []*Labels, labels map[string]*Labels) []*Labels {
	for i, f := range fields {
		if l := labels[f.Name]; l != nil {
			if have == nil {
				have = make([]*Labels, len(fields))
			}
			have[i], fields[i].Type = l, DictType
		}
	}
	return have
}

// CodeCSVColumns does what ReadOptions.Labels does, for r when r is a CSV
// reader that has not started reading, for a caller that opened r before
// it knew the labels (estimate reads a release's codebook from the file
// it opened); the columns it names become DictType in r's schema. It
// reports whether it did.
func CodeCSVColumns(r Reader, labels map[string]*Labels) bool {
	c, ok := r.(*csvReader)
	if !ok || c.pipe != nil || c.done || c.err != nil || len(labels) == 0 {
		return false
	}
	fields := make([]arrow.Field, c.ncols) // by file column; only the projected ones are named
	proj := c.schema.Fields()
	for i, f := range proj {
		fields[c.fileCol(i)] = f
	}
	c.labels = codeColumns(fields, c.labels, labels)
	for i := range proj {
		proj[i] = fields[c.fileCol(i)]
	}
	md := c.schema.Metadata()
	c.schema = arrow.NewSchema(proj, &md)
	return true
}

// fileCol is the file column of column i of r's schema.
func (c *csvReader) fileCol(i int) int {
	if c.sel == nil {
		return i
	}
	return c.sel[i]
}

// LowerCSVBatchRows makes r, a CSV reader that has not started reading,
// read batches of at most rows rows (its chunks in flight shrink with
// them), for a caller that learns after opening r that its own state
// takes most of the memory (estimate, with a codebook of a million
// labels). It reports whether it did.
func LowerCSVBatchRows(r Reader, rows int) bool {
	c, ok := r.(*csvReader)
	if !ok || c.pipe != nil || c.done || c.err != nil || rows < 1 || rows >= c.batch {
		return false
	}
	c.batch = rows
	return true
}

// ReuseCSVBuffers turns ReadOptions.ReuseBuffers on for r when r is a CSV
// reader that has not started reading, for a caller that opened r before
// it knew it would keep nothing of a batch past its release (estimate
// opens a release, then picks how to count it). It reports whether it did.
func ReuseCSVBuffers(r Reader) bool {
	c, ok := r.(*csvReader)
	if !ok || c.pipe != nil || c.done || c.err != nil {
		return false
	}
	c.reuse = true
	return true
}
