package codebook

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
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
	if _, err := w.Write(append(cb.appendFile(nil), '\n')); err != nil {
		return fmt.Errorf("codebook.Write: %w", err)
	}
	return nil
}

// MarshalJSON returns the canonical file form (as Write, without the final
// newline), so that a codebook can be embedded in other JSON documents such
// as a CSV file's sidecar.
func (cb *Codebook) MarshalJSON() ([]byte, error) {
	return cb.appendFile(nil), nil
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

// appendFile appends the file form. b first grows to the form's size
// (escapes aside), and a categorical column's labels are written from the
// column itself, not from a Spec's copy of them: a codebook of 1M labels
// had cost a 16 MB []string and 23 MB of append's doubling to write its
// 10 MB (anonymize encodes its release metadata with it between passes).
func (cb *Codebook) appendFile(b []byte) []byte {
	n := 16
	for i := range cb.Columns {
		c := &cb.Columns[i]
		n += 64 + len(c.name) + len(c.labels.text) + 4*c.K() + 24*len(c.cuts)
	}
	b = slices.Grow(b, n)
	b = append(b, `{"columns": [`...)
	for i := range cb.Columns {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n  "...)
		c := &cb.Columns[i]
		if c.cuts == nil {
			b = c.appendCategorical(b)
			continue
		}
		b = appendSpec(b, c.Spec())
	}
	return append(b, "\n]}"...)
}

// appendCategorical appends a categorical column as appendSpec(b, c.Spec())
// does.
func (c *Column) appendCategorical(b []byte) []byte {
	b = append(b, `{"name": `...)
	b = appendString(b, c.name)
	b = append(b, `, "categories": [`...)
	k := c.K()
	tok, hasMissing := c.MissingToken()
	if hasMissing && c.missing == k-1 {
		k-- // Spec leaves a missing token listed last out of the categories
	}
	for i := range k {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendString(b, c.labels.at(i))
	}
	b = append(b, ']')
	if hasMissing {
		b = append(b, `, "missing": `...)
		b = appendString(b, tok)
	}
	return append(b, '}')
}

func appendSpec(b []byte, s Spec) []byte {
	b = append(b, `{"name": `...)
	b = appendString(b, s.Name)
	if s.Categories != nil {
		b = append(b, `, "categories": `...)
		b = appendStrings(b, s.Categories, ", ")
	}
	if s.Cuts != nil {
		b = append(b, `, "cuts": `...)
		b = appendNumbers(b, s.Cuts, ", ")
	}
	if s.Labels != nil {
		b = append(b, `, "labels": `...)
		b = appendStrings(b, s.Labels, ", ")
	}
	if s.Missing != "" {
		b = append(b, `, "missing": `...)
		b = appendString(b, s.Missing)
	}
	return append(b, '}')
}

func appendStrings(b []byte, ss []string, sep string) []byte {
	return appendArray(b, ss, sep, appendString)
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
func appendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			_, size := utf8.DecodeRuneInString(s[i:])
			b = append(b, s[i:i+size]...)
			i += size
			continue
		}
		switch {
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
