package stage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/table"
)

// Inputs and outputs may live on any Beam filesystem (gs://, s3://,
// memfs:// in tests): a cluster's workers share no POSIX path. pkg/table
// reads and writes local files only (Parquet by row group needs random
// access, a CSV its sidecar), so a remote file is copied to a private
// temporary folder on the worker, read there and removed; an output is
// written locally, committed, and only then copied to its destination.
// Object stores (GCS, S3) make an object visible only when its upload
// completes, so a failed copy leaves no partial object. Local paths take
// table.Open and table.Create directly, as before.

// isRemote reports whether path names a file on a non-local Beam
// filesystem (it has a scheme, "gs://…").
func isRemote(path string) bool {
	return strings.Index(path, "://") > 0
}

// listFiles expands a glob, local or remote, sorted.
func listFiles(ctx context.Context, glob string) ([]string, error) {
	if !isRemote(glob) {
		return filepath.Glob(glob)
	}
	fs, err := filesystem.New(ctx, glob)
	if err != nil {
		return nil, oneLine(err)
	}
	defer fs.Close()
	files, err := fs.List(ctx, glob)
	if err != nil {
		return nil, fmt.Errorf("cannot list %s: %v", glob, oneLine(err))
	}
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, ".meta.json") })
	slices.Sort(files)
	return files, nil
}

// oneLine is err's first line (a missing scheme's error suggests an import
// on a second line, meaningless to a user of the binary).
func oneLine(err error) error {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return errors.New(strings.TrimSuffix(strings.TrimSpace(msg), ":"))
}

// openTable opens path with table.Open, through a local copy when the path
// is remote (with its CSV sidecar, if there is one), taken from the
// process's cache of fetched files (fetchcache.go). Closing the reader
// releases the copy. Messages name path, never the copy.
func openTable(path string, opt table.ReadOptions) (table.Reader, error) {
	if !isRemote(path) {
		return table.Open(path, opt)
	}
	e, err := remoteCache.acquire(context.Background(), path)
	if err != nil {
		return nil, err
	}
	r, err := table.Open(e.local, opt)
	if err != nil {
		remoteCache.release(e)
		return nil, renamed(err, e.local, path)
	}
	return &fetchedReader{Reader: r, copy: e, local: e.local, path: path}, nil
}

// remoteBase is the last element of a remote path, which keeps its
// extension (the format) and a name for the sidecar.
func remoteBase(path string) string {
	return path[strings.LastIndex(path, "/")+1:]
}

// fetch copies the remote file src to the local file dst.
func fetch(ctx context.Context, src, dst string) error {
	fs, err := filesystem.New(ctx, src)
	if err != nil {
		return oneLine(err)
	}
	defer fs.Close()
	r, err := fs.OpenRead(ctx, src)
	if err != nil {
		return fmt.Errorf("cannot read %s: %v", src, oneLine(err))
	}
	defer r.Close()
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return fmt.Errorf("cannot read %s: %v", src, oneLine(err))
	}
	return f.Close()
}

// fetchedReader reads the local copy of a remote file.
type fetchedReader struct {
	table.Reader
	copy        *cachedCopy
	local, path string
	closed      bool
}

func (r *fetchedReader) Name() string { return r.path }

func (r *fetchedReader) Next() (arrow.RecordBatch, error) {
	rec, err := r.Reader.Next()
	if err != nil && !errors.Is(err, io.EOF) {
		err = renamed(err, r.local, r.path)
	}
	return rec, err
}

func (r *fetchedReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.Reader.Close()
	remoteCache.release(r.copy)
	return err
}

// rowGroups is table.ParquetRowGroups of a reader openTable returned.
func rowGroups(r table.Reader) []int64 {
	if f, ok := r.(*fetchedReader); ok {
		r = f.Reader
	}
	return table.ParquetRowGroups(r)
}

// renamedError is err with the local copy's name replaced by the remote
// file's in its message; errors.Is/As still see err.
type renamedError struct {
	msg string
	err error
}

func (e *renamedError) Error() string { return e.msg }
func (e *renamedError) Unwrap() error { return e.err }

func renamed(err error, local, path string) error {
	return &renamedError{msg: strings.ReplaceAll(err.Error(), local, path), err: err}
}

// createTable is table.Create for a local path. For a remote one it writes
// a local temporary file whose Commit copies it (and its CSV sidecar) to
// path; Abort removes it and leaves path untouched.
func createTable(path string, schema *arrow.Schema, meta table.Meta, opt table.WriteOptions) (table.Writer, error) {
	if !isRemote(path) {
		return table.Create(path, schema, meta, opt)
	}
	dir, err := os.MkdirTemp("", "pramkit-beam-out-*")
	if err != nil {
		return nil, err
	}
	local := filepath.Join(dir, remoteBase(path))
	w, err := table.Create(local, schema, meta, opt)
	if err != nil {
		os.RemoveAll(dir)
		return nil, renamed(err, local, path)
	}
	return &uploadWriter{Writer: w, dir: dir, local: local, path: path}, nil
}

// uploadWriter writes a local file and copies it to path on Commit.
type uploadWriter struct {
	table.Writer
	dir, local, path string
	done             bool
}

func (w *uploadWriter) Commit() error {
	if w.done {
		return nil
	}
	w.done = true
	defer os.RemoveAll(w.dir)
	if err := w.Writer.Commit(); err != nil {
		return renamed(err, w.local, w.path)
	}
	// The data file first: a sidecar names its data file's digest, so a
	// reader never accepts a sidecar next to a stale data file.
	if err := upload(context.Background(), w.local, w.path); err != nil {
		return err
	}
	if _, err := os.Stat(w.local + ".meta.json"); err == nil {
		return upload(context.Background(), w.local+".meta.json", w.path+".meta.json")
	}
	return nil
}

func (w *uploadWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.Writer.Abort()
	os.RemoveAll(w.dir)
}

// upload copies the local file src to the remote file dst.
func upload(ctx context.Context, src, dst string) error {
	fs, err := filesystem.New(ctx, dst)
	if err != nil {
		return oneLine(err)
	}
	defer fs.Close()
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := fs.OpenWrite(ctx, dst)
	if err != nil {
		return fmt.Errorf("cannot write %s: %v", dst, oneLine(err))
	}
	if _, err := io.Copy(w, f); err != nil {
		w.Close()
		removeFile(ctx, dst)
		return fmt.Errorf("cannot write %s: %v", dst, oneLine(err))
	}
	if err := w.Close(); err != nil {
		removeFile(ctx, dst)
		return fmt.Errorf("cannot write %s: %v", dst, oneLine(err))
	}
	return nil
}

// removeFile removes a file, local or remote, where the filesystem can.
func removeFile(ctx context.Context, path string) {
	if !isRemote(path) {
		os.Remove(path)
		return
	}
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return
	}
	defer fs.Close()
	if rm, ok := fs.(filesystem.Remover); ok {
		rm.Remove(ctx, path)
	}
}

// fetchLocal returns a local copy of path (path itself when local) and a
// function that removes the copy.
func fetchLocal(path string) (string, func(), error) {
	if !isRemote(path) {
		return path, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "pramkit-beam-in-*")
	if err != nil {
		return "", nil, err
	}
	local := filepath.Join(dir, remoteBase(path))
	if err := fetch(context.Background(), path, local); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return local, func() { os.RemoveAll(dir) }, nil
}

// localOutput refuses a remote --output for the stages whose outputs are
// still written through local paths only (their workers write intermediate
// files next to --output; sample writes PREFIX.csv through
// the CLI's writer; anonymize and perturb's bitflip and ddps rename their
// shards into place).
func (c Config) localOutput(stage string) error {
	if isRemote(c.Output) {
		return cli.Usagef("pramkit-beam %s writes --output to a local path only (its input may be remote): give a PREFIX on storage the driver and every worker share, and copy the result", stage)
	}
	return nil
}

// renamedStreams is s with the local prefix replaced by the remote one in
// what the CLI prints (its messages name the files it wrote).
func renamedStreams(s *cli.Streams, local, remote string) *cli.Streams {
	c := *s
	c.Out = &renamingWriter{w: s.Out, old: local, new: remote}
	c.Err = &renamingWriter{w: s.Err, old: local, new: remote}
	return &c
}

// renamingWriter replaces old by new in each Write (the CLI writes a
// message in one call).
type renamingWriter struct {
	w        io.Writer
	old, new string
}

func (r *renamingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, strings.ReplaceAll(string(p), r.old, r.new)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// openSized opens the file path, local or remote, for a sequential read
// and returns its size: estimateRows reads a CSV's first lines only, so a
// remote one is streamed rather than fetched whole.
func openSized(path string) (io.ReadCloser, int64, error) {
	if !isRemote(path) {
		f, err := os.Open(path)
		if err != nil {
			return nil, 0, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, 0, err
		}
		return f, st.Size(), nil
	}
	ctx := context.Background()
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return nil, 0, oneLine(err)
	}
	size, err := fs.Size(ctx, path)
	if err != nil {
		fs.Close()
		return nil, 0, fmt.Errorf("cannot read %s: %v", path, oneLine(err))
	}
	r, err := fs.OpenRead(ctx, path)
	if err != nil {
		fs.Close()
		return nil, 0, fmt.Errorf("cannot read %s: %v", path, oneLine(err))
	}
	return &fsReadCloser{ReadCloser: r, fs: fs}, size, nil
}

// fsReadCloser closes its filesystem with the file.
type fsReadCloser struct {
	io.ReadCloser
	fs filesystem.Interface
}

func (r *fsReadCloser) Close() error {
	err := r.ReadCloser.Close()
	r.fs.Close()
	return err
}
