package table

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
)

// Writer writes one table. Nothing is visible at the destination until
// Commit succeeds; Abort (safe to call after Commit, and twice) removes what
// was written. Callers use:
//
//	w, err := table.Create(path, schema, meta, opt)
//	defer w.Abort()
//	… w.Write(batch) …
//	return w.Commit()
type Writer interface {
	Write(rec arrow.RecordBatch) error
	Commit() error
	Abort()
	// Format is the format being written.
	Format() Format
}

// WriteOptions tunes Create.
type WriteOptions struct {
	// Format forces the output format; Unknown takes it from the path's
	// extension, and failing that from Fallback (typically the input's).
	Format   Format
	Fallback Format
	// Stdout is written for "-" or ""; nil means os.Stdout.
	Stdout io.Writer
	// Inputs are the paths the run reads, and its other outputs: writing
	// over one of them or over their sidecars is refused, and the output
	// is never more permissive than the inputs (see outputPerm).
	Inputs []string
	// Perm is the widest permission of the new file; 0 means 0666. The
	// umask and the inputs' permissions narrow it. Key files use 0600.
	Perm os.FileMode
	// NoClobber refuses to replace an existing file (key files).
	NoClobber bool
	// Key marks an output that holds key material: with NoClobber off
	// (--force) it may replace an existing key file, which no other output
	// may.
	Key bool
	// Flag is the flag that named the path, for messages; "" means -o.
	Flag string
	// Deferred are metadata items made when the writer writes its
	// metadata (see Deferred); an item there replaces meta's of its key.
	Deferred []Deferred
	// RowGroupRows is the number of rows of a Parquet output's row groups
	// and of an Arrow output's record batches; 0 means RowGroupRows, which
	// every tool uses. Tests make small ones to get files of many groups.
	RowGroupRows int
}

// ResolveFormat is the format Create would write for path.
func ResolveFormat(path string, opt WriteOptions) Format {
	if opt.Format != Unknown {
		return opt.Format
	}
	if !IsStdio(path) {
		if f := FormatFromPath(path); f != Unknown {
			return f
		}
	}
	if opt.Fallback != Unknown {
		return opt.Fallback
	}
	return CSV
}

// Create starts writing a table with the given schema and metadata to path
// ("-" or "" for standard output).
func Create(path string, schema *arrow.Schema, meta Meta, opt WriteOptions) (Writer, error) {
	format := ResolveFormat(path, opt)
	later := lateItems{d: opt.Deferred}
	if len(later.d) > 0 {
		meta = meta.Clone()
		for _, item := range later.d {
			delete(meta, item.Key)
		}
	}
	var err error
	switch {
	case IsStdio(path) || format == Arrow || format == Parquet && !streamFooter:
		// The metadata is written first (or, in tests of the footer
		// arrow-go serializes, given at the start).
		meta, err = withDeferred(meta, later.d)
		later = lateItems{}
	case format == Parquet:
		meta, later, err = deferLarge(meta, later.d)
	}
	if err != nil {
		return nil, err
	}
	if IsStdio(path) {
		out := opt.Stdout
		if out == nil {
			out = os.Stdout
		}
		var s sink = nopCloser{out}
		if format == CSV {
			s = newStreamSink(out)
		}
		return newFormatWriter(format, "stdout", s, schema, meta, lateItems{}, nil, opt.RowGroupRows)
	}
	af, err := createAtomic(path, opt, format == CSV)
	if err != nil {
		return nil, err
	}
	var side *atomicFile
	if format == CSV {
		// The sidecar is replaced or removed together with the table, so a
		// stale one never describes a new file.
		was, _ := destination(sidecarPath(path)) // (checked by createAtomic)
		side = &atomicFile{dst: sidecarPath(path), perm: af.perm, was: was, keyOK: af.keyOK}
	}
	w, err := newFormatWriter(format, path, af, schema, meta, later, side, opt.RowGroupRows)
	if err != nil {
		af.abort()
		return nil, err
	}
	return w, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// sink is where a format writer's bytes go: an atomic file or stdout.
type sink interface {
	io.Writer
	Close() error
}

// atomicFile is a temporary file in the destination's folder that becomes
// the destination by rename(2), which is atomic on one file system.
type atomicFile struct {
	dst       string
	perm      os.FileMode
	noClobber bool
	// was is the destination as Create found it (nil when there was
	// none), and keyOK says a key file may be replaced (a key writer's
	// --force): a file that is no longer was when publish comes — another
	// run wrote there meanwhile — is replaced only if it is no key file.
	was   os.FileInfo
	keyOK bool
	tmp   *os.File
	out   *fileSink // buffers, writes and hashes off the caller's goroutine
	sum   *digester // the data's size and SHA-256, for a CSV's sidecar
	done  bool
}

// digester counts and hashes the bytes written through it.
type digester struct {
	h hash.Hash
	n int64
}

func (d *digester) Write(p []byte) (int, error) {
	d.h.Write(p)
	d.n += int64(len(p))
	return len(p), nil
}

func (d *digester) digest() dataDigest {
	return dataDigest{Bytes: d.n, SHA256: hex.EncodeToString(d.h.Sum(nil))}
}

// createAtomic checks that path may be written (see checkDestination) and
// opens its temporary file; digest asks for the data's digest, which a
// CSV's sidecar records.
func createAtomic(path string, opt WriteOptions, digest bool) (*atomicFile, error) {
	st, err := destination(path)
	if err != nil {
		return nil, err
	}
	if st != nil && opt.NoClobber {
		return nil, fmt.Errorf("%s: already exists; remove it or pass --force to replace it", path)
	}
	if digest {
		// The sidecar is renamed over its own destination after the
		// data: a folder there would leave the data out without it.
		if _, err := destination(sidecarPath(path)); err != nil {
			return nil, err
		}
	}
	if err := checkDestination(path, opt, digest); err != nil {
		return nil, err
	}
	af := &atomicFile{dst: path, perm: outputPerm(opt), noClobber: opt.NoClobber, was: st, keyOK: opt.Key && !opt.NoClobber}
	if digest {
		af.sum = &digester{h: sha256.New()}
	}
	if err := af.open(); err != nil {
		return nil, err
	}
	return af, nil
}

// destination is what is at an output's path: nil when nothing, a
// regular file's info, else an error — a folder, or a device, FIFO or
// socket, which a rename would replace (as root, -o /dev/null would
// have replaced the system's /dev/null by a file of rows).
func destination(path string) (os.FileInfo, error) {
	st, err := os.Lstat(path)
	if err == nil && st.Mode()&os.ModeSymlink != 0 {
		st, err = os.Stat(path) // checkDestination looks where it points
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%s: %w", path, unwrapPathError(err))
	case st.IsDir():
		return nil, fmt.Errorf("%s: is a folder; give a file name for the output", path)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%s: is not a regular file (a device, FIFO or socket), which the output would replace; to discard or pipe the output, leave -o out and redirect standard output", path)
	}
	return st, nil
}

func (a *atomicFile) open() error {
	tmp, err := createPartial(a.dst, a.perm)
	if err != nil {
		return fmt.Errorf("%s: cannot create the output: %w", a.dst, unwrapPathError(err))
	}
	a.tmp = tmp
	a.out = newFileSink(tmp, a.sum)
	return nil
}

func (a *atomicFile) Write(p []byte) (int, error) { return a.out.Write(p) }

// blockSink is a sink that takes whole blocks of bytes, filled by the
// caller, without copying them (fileSink.takeBlock, handBlock).
type blockSink interface {
	takeBlock() []byte
	handBlock(b []byte) error
}

func (a *atomicFile) takeBlock() []byte        { return a.out.takeBlock() }
func (a *atomicFile) handBlock(b []byte) error { return a.out.handBlock(b) }

// Close does nothing: format writers close their sink when they finish,
// and the file must stay until commit or abort decides its fate.
func (a *atomicFile) Close() error { return nil }

// prepare makes the temporary file complete and durable before it is
// published.
func (a *atomicFile) prepare() error {
	if err := a.out.flush(); err != nil {
		a.abort()
		return fmt.Errorf("%s: %w", a.dst, err)
	}
	if err := a.tmp.Sync(); err != nil {
		a.abort()
		return fmt.Errorf("%s: %w", a.dst, err)
	}
	if err := a.tmp.Close(); err != nil {
		a.abort()
		return fmt.Errorf("%s: %w", a.dst, err)
	}
	return nil
}

// publish moves the prepared temporary file to its destination. The caller
// holds partials' lock.
func (a *atomicFile) publish() error {
	if a.done {
		return nil
	}
	a.done = true
	name := a.tmp.Name()
	defer forgetPartial(name)
	if partials.dying {
		os.Remove(name)
		return errDying
	}
	if a.noClobber {
		// Link fails if the destination appeared meanwhile: a key file is
		// never replaced, not even by a race.
		err := os.Link(name, a.dst)
		os.Remove(name)
		if err != nil {
			return fmt.Errorf("%s: %w", a.dst, unwrapPathError(err))
		}
		syncDir(a.dst)
		return nil
	}
	if err := os.Rename(name, a.dst); err != nil {
		os.Remove(name)
		return fmt.Errorf("%s: %w", a.dst, unwrapPathError(err))
	}
	syncDir(a.dst)
	return nil
}

// syncDir makes the folder holding path durable, so that the name just
// published survives a power cut before what is published after it
// (encrypt's key before its ciphertext; a CSV before its sidecar). Best
// effort: the file is published whether or not the folder can be synced
// (some file systems refuse).
func syncDir(path string) {
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
}

// stillOurs checks, just before publish, what is at the destination:
// Create checked what was there, and another run may have written there
// since (encrypt --key-out onto this -o while it ran). A key file that is
// not the one Create found is not replaced (unless keyOK); another file
// is, as the last run's output. Called before the folder's lock is taken:
// keyKind may open the file, which takes it shared.
func (a *atomicFile) stillOurs() error {
	if a.noClobber || a.done {
		return nil // publish links: it never replaces
	}
	// Nothing a rename would harm may have appeared (a folder, a FIFO):
	// the publish would fail after another table of the run was out.
	now, err := destination(a.dst)
	if err != nil {
		return err
	}
	if now == nil || a.was != nil && os.SameFile(now, a.was) {
		return nil
	}
	if k := keyKind(a.dst); k != NotKey && !(a.keyOK && (k == KeyFile || k == KeySidecar)) {
		return fmt.Errorf("%s: became %s while this run wrote it; not replaced: give another output name", a.dst, k)
	}
	return nil
}

// commit prepares and publishes a lone file (no sidecar).
func (a *atomicFile) commit() error {
	if a.done {
		return nil
	}
	if err := a.prepare(); err != nil {
		return err
	}
	return a.publishLone()
}

// publishLone publishes a prepared lone file.
func (a *atomicFile) publishLone() error {
	if a.done {
		return nil
	}
	if err := a.stillOurs(); err != nil {
		a.abort()
		return err
	}
	partials.Lock()
	defer partials.Unlock()
	return a.publish()
}

// discard removes the temporary file; the caller holds partials' lock.
func (a *atomicFile) discard() {
	if a.done || a.tmp == nil {
		return
	}
	a.done = true
	a.out.flush() // its goroutines end; the file goes anyway
	a.tmp.Close()
	os.Remove(a.tmp.Name())
	forgetPartial(a.tmp.Name())
}

func (a *atomicFile) abort() {
	partials.Lock()
	defer partials.Unlock()
	a.discard()
}

// newFormatWriter builds the writer for one format over sink s.
func newFormatWriter(format Format, name string, s sink, schema *arrow.Schema, meta Meta, later lateItems, side *atomicFile, groupRows int) (Writer, error) {
	var (
		fw  formatWriter
		err error
	)
	switch format {
	case CSV:
		fw, err = newCSVWriter(s, schema, meta, side == nil)
	case Parquet:
		fw, err = newParquetWriter(s, schema, meta, later, groupRows)
	case Arrow:
		fw, err = newArrowWriter(s, schema, meta, groupRows)
	default:
		err = fmt.Errorf("no writer for format %v", format)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	w := &writer{name: name, format: format, fw: fw, sink: s, side: side, schema: schema}
	if side != nil {
		// Only a CSV file's sidecar is written at commit; other formats
		// have their metadata already (or in their footer's writer).
		w.meta, w.later = meta, later.d
	}
	return w, nil
}

// formatWriter encodes batches in one format.
type formatWriter interface {
	write(rec arrow.RecordBatch) error
	close() error
}

type writer struct {
	name   string
	format Format
	fw     formatWriter
	sink   sink
	meta   Meta       // a CSV file's, for its sidecar at commit
	later  []Deferred // a CSV file's, made for its sidecar at commit
	side   *atomicFile
	schema *arrow.Schema
	closed bool // prepared (or aborted): nothing more is written
	// err is prepare's; published: Commit has published (or failed);
	// sideReady: the sidecar is written and waits to be published.
	err       error
	published bool
	sideReady bool
}

func (w *writer) Format() Format { return w.format }

func (w *writer) Write(rec arrow.RecordBatch) error {
	if w.closed {
		return fmt.Errorf("%s: internal error: a write after the table was committed or aborted", w.name)
	}
	if !rec.Schema().Equal(w.schema) {
		return fmt.Errorf("%s: internal error: batch schema %v does not match the output schema %v", w.name, rec.Schema(), w.schema)
	}
	if err := checkDictionaries(rec); err != nil {
		return fmt.Errorf("%s: %w", w.name, err)
	}
	if err := w.fw.write(rec); err != nil {
		return fmt.Errorf("%s: %w", w.name, err)
	}
	return nil
}

func (w *writer) Commit() error {
	if err := w.Prepare(); err != nil {
		return err
	}
	if w.published {
		return w.err
	}
	w.published = true
	w.err = w.publish()
	return w.err
}

// errAborted is Commit's error after Abort.
var errAborted = errors.New("internal error: a commit after the table was aborted")

func (w *writer) publish() error {
	af, isFile := w.sink.(*atomicFile)
	if !isFile {
		if f, ok := w.sink.(interface{ Flush() error }); ok {
			return f.Flush()
		}
		return nil
	}
	if w.side == nil {
		return af.publishLone()
	}
	return w.publishPair(af)
}

// Prepare ends the table and makes its files complete and durable — the
// data, and a CSV's sidecar with the data's digest — without publishing
// them (Staged, CommitAll); Commit then publishes. An error aborts the
// files and is returned again by Commit.
func (w *writer) Prepare() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	w.err = w.prepareFiles()
	if w.err != nil {
		w.published = true
		w.abortFiles()
	}
	return w.err
}

// Staged is a Writer whose files can be made complete and durable
// (Prepare) and their destinations checked again (CheckDestination)
// before Commit publishes them: what CommitAll does for several tables.
// Create's writers are Staged; a wrapper forwards both.
type Staged interface {
	Writer
	Prepare() error
	CheckDestination() error
}

// Prepare makes w's files complete and durable without publishing them
// when w is Staged: its Commit then only publishes. What the table's
// format writer held (a Parquet footer's metadata) goes.
func Prepare(w Writer) error {
	if s, ok := w.(Staged); ok {
		return s.Prepare()
	}
	return nil
}

// CheckDestination checks again, before publishing, that a prepared
// table replaces only what Create found at its destination, or no key
// file (atomicFile.stillOurs).
func (w *writer) CheckDestination() error {
	af, ok := w.sink.(*atomicFile)
	if !ok || w.published {
		return nil
	}
	if err := af.stillOurs(); err != nil {
		return err
	}
	if w.sideReady {
		return w.side.stillOurs()
	}
	return nil
}

func (w *writer) prepareFiles() error {
	err := w.fw.close()
	w.fw = nil // (closed: its buffers and metadata go)
	if err != nil {
		w.sink.Close() // (a stream's goroutine ends)
		return fmt.Errorf("%s: %w", w.name, err)
	}
	if err := w.sink.Close(); err != nil {
		return fmt.Errorf("%s: %w", w.name, err)
	}
	af, isFile := w.sink.(*atomicFile)
	if !isFile {
		return nil
	}
	if err := af.prepare(); err != nil {
		return err
	}
	if w.side == nil || len(w.meta)+len(w.later) == 0 {
		return nil
	}
	if err := w.side.open(); err != nil {
		return err
	}
	meta, later := w.meta, w.later
	w.meta, w.later = nil, nil
	if err := writeBoundSidecar(w.side, meta, later, af.sum.digest()); err != nil {
		return err
	}
	if err := w.side.prepare(); err != nil {
		return err
	}
	w.sideReady = true
	return nil
}

// CommitAll commits ws as one: every one is made complete and durable
// first, and only then are they published, in order. A failure while
// writing (a full disk) publishes none and leaves the files they would
// replace as they were — anonymize's Anatomy publishes its groups table
// and its rows so, encrypt its key and ciphertext; Anatomy had published
// the groups table, failed on the rows and removed it, the previous
// run's gone with it. published is how many were published before an
// error.
func CommitAll(ws ...Writer) (published int, err error) {
	abort := func(err error) (int, error) {
		for _, w := range ws {
			w.Abort()
		}
		return 0, err
	}
	for _, w := range ws {
		if err := Prepare(w); err != nil {
			return abort(err)
		}
	}
	for _, w := range ws {
		if s, ok := w.(Staged); ok {
			if err := s.CheckDestination(); err != nil {
				return abort(err)
			}
		}
	}
	for i, w := range ws {
		if err := w.Commit(); err != nil {
			return i, err
		}
	}
	return len(ws), nil
}

// ErrDataPublished is in (errors.Is) the error of a Commit that
// published the data but failed after it (its sidecar): the rows are
// out, so what a caller records of a release (perturb's ledger entry,
// encrypt's key file) must stay.
var ErrDataPublished = errors.New("the data file is published")

// publishedError is an error that is also ErrDataPublished.
type publishedError struct{ error }

func (e publishedError) Unwrap() []error { return []error{e.error, ErrDataPublished} }

// betweenRenames, when set by a test, runs between the data's and the
// sidecar's rename, to widen the window a concurrent run could slip into.
var betweenRenames func()

// publishPair publishes a CSV file and its sidecar as one unit: the
// sidecar records the digest of the data it describes; both are complete
// on disk before either is renamed (prepare); the data is renamed first,
// then the sidecar, under an exclusive lock on the folder (readers take
// it shared), so two runs writing the same -o end with one run's pair,
// and a crash between the two renames leaves a pair that readers refuse,
// never one they accept.
func (w *writer) publishPair(af *atomicFile) error {
	side := w.side
	if !w.sideReady {
		side = nil
	}
	if err := af.stillOurs(); err != nil {
		w.abortFiles()
		return err
	}
	if side != nil {
		if err := side.stillOurs(); err != nil {
			w.abortFiles()
			return err
		}
	}
	unlock := lockDir(af.dst, true)
	defer unlock()
	partials.Lock()
	defer partials.Unlock()
	if err := af.publish(); err != nil {
		if side != nil {
			side.discard()
		}
		return err
	}
	if betweenRenames != nil {
		betweenRenames()
	}
	if side == nil {
		if err := os.Remove(w.side.dst); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: cannot remove the stale metadata sidecar (readers will refuse %s until it is gone): %w", w.side.dst, af.dst, unwrapPathError(err))
		}
		return nil
	}
	if err := side.publish(); err != nil {
		return publishedError{fmt.Errorf("%s: written, but its metadata sidecar was not (readers will refuse the pair; run again): %w", af.dst, err)}
	}
	return nil
}

func (w *writer) abortFiles() {
	if af, ok := w.sink.(*atomicFile); ok {
		af.abort()
	}
	if w.side != nil {
		w.side.abort()
	}
}

func (w *writer) Abort() {
	if w.closed {
		if !w.published {
			// Prepared, never published: its files go.
			w.published, w.err = true, errAborted
			w.abortFiles()
		}
		return
	}
	w.closed, w.published, w.err = true, true, errAborted
	if a, ok := w.fw.(interface{ abort() }); ok {
		a.abort()
	} else {
		w.fw.close()
	}
	w.abortFiles()
	if s, ok := w.sink.(*streamSink); ok {
		s.Close() // (its goroutine ends; the bytes given were written)
	}
}

// WriteFileAtomic writes data to path through a temporary file and a
// rename, refusing to replace any of inputs; perm is narrowed as
// WriteOptions.Perm is.
func WriteFileAtomic(path string, data []byte, perm os.FileMode, inputs []string) error {
	return WriteFile(path, data, WriteOptions{Perm: perm, Inputs: inputs})
}

// WriteFile writes a file that is not a table (a codebook, a secret)
// through a temporary file and a rename, with the checks and permissions
// of Create.
func WriteFile(path string, data []byte, opt WriteOptions) error {
	af, err := createAtomic(path, opt, false)
	if err != nil {
		return err
	}
	if _, err := af.Write(data); err != nil {
		af.abort()
		return fmt.Errorf("%s: %w", path, err)
	}
	return af.commit()
}
