package codebook

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// Write writes the codebook in canonical file form, one column per line:
//
//	{"columns": [
//	  {"name": "sex", "categories": ["Female", "Male"]},
//	  {"name": "age", "cuts": [25, 35, 45, 55, 65]}
//	]}
//
// Each column is written as Column.Spec gives it (generated labels left out,
// a missing token listed last left out of the categories). Parse of the
// output gives back an equal codebook, and writing that again gives the same
// bytes.
func (cb *Codebook) Write(w io.Writer) error {
	if _, err := w.Write(append(cb.appendFile(nil, fileForm), '\n')); err != nil {
		return fmt.Errorf("codebook.Write: %w", err)
	}
	return nil
}

// MarshalJSON returns the canonical file form (as Write, without the final
// newline), so that a codebook can be embedded in other JSON documents such
// as a CSV file's sidecar.
func (cb *Codebook) MarshalJSON() ([]byte, error) {
	return cb.appendFile(nil, fileForm), nil
}

// FileJSON is MarshalJSON's bytes as a string, without a copy: the form
// key files and decrypted releases carry in their metadata (a column a
// line, for people). string(MarshalJSON()) held the text twice, 44 MB at
// 2M labels.
func (cb *Codebook) FileJSON() string {
	b := cb.appendFile(nil, fileForm)
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is this call's own
}

// AppendCompactJSON appends what json.Marshal writes for the codebook:
// MarshalJSON's bytes compacted (json.Compact) with '<', '>', '&',
// U+2028 and U+2029 escaped (json.HTMLEscape) — the form of a release's
// metadata item (table.Meta.SetJSON), written in one buffer of about its
// size, where compacting MarshalJSON's output held both (42 MB at 2M
// labels).
func (cb *Codebook) AppendCompactJSON(b []byte) []byte {
	return cb.appendFile(b, compactForm)
}

// CompactJSON is AppendCompactJSON's bytes as a string, without a copy:
// a release's codebook item, as table.Meta.SetJSON stores it.
func (cb *Codebook) CompactJSON() string {
	b := cb.appendFile(nil, compactForm)
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is this call's own
}

// EmitFileJSON gives FileJSON's bytes to emit, and EmitCompactJSON
// CompactJSON's, a piece of about jsonPiece bytes at a time, so that
// what writes them out (a metadata item made at commit, table.Deferred)
// never holds them whole: 20 MB at 2M labels. emit must not keep a
// piece; its error ends the writing and is returned.
func (cb *Codebook) EmitFileJSON(emit func([]byte) error) error {
	return cb.emitJSON(fileForm, emit)
}

// EmitCompactJSON: see EmitFileJSON.
func (cb *Codebook) EmitCompactJSON(emit func([]byte) error) error {
	return cb.emitJSON(compactForm, emit)
}

// jsonPiece is the size of the pieces emitJSON gives (a label may take a
// piece past it).
var jsonPiece = 64 << 10

func (cb *Codebook) emitJSON(f form, emit func([]byte) error) error {
	var err error
	flush := func(b []byte) []byte {
		if err == nil {
			err = emit(b)
		}
		return b[:0]
	}
	b := cb.appendForm(make([]byte, 0, jsonPiece+jsonPiece/4), f, flush)
	if len(b) > 0 {
		flush(b)
	}
	return err
}

// UnmarshalJSON parses data as strictly as Parse does.
func (cb *Codebook) UnmarshalJSON(data []byte) error {
	parsed, err := parse(data)
	if err != nil {
		return fmt.Errorf("codebook.UnmarshalJSON: %w", err)
	}
	*cb = *parsed
	return nil
}

// form is how appendFile writes: the file form, for people (a column a
// line, ", " and ": ", only what JSON requires escaped), or the compact
// form json.Marshal writes (no spaces, HTML characters escaped).
type form bool

const (
	fileForm    form = false
	compactForm form = true
)

// sep is ", " in the file form, "," in the compact one; colon likewise
// ": " and ":".
func (f form) sep() string {
	if f == compactForm {
		return ","
	}
	return ", "
}

func (f form) colon() string {
	if f == compactForm {
		return ":"
	}
	return ": "
}

// appendFile appends the file form, or the compact form. b first grows to
// the form's size (escapes aside), and a categorical column's labels are
// written from the column itself, not from a Spec's copy of them: a
// codebook of 1M labels had cost a 16 MB []string and 23 MB of append's
// doubling to write its 10 MB (anonymize encodes its release metadata
// with it between passes).
func (cb *Codebook) appendFile(b []byte, f form) []byte {
	return cb.appendForm(b, f, nil)
}

// appendForm is appendFile that, given flush, hands b to it whenever it
// holds jsonPiece bytes or more, and goes on in what flush returns.
func (cb *Codebook) appendForm(b []byte, f form, flush func([]byte) []byte) []byte {
	if flush != nil {
		return cb.appendPieces(b, f, flush)
	}
	n := 16
	for i := range cb.Columns {
		c := &cb.Columns[i]
		n += 64 + len(c.name) + len(c.labels.text) + 24*len(c.cuts)
		if f == compactForm {
			n += 3 * c.K()
		} else {
			n += 4 * c.K()
		}
	}
	b = slices.Grow(b, n)
	return cb.appendPieces(b, f, nil)
}

// appendPieces writes the form into b, handing it to flush (if not nil)
// as appendForm says.
func (cb *Codebook) appendPieces(b []byte, f form, flush func([]byte) []byte) []byte {
	b = append(b, `{"columns"`+f.colon()+`[`...)
	for i := range cb.Columns {
		if i > 0 {
			b = append(b, ',')
		}
		if f == fileForm {
			b = append(b, "\n  "...)
		}
		c := &cb.Columns[i]
		if c.cuts == nil {
			b = c.appendCategorical(b, f, flush)
			continue
		}
		b = appendSpec(b, c.Spec(), f)
	}
	if f == fileForm {
		b = append(b, '\n')
	}
	return append(b, "]}"...)
}

// appendCategorical appends a categorical column as appendSpec(b, c.Spec(), f)
// does, handing b to flush (if not nil) as appendForm says.
func (c *Column) appendCategorical(b []byte, f form, flush func([]byte) []byte) []byte {
	b = append(b, `{"name"`+f.colon()...)
	b = appendJSONString(b, c.name, f)
	b = append(b, f.sep()+`"categories"`+f.colon()+`[`...)
	k := c.K()
	tok, hasMissing := c.MissingToken()
	if hasMissing && c.missing == k-1 {
		k-- // Spec leaves a missing token listed last out of the categories
	}
	for i := range k {
		if i > 0 {
			b = append(b, f.sep()...)
		}
		b = appendJSONString(b, c.labels.at(i), f)
		if flush != nil && len(b) >= jsonPiece {
			b = flush(b)
		}
	}
	b = append(b, ']')
	if hasMissing {
		b = append(b, f.sep()+`"missing"`+f.colon()...)
		b = appendJSONString(b, tok, f)
	}
	return append(b, '}')
}

func appendSpec(b []byte, s Spec, f form) []byte {
	b = append(b, `{"name"`+f.colon()...)
	b = appendJSONString(b, s.Name, f)
	str := func(b []byte, x string) []byte { return appendJSONString(b, x, f) }
	if s.Categories != nil {
		b = append(b, f.sep()+`"categories"`+f.colon()...)
		b = appendArray(b, s.Categories, f.sep(), str)
	}
	if s.Cuts != nil {
		b = append(b, f.sep()+`"cuts"`+f.colon()...)
		b = appendNumbers(b, s.Cuts, f.sep())
	}
	if s.Labels != nil {
		b = append(b, f.sep()+`"labels"`+f.colon()...)
		b = appendArray(b, s.Labels, f.sep(), str)
	}
	if s.Missing != "" {
		b = append(b, f.sep()+`"missing"`+f.colon()...)
		b = appendJSONString(b, s.Missing, f)
	}
	return append(b, '}')
}

func appendNumbers(b []byte, xs []float64, sep string) []byte {
	return appendArray(b, xs, sep, appendNumber)
}

// appendArray appends xs as a JSON array, each item by item, sep between.
func appendArray[T any](b []byte, xs []T, sep string, item func([]byte, T) []byte) []byte {
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, sep...)
		}
		b = item(b, x)
	}
	return append(b, ']')
}

// appendString writes s (valid UTF-8, as NewColumn guarantees) as a JSON
// string. Only '"', '\\' and control characters are escaped — unlike
// encoding/json, which also escapes '<', '>' and '&' and would write the
// Adult label "<=50K" as "\u003c=50K" in a file meant for people.
func appendString(b []byte, s string) []byte { return appendJSONString(b, s, fileForm) }

// appendJSONString is appendString, which in the compact form also
// escapes '<', '>', '&', U+2028 and U+2029 as json.HTMLEscape does.
func appendJSONString(b []byte, s string, f form) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if f == compactForm && (r == '\u2028' || r == '\u2029') {
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch {
		case f == compactForm && (c == '<' || c == '>' || c == '&'):
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20 || c == 0x7f:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, '"')
}

// appendNumber writes a finite x in the shortest form that reads back
// exactly, without an exponent for 1e-6 ≤ |x| < 1e21 (as encoding/json does),
// so that cuts such as 1000000 stay readable.
func appendNumber(b []byte, x float64) []byte {
	format := byte('f')
	if a := math.Abs(x); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, x, format, -1, 64)
	if format == 'e' {
		// 1e-07 → 1e-7, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

func formatNumber(x float64) string { return string(appendNumber(nil, x)) }
