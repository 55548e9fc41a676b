package table

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
)

// Format is a table file format.
type Format int

const (
	// Unknown means "not decided": for an output, take the input's format.
	Unknown Format = iota
	CSV
	Parquet
	Arrow // Arrow IPC stream format (read: stream or file format)
)

func (f Format) String() string {
	switch f {
	case CSV:
		return "csv"
	case Parquet:
		return "parquet"
	case Arrow:
		return "arrow"
	}
	return "unknown"
}

// ParseFormat parses the value of --output-format.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "csv":
		return CSV, nil
	case "parquet", "pq":
		return Parquet, nil
	case "arrow", "ipc", "arrows":
		return Arrow, nil
	case "":
		return Unknown, nil
	}
	return Unknown, fmt.Errorf("unknown format %q: use csv, parquet or arrow", s)
}

// FormatFromPath guesses a format from a file name's extension; Unknown when
// the extension says nothing.
func FormatFromPath(path string) Format {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv", ".txt":
		return CSV
	case ".parquet", ".pq":
		return Parquet
	case ".arrow", ".arrows", ".ipc", ".feather":
		return Arrow
	}
	return Unknown
}

var (
	parquetMagic   = []byte("PAR1")
	arrowFileMagic = []byte("ARROW1")
	// An IPC stream starts with a message: the continuation marker 0xFFFFFFFF
	// then a little-endian metadata length (pre-1.0 streams omit the marker,
	// which we do not support).
	arrowStreamMarker = []byte{0xff, 0xff, 0xff, 0xff}
)

// sniff returns the format of content that starts with head.
func sniff(head []byte) Format {
	switch {
	case bytes.HasPrefix(head, parquetMagic):
		return Parquet
	case bytes.HasPrefix(head, arrowFileMagic), bytes.HasPrefix(head, arrowStreamMarker):
		return Arrow
	}
	return CSV
}
