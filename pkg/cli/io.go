package cli

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
	"github.com/pramkit/pramkit/pkg/version"
)

// Open opens an input table; "-" or "" reads the command's stdin.
func (s *Streams) Open(path string) (table.Reader, error) {
	return table.Open(path, table.ReadOptions{Stdin: s.In})
}

// Create opens the output table o with the given schema and metadata. The
// format comes from --output-format, else -o's extension, else the input's
// format (inputFormat). Writing over any of inputs or their sidecars, or
// over a key or secret file, is refused (table.WriteOptions.Inputs). The
// pramkit and contract versions are recorded in the metadata (release.Stamp).
// Items of later are made when the writer writes its metadata
// (table.Deferred: a codebook is not held while rows stream).
func (s *Streams) Create(o Output, schema *arrow.Schema, meta table.Meta, inputFormat table.Format, inputs []string, later ...table.Deferred) (table.Writer, error) {
	f, err := table.ParseFormat(o.Format)
	if err != nil {
		return nil, &UsageError{err}
	}
	if table.IsStdio(o.Path) && s.OutIsTerminal {
		if rf := table.ResolveFormat(o.Path, table.WriteOptions{Format: f, Fallback: inputFormat}); rf != table.CSV {
			return nil, Usagef("refusing to write %s to a terminal: give -o FILE, pipe the output, or pass --output-format csv", rf)
		}
	}
	meta = meta.Clone()
	release.Stamp(meta, version.String())
	return table.Create(o.Path, schema, meta, table.WriteOptions{
		Format:   f,
		Fallback: inputFormat,
		Stdout:   s.Out,
		Inputs:   inputs,
		Flag:     o.Flag,
		Deferred: later,
	})
}

// CreateKey opens a table that holds key material (a key file) at path:
// created owner-only (mode 0600) and never written to standard output,
// where it would reach whatever reads the pipe. An existing file is never
// replaced unless force. The format comes from path's extension, else
// fallback. The pramkit and contract versions are recorded (release.Stamp).
func (s *Streams) CreateKey(path string, schema *arrow.Schema, meta table.Meta, fallback table.Format, inputs []string, force bool, later ...table.Deferred) (table.Writer, error) {
	if table.IsStdio(path) {
		return nil, Usagef("a key file must be a file: give a path, not standard output")
	}
	meta = meta.Clone()
	release.Stamp(meta, version.String())
	return table.Create(path, schema, meta, table.WriteOptions{
		Fallback:  fallback,
		Inputs:    inputs,
		Perm:      0o600,
		NoClobber: !force,
		Key:       true,
		Flag:      "--key-out",
		Deferred:  later,
	})
}
