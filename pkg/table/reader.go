package table

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// DefaultBatchSize is the number of rows per record batch: large enough to
// amortise per-batch costs, small enough that a batch of a few string
// columns stays within a few MB.
const DefaultBatchSize = 64 * 1024

// BatchRowsEnv names the environment variable that, when set to a positive
// integer, replaces DefaultBatchSize wherever the batch size is not given:
// in Open (ReadOptions.BatchSize 0), and in stages that size their blocks
// with BatchRows. It also sets the size of the chunks a CSV input is cut
// into for parallel parsing (64 bytes a row). It exists for tests: output
// must be the same byte for byte at any batch size and GOMAXPROCS, so
// tests run a stage at two batch sizes (e.g. PRAMKIT_BATCH_ROWS=3 and
// unset) and compare.
const BatchRowsEnv = "PRAMKIT_BATCH_ROWS"

// BatchRows is the batch size to use when none is given: $PRAMKIT_BATCH_ROWS
// if set, else DefaultBatchSize. A value that is not a positive integer is
// an error.
func BatchRows() (int, error) {
	v := os.Getenv(BatchRowsEnv)
	if v == "" {
		return DefaultBatchSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || n > 1<<24 {
		return 0, fmt.Errorf("%s=%q is not a number of rows between 1 and %d; unset it (it is meant for tests)", BatchRowsEnv, v, 1<<24)
	}
	return n, nil
}

// Reader streams the record batches of one table.
type Reader interface {
	// Name is the file name used in messages ("stdin" for standard input).
	Name() string
	// Format is the detected input format.
	Format() Format
	// Schema is the table's schema, without pramkit metadata.
	Schema() *arrow.Schema
	// Meta is the pramkit metadata that came with the table (never nil).
	// It is the reader's own map, which the reader does not read again:
	// a caller that has decoded a large item (a codebook: 10 MB at 1M
	// labels) may delete it to free it while the reader stays open.
	Meta() Meta
	// Next returns the next batch, or io.EOF after the last one. The batch
	// is valid until the next call to Next or Close; Retain it to keep it.
	Next() (arrow.RecordBatch, error)
	// RowsRead counts the rows returned so far, the current batch included.
	RowsRead() int64
	// NumRows is the total row count when the format records it (Parquet),
	// else -1.
	NumRows() int64
	Close() error
}

// ReadOptions tunes Open.
type ReadOptions struct {
	// BatchSize is the rows per batch; 0 means BatchRows() (DefaultBatchSize
	// unless $PRAMKIT_BATCH_ROWS says otherwise).
	BatchSize int
	// Stdin is read for "-" or ""; nil means os.Stdin.
	Stdin io.Reader
	// TempDir holds the spool file that a Parquet or Arrow file format
	// arriving on a pipe needs (they are read from the end); "" means the
	// system default.
	TempDir string
	// DictColumns names columns to read as Arrow dictionary arrays
	// (dictionary<int32, utf8>) when the file stores them dictionary-encoded
	// — Parquet string columns, whose dictionary pages are then never
	// expanded into one string per row. Coder maps such a column to codes
	// with one lookup per dictionary entry. Names the table lacks, and
	// columns that are not strings, are ignored; CSV always reads strings.
	// Arrow IPC columns come as they were written (dictionaries included)
	// whatever this says.
	DictColumns []string
	// Labels, for a CSV input, reads the columns it names as dictionary
	// arrays (DictType) over the given labels, each cell coded as its
	// record is parsed, on the parsing goroutines, with no string made
	// for it: a cell that is a label is the label's code; one that is
	// not gets a code past the labels, in its batch's dictionary, which
	// is then the labels followed by the batch's other values in order
	// of first appearance. A batch whose cells are all labels has the
	// labels' own dictionary (the same array for every batch). Names the
	// table lacks are ignored; other formats ignore it (Parquet has
	// DictColumns).
	// Give it only for columns of at most MaxReadLabels labels.
	Labels map[string]*Labels
	// RowGroups, for a Parquet file, reads only these row groups, in this
	// order (nil: all of them): a distributed job hands the row groups of
	// one file to different workers (ParquetRowGroups lists them). Other
	// formats refuse it.
	RowGroups []int
	// ReuseBuffers lets a reader hand the large buffers of a
	// batch the caller has released to a later batch (poolAllocator)
	// instead of leaving them to the collector. The caller promises to
	// keep no slice or string of a batch once it is released, nor past the
	// Next after it — a string used as a map key aliases the batch too:
	// clone it.
	ReuseBuffers bool
	// SidecarOf, when it is a reader Open returned for the same CSV file
	// with its sidecar, gives the file's metadata (as that reader holds
	// it now) and the data digest its sidecar recorded, and the sidecar
	// is not read again: a second opening of a high-cardinality release
	// read its codebook item again (24 MB at 2M labels) beside what the
	// caller had made of the first. The data is still checked against
	// the digest as it is read. Any other reader is ignored.
	SidecarOf Reader
	// DigestMeta names metadata items that the reader gives as their
	// MetaDigest instead of their text, for a caller that only compares
	// them with another file's (an item whose text is of a digest's form,
	// as a codebook's never is, may be left as it is). A CSV file's
	// sidecar is then read a piece at a time and the items hashed as they
	// are read, never held (readSidecarDigesting); other formats read
	// them and digest them after.
	DigestMeta []string
	// Columns, when not empty, reads only these columns: the reader's
	// schema and batches hold them alone, in the file's column order
	// (not the order given here, so that a projection never reorders what
	// a stage writes; duplicates count once). A stage that uses a few
	// columns of a wide table then skips building the others: CSV still
	// splits and checks every field of every record (bad quoting and wrong
	// field counts are refused as before, in any column) but builds Arrow
	// arrays only for these; Parquet decodes only these column chunks;
	// Arrow IPC drops the others from each batch. A CSV sidecar's digest
	// still covers the whole file. A name the table lacks is an error
	// naming the table's columns.
	Columns []string
}

// ColumnError is Open's error for a ReadOptions.Columns name the table
// lacks; a stage that checks the table's metadata first can tell it from
// other errors and check the metadata before reporting it.
type ColumnError struct {
	File   string
	Column string
	Known  []string // the table's columns
}

func (e *ColumnError) Error() string {
	return fmt.Sprintf("%s has no column %q (columns: %s)", e.File, e.Column, strings.Join(e.Known, ", "))
}

// projection returns the indices, in file order, of the columns of schema
// that cols selects, or nil when it selects them all.
func projection(name string, schema *arrow.Schema, cols []string) ([]int, error) {
	if len(cols) == 0 {
		return nil, nil
	}
	keep := make([]bool, schema.NumFields())
	for _, c := range cols {
		idx := schema.FieldIndices(c)
		if len(idx) == 0 {
			known := make([]string, schema.NumFields())
			for i, f := range schema.Fields() {
				known[i] = f.Name
			}
			return nil, &ColumnError{File: name, Column: c, Known: known}
		}
		keep[idx[0]] = true
	}
	var sel []int
	for i, k := range keep {
		if k {
			sel = append(sel, i)
		}
	}
	return sel, nil
}

// projectSchema is schema with only the fields sel (nil: all), keeping
// schema's metadata.
func projectSchema(schema *arrow.Schema, sel []int) *arrow.Schema {
	if sel == nil {
		return schema
	}
	fields := make([]arrow.Field, len(sel))
	for i, j := range sel {
		fields[i] = schema.Field(j)
	}
	md := schema.Metadata()
	return arrow.NewSchema(fields, &md)
}

// IsStdio reports whether path names standard input or output.
func IsStdio(path string) bool { return path == "" || path == "-" }

// DisplayName is the name used in messages for path.
func DisplayName(path string) string {
	if IsStdio(path) {
		return "stdin"
	}
	return path
}

// Open opens a table, detecting its format from the first bytes.
func Open(path string, opt ReadOptions) (Reader, error) {
	if opt.BatchSize <= 0 {
		n, err := BatchRows()
		if err != nil {
			return nil, err
		}
		opt.BatchSize = n
	}
	name := DisplayName(path)
	var (
		src  io.Reader
		file *os.File
		side *sidecarInput
	)
	if IsStdio(path) {
		src = opt.Stdin
		if src == nil {
			src = os.Stdin
		}
	} else {
		// A regular file and its sidecar are opened under a shared lock on
		// the folder, which a writer holds exclusively while it renames a
		// pair into place: the two are from the same commit. A FIFO or a
		// device is a stream: no sidecar, and no lock held while opening
		// it blocks.
		// A path that does not exist yet is locked too: a writer may
		// publish its first pair between the Stat and the Open, and the
		// reader must not see the data without its sidecar.
		unlock := func() {}
		if st, err := os.Stat(path); err != nil || st.Mode().IsRegular() {
			unlock = lockDir(path, false)
		}
		f, err := os.Open(path)
		if err != nil {
			unlock()
			return nil, fmt.Errorf("%s: cannot open: %w", name, unwrapPathError(err))
		}
		st, err := f.Stat()
		if err != nil {
			unlock()
			f.Close()
			return nil, fmt.Errorf("%s: %w", name, unwrapPathError(err))
		}
		if st.IsDir() {
			unlock()
			f.Close()
			return nil, errorf(name, "is a folder, not a table file")
		}
		src, file = f, f
		if st.Mode().IsRegular() {
			side = &sidecarInput{path: sidecarPath(path), size: st.Size()}
			switch side.bound = reusedSidecar(opt.SidecarOf, side.path); {
			case side.bound != nil:
			case len(opt.DigestMeta) > 0:
				side.data, side.digested, side.err = readSidecarDigesting(side.path, opt.DigestMeta)
			default:
				side.data, side.err = os.ReadFile(side.path)
			}
			side.hr = &hashReader{r: f, d: &digester{h: sha256.New()}}
			src = side.hr
		}
		unlock()
	}
	br := bufio.NewReaderSize(src, sniffBuffer(side, file))
	head, err := br.Peek(8)
	if len(head) == 0 {
		if file != nil {
			file.Close()
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return nil, errorf(name, "the file is empty: a table needs at least a header row")
	}
	format := sniff(head)
	if side != nil && format != CSV {
		// Parquet and Arrow carry their metadata inside the file, so the
		// binding is intrinsic: no digest to check, no hashing. (A key
		// file's match with a release is checked by decrypt, the
		// curators' files' match with each other by perturb.)
		side.hr.d = nil
	}
	if opt.RowGroups != nil && format != Parquet {
		if file != nil {
			file.Close()
		}
		return nil, errorf(name, "is %s, not Parquet: only a Parquet file is read by row group", format)
	}
	var r Reader
	switch format {
	case Parquet:
		r, err = openParquet(name, file, br, opt)
	case Arrow:
		open := openArrowStream
		if string(head[:min(len(head), 6)]) == string(arrowFileMagic) {
			open = openArrowFile
		}
		r, err = open(name, file, br, opt)
	default:
		r, err = openCSV(name, file, br, opt, side)
	}
	if err != nil {
		return nil, err
	}
	// A file no sidecar digest checks (Parquet, Arrow, a CSV with a
	// #pramkit line or none) must be the one a first reader read.
	if c, ok := r.(*csvReader); !ok || c.bind == nil {
		if err := sameSource(r, opt.SidecarOf, path, file); err != nil {
			r.Close()
			return nil, err
		}
	}
	if format == CSV {
		return r, nil
	}
	digestItems(r.Meta(), opt.DigestMeta, false)
	if format == Arrow {
		return &slicingReader{Reader: r, max: int64(opt.BatchSize)}, nil
	}
	return r, nil
}

// sniffBuffer is the size of Open's buffered reader of file: 1 MiB, but
// the smallest bufio allows for a regular file that starts with Parquet's
// magic. A Parquet file is read at offsets (seekable), never through the
// buffer, whose first fill read and hashed a whole MiB of it and cost
// ~5 ms of estimate's serial start on a 10M-row release (~60 ms in all).
func sniffBuffer(side *sidecarInput, file *os.File) int {
	if side != nil && file != nil {
		var magic [4]byte
		if n, _ := file.ReadAt(magic[:], 0); n == len(magic) && sniff(magic[:]) == Parquet {
			return 16
		}
	}
	return 1 << 20
}

// sidecarInput is what Open read of a CSV file's sidecar, and the hashing
// reader that lets the CSV reader check the data against it.
type sidecarInput struct {
	path  string
	data  []byte
	bound *boundSidecar // ReadOptions.SidecarOf's, instead of data
	// digested: data has ReadOptions.DigestMeta's items as digests
	// already (readSidecarDigesting).
	digested bool
	err      error
	size     int64 // the data file's size when it was opened
	hr       *hashReader
}

// hashReader hashes what it reads until d is set to nil.
type hashReader struct {
	r io.Reader
	d *digester
}

func (h *hashReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if h.d != nil {
		h.d.Write(p[:n])
	}
	return n, err
}

// unwrapPathError drops the operation and path that *fs.PathError repeats,
// since our messages name the file already.
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// seekable returns a file that can be read at any offset: the input file
// itself, or, for a pipe, a spool copy in a temporary file that is removed
// as soon as it is open (the open descriptor keeps it readable).
func seekable(name string, file *os.File, br *bufio.Reader, opt ReadOptions) (*os.File, error) {
	if file != nil {
		if _, err := file.Seek(0, io.SeekStart); err == nil {
			return file, nil
		}
	}
	tmp, err := os.CreateTemp(opt.TempDir, "pramkit-spool-*")
	if err != nil {
		return nil, fmt.Errorf("%s: cannot spool the input to a temporary file: %w", name, err)
	}
	os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, br); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("%s: spooling the input: %w", name, err)
	}
	if file != nil {
		file.Close()
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		tmp.Close()
		return nil, err
	}
	return tmp, nil
}

// recovered turns a panic inside a third-party decoder (which corrupt input
// can trigger) into an error naming the file.
func recovered(name string, err *error) {
	if r := recover(); r != nil {
		*err = errorf(name, "the file is corrupt or truncated (%v)", r)
	}
}

// corruptBatch is the error for a decoded batch that fails validateBatch,
// the first row of which would have been row after+1.
func corruptBatch(name string, after int64, err error) error {
	return errorf(name, "the batch of rows from row %d on is corrupt (%v); the file was damaged or cut short: copy or write it again", after+1, err)
}

// EachBatch calls fn with every batch of r, and the 1-based number of the
// batch's first row, until the table ends (then it returns nil) or fn or
// the reader fails. The batch is valid only during the call.
func EachBatch(r Reader, fn func(rec arrow.RecordBatch, first int64) error) error {
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(rec, r.RowsRead()-rec.NumRows()+1); err != nil {
			return err
		}
	}
}

// slicingReader hands out an Arrow file's batches (whose sizes the writer
// chose) in slices of at most max rows, without copying, so that every
// format honours the batch size.
type slicingReader struct {
	Reader
	max  int64
	rec  arrow.RecordBatch // the inner reader's batch (it owns it)
	off  int64             // rows of rec handed out
	cur  arrow.RecordBatch
	rows int64
}

func (s *slicingReader) Next() (arrow.RecordBatch, error) {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	if s.rec == nil || s.off == s.rec.NumRows() {
		rec, err := s.Reader.Next()
		if err != nil {
			s.rec = nil
			return nil, err
		}
		if rec.NumRows() <= s.max {
			s.rec, s.off = nil, 0
			s.rows += rec.NumRows()
			return rec, nil
		}
		s.rec, s.off = rec, 0
	}
	n := min(s.max, s.rec.NumRows()-s.off)
	s.cur = s.rec.NewSlice(s.off, s.off+n)
	s.off += n
	s.rows += n
	return s.cur, nil
}

func (s *slicingReader) RowsRead() int64 { return s.rows }

func (s *slicingReader) Close() error {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	return s.Reader.Close()
}

// ManyLabels is the labels (all of a table's columns) past which a stage
// that reads a release whole (estimate, report) reads it in batches of
// ManyLabelsBatchRows rows. The codebook then takes much of the memory
// (~26 bytes a label: its text, offsets and index, and its JSON in the
// metadata), and a column of more than MaxReadLabels labels is parsed as
// text, whose batches in flight took ~34 MB: at 1M labels (4M rows, 3M
// observed values), alternated runs of estimate, peak RSS 124–138 MB
// with batches of 65,536 rows, 89–92 MB with batches of 8,192 (4,096 and
// 16,384 alike), in 4.1–5.6 s against 4.9–5.8 s (the heap nearer its
// limit collects more often).
const ManyLabels = 1 << 18

// ManyLabelsBatchRows is the batch rows past ManyLabels labels.
const ManyLabelsBatchRows = 8192

// MaxReadLabels bounds the labels of a column read as codes
// (ReadOptions.Labels): a batch with a value that is no label has a
// dictionary of its own, the labels and its other values, which a stage
// maps again entry by entry (Coder) — cheap for a few thousand labels,
// not for a million.
const MaxReadLabels = 1 << 12

// fileSource is the path of a Parquet or Arrow reader's file and what the
// file was when opened (device and inode, size, modification time), for
// a later open of the same path (sameSource).
type fileSource struct {
	path string
	id   os.FileInfo
}

func (s *fileSource) source() *fileSource { return s }

// sourceOf is r's fileSource, nil when it has none.
func sourceOf(r Reader) *fileSource {
	if s, ok := r.(*slicingReader); ok {
		r = s.Reader
	}
	if s, ok := r.(interface{ source() *fileSource }); ok {
		return s.source()
	}
	return nil
}

// sameSource records what file (opened at path) is for r, and refuses it
// when first (ReadOptions.SidecarOf, a reader of the same path — a
// stage's earlier pass over its input, or its first opening of it) read
// another file there: replaced or rewritten between the two, a report or
// an estimate would mix the counts of two files. A CSV's second reader
// bound to a sidecar checks the data against its digest instead.
func sameSource(r, first Reader, path string, file *os.File) error {
	s := sourceOf(r)
	if s == nil || file == nil {
		return nil
	}
	s.path = path
	s.id, _ = file.Stat()
	q := sourceOf(first)
	if q == nil || q.id == nil || s.id == nil || q.path != path {
		return nil
	}
	if !os.SameFile(q.id, s.id) || q.id.Size() != s.id.Size() || !q.id.ModTime().Equal(s.id.ModTime()) {
		return errorf(DisplayName(path), "changed since this run first read it (replaced or rewritten meanwhile); run again once nothing writes it")
	}
	return nil
}
