package table

import (
	"bufio"
	"errors"
	"fmt"
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
	// Inputs are the paths being read: writing over one of them is refused.
	Inputs []string
	// Perm is the new file's permission; 0 means 0644. Key files use 0600.
	Perm os.FileMode
	// NoClobber refuses to replace an existing file (key files).
	NoClobber bool
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
	if IsStdio(path) {
		out := opt.Stdout
		if out == nil {
			out = os.Stdout
		}
		return newFormatWriter(format, "stdout", nopCloser{out}, schema, meta, nil)
	}
	af, err := createAtomic(path, opt)
	if err != nil {
		return nil, err
	}
	var side *atomicFile
	if format == CSV {
		// The sidecar is replaced or removed together with the table, so a
		// stale one never describes a new file.
		side = &atomicFile{dst: sidecarPath(path), perm: af.perm}
	}
	w, err := newFormatWriter(format, path, af, schema, meta, side)
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
	tmp       *os.File
	buf       *bufio.Writer
	done      bool
}

func createAtomic(path string, opt WriteOptions) (*atomicFile, error) {
	perm := opt.Perm
	if perm == 0 {
		perm = 0o644
	}
	st, err := os.Stat(path)
	switch {
	case err == nil:
		if st.IsDir() {
			return nil, fmt.Errorf("%s: is a folder; give a file name for the output", path)
		}
		if opt.NoClobber {
			return nil, fmt.Errorf("%s: already exists; remove it or pass --force to replace it", path)
		}
		for _, in := range opt.Inputs {
			if IsStdio(in) {
				continue
			}
			if ist, err := os.Stat(in); err == nil && os.SameFile(st, ist) {
				return nil, fmt.Errorf("%s: the output is also an input; write to another file", path)
			}
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%s: %w", path, unwrapPathError(err))
	}
	af := &atomicFile{dst: path, perm: perm, noClobber: opt.NoClobber}
	if err := af.open(); err != nil {
		return nil, err
	}
	return af, nil
}

func (a *atomicFile) open() error {
	tmp, err := os.CreateTemp(filepath.Dir(a.dst), "."+filepath.Base(a.dst)+".tmp-*")
	if err != nil {
		return fmt.Errorf("%s: cannot create the output: %w", a.dst, unwrapPathError(err))
	}
	if err := tmp.Chmod(a.perm); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", a.dst, err)
	}
	a.tmp = tmp
	a.buf = bufio.NewWriterSize(tmp, 1<<20)
	return nil
}

func (a *atomicFile) Write(p []byte) (int, error) { return a.buf.Write(p) }

// Close does nothing: format writers close their sink when they finish,
// and the file must stay until commit or abort decides its fate.
func (a *atomicFile) Close() error { return nil }

func (a *atomicFile) commit() error {
	if a.done {
		return nil
	}
	if err := a.buf.Flush(); err != nil {
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
	if a.noClobber {
		// Link fails if the destination appeared meanwhile: a key file is
		// never replaced, not even by a race.
		if err := os.Link(a.tmp.Name(), a.dst); err != nil {
			os.Remove(a.tmp.Name())
			a.done = true
			return fmt.Errorf("%s: %w", a.dst, unwrapPathError(err))
		}
		os.Remove(a.tmp.Name())
	} else if err := os.Rename(a.tmp.Name(), a.dst); err != nil {
		os.Remove(a.tmp.Name())
		a.done = true
		return fmt.Errorf("%s: %w", a.dst, unwrapPathError(err))
	}
	a.done = true
	return nil
}

func (a *atomicFile) abort() {
	if a.done || a.tmp == nil {
		return
	}
	a.done = true
	a.tmp.Close()
	os.Remove(a.tmp.Name())
}

// newFormatWriter builds the writer for one format over sink s.
func newFormatWriter(format Format, name string, s sink, schema *arrow.Schema, meta Meta, side *atomicFile) (Writer, error) {
	var (
		fw  formatWriter
		err error
	)
	switch format {
	case CSV:
		fw, err = newCSVWriter(s, schema, meta, side == nil)
	case Parquet:
		fw, err = newParquetWriter(s, schema, meta)
	case Arrow:
		fw, err = newArrowWriter(s, schema, meta)
	default:
		err = fmt.Errorf("no writer for format %v", format)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &writer{name: name, format: format, fw: fw, sink: s, meta: meta, side: side, schema: schema}, nil
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
	meta   Meta
	side   *atomicFile
	schema *arrow.Schema
	closed bool
}

func (w *writer) Format() Format { return w.format }

func (w *writer) Write(rec arrow.RecordBatch) error {
	if !rec.Schema().Equal(w.schema) {
		return fmt.Errorf("%s: internal error: batch schema %v does not match the output schema %v", w.name, rec.Schema(), w.schema)
	}
	if err := w.fw.write(rec); err != nil {
		return fmt.Errorf("%s: %w", w.name, err)
	}
	return nil
}

func (w *writer) Commit() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if err := w.fw.close(); err != nil {
		w.abortFiles()
		return fmt.Errorf("%s: %w", w.name, err)
	}
	if err := w.sink.Close(); err != nil {
		w.abortFiles()
		return fmt.Errorf("%s: %w", w.name, err)
	}
	af, isFile := w.sink.(*atomicFile)
	if !isFile {
		if f, ok := w.sink.(interface{ Flush() error }); ok {
			return f.Flush()
		}
		return nil
	}
	if w.side != nil {
		if len(w.meta) > 0 {
			b, err := encodeSidecar(w.meta)
			if err != nil {
				w.abortFiles()
				return err
			}
			if err := w.side.open(); err != nil {
				w.abortFiles()
				return err
			}
			w.side.buf.Write(append(b, '\n'))
			if err := w.side.commit(); err != nil {
				af.abort()
				return err
			}
		} else if err := os.Remove(w.side.dst); err != nil && !errors.Is(err, os.ErrNotExist) {
			w.abortFiles()
			return fmt.Errorf("%s: cannot remove the stale metadata sidecar: %w", w.side.dst, unwrapPathError(err))
		}
	}
	return af.commit()
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
		return
	}
	w.closed = true
	w.fw.close()
	w.abortFiles()
}

// WriteFileAtomic writes data to path through a temporary file and a
// rename, refusing to replace any of inputs.
func WriteFileAtomic(path string, data []byte, perm os.FileMode, inputs []string) error {
	af, err := createAtomic(path, WriteOptions{Perm: perm, Inputs: inputs})
	if err != nil {
		return err
	}
	if _, err := af.Write(data); err != nil {
		af.abort()
		return fmt.Errorf("%s: %w", path, err)
	}
	return af.commit()
}
