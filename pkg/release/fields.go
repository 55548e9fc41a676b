package release

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/table"
)

// Tolerance is the largest relative difference between a stored value and
// the value the other items determine that Decode accepts.
const Tolerance = 1e-9

// agree reports whether a and b agree within Tolerance, relative to the
// larger of them (exact equality for 0).
func agree(a, b float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= Tolerance*math.Max(math.Abs(a), math.Abs(b))
}

// Error is a metadata item that is missing, malformed, out of range or
// inconsistent with the others. Its message is one line: the file, the
// item, the values, and what to do.
type Error struct {
	File string
	Key  string
	Msg  string // what is wrong, e.g. `metadata "gamma" = 0.5 is out of range: …`
	Fix  string // what to do
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s; the file was edited or damaged — %s", e.File, e.Msg, e.Fix)
}

// fields parses the items of one file's metadata, keeping the first error.
type fields struct {
	meta table.Meta
	file string
	fix  string
	err  error
}

// newFields starts with the contract check: a file of another contract
// version is refused before any of its items is read.
func newFields(meta table.Meta, file, fix string) *fields {
	return &fields{meta: meta, file: file, fix: fix, err: CheckContract(meta, file)}
}

// failf records an error about key unless one was recorded already.
func (f *fields) failf(key, format string, args ...any) {
	if f.err == nil {
		f.err = &Error{File: f.file, Key: key, Msg: fmt.Sprintf(format, args...), Fix: f.fix}
	}
}

func (f *fields) has(key string) bool {
	_, ok := f.meta[key]
	return ok
}

// str returns a required item.
func (f *fields) str(key string) string {
	s, ok := f.meta[key]
	if !ok {
		f.failf(key, "no %q in the metadata", key)
	}
	return s
}

// nonEmpty returns a required item that must not be empty.
func (f *fields) nonEmpty(key string) string {
	s := f.str(key)
	if f.has(key) && s == "" {
		f.failf(key, "metadata %q is empty", key)
	}
	return s
}

// float returns a required number. NaN and ±Inf parse; the callers' range
// checks refuse them.
func (f *fields) float(key string) float64 {
	s, ok := f.meta[key]
	if !ok {
		f.failf(key, "no %q in the metadata", key)
		return math.NaN()
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		f.failf(key, "metadata %q = %q is not a number", key, s)
		return math.NaN()
	}
	return v
}

// int returns a required integer.
func (f *fields) int(key string) int64 {
	s, ok := f.meta[key]
	if !ok {
		f.failf(key, "no %q in the metadata", key)
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f.failf(key, "metadata %q = %q is not an integer", key, s)
		return 0
	}
	return v
}

// CodebookDigest is "sha256:" and the hex SHA-256 of a codebook item's
// text (table.MetaDigest): what a stage keeps to compare another file's
// item with once it has parsed the text and let it go, and what
// table.ReadOptions.DigestMeta gives for the item.
func CodebookDigest(text string) string { return table.MetaDigest(text) }

// codebook parses the codebook stored in the required item key; nil after
// a failure, which f records.
func (f *fields) codebook(key string) *codebook.Codebook {
	s := f.str(key)
	if f.err != nil {
		return nil
	}
	cb, err := codebook.ParseString(s) // no copy of the text (10 MB at 1M labels)
	if err != nil {
		f.failf(key, "the codebook in the metadata is not valid (%v)", err)
		return nil
	}
	return cb
}

// json decodes a required JSON item into v.
func (f *fields) json(key string, v any) {
	s, ok := f.meta[key]
	if !ok {
		f.failf(key, "no %q in the metadata", key)
		return
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		f.failf(key, "metadata %q is not valid: %v", key, err)
	}
}

// outOfRange records that key's value v breaks the rule want.
func (f *fields) outOfRange(key string, v any, want string) {
	f.failf(key, "metadata %q = %v is out of range: %s", key, v, want)
}

// mismatch records that key's stored value disagrees with the value the
// other items determine; derivation names them and the formula, e.g.
// "γ = 3, n = 100, m = 12 (ε = ln((n + m(γ−1))/n) = 0.215)".
func (f *fields) mismatch(key string, stored float64, derivation string, args ...any) {
	f.failf(key, "metadata %q = %v does not match %s", key, stored, fmt.Sprintf(derivation, args...))
}

// finite reports whether v is a finite number.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// CodebookFileItem is the codebook item of a key file or a decrypted
// table: the codebook's file form (one column per line), for people.
// CodebookItem is a release's, compact: the bytes Meta.SetJSON stores.
// Both are made when the writer writes its metadata (table.Deferred), a
// piece at a time, so that the JSON, 20 MB at 2M labels, is never held
// whole; they hold cb's labels, not its label index (codebook.Unindexed).
func CodebookFileItem(cb *codebook.Codebook) table.Deferred {
	return table.Deferred{Key: KeyCodebook, Write: cb.Unindexed().EmitFileJSON}
}

// CodebookItem: see CodebookFileItem.
func CodebookItem(cb *codebook.Codebook) table.Deferred {
	return table.Deferred{Key: KeyCodebook, Write: cb.Unindexed().EmitCompactJSON}
}
