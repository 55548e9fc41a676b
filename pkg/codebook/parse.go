package codebook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Parse reads a codebook file's contents (format in the package
// documentation). It is strict: anything it does not understand is an error
// naming the column and the fix, because a codebook that silently differs
// between parties makes their indices disagree.
func Parse(data []byte) (*Codebook, error) {
	cb, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("codebook.Parse: %w", err)
	}
	return cb, nil
}

// ParseString is Parse of a codebook held as a string — a key file's or a
// release's metadata item — without first copying it to a []byte (10 MB
// at 1M labels, live with the text and the labels being parsed: issue 11,
// peak RSS ≤ 100 MB per stage). The parser only reads the bytes, and
// keeps none of them: labels and error texts are copies.
func ParseString(text string) (*Codebook, error) {
	return Parse(unsafe.Slice(unsafe.StringData(text), len(text)))
}

// Load reads and parses the codebook file at path.
func Load(path string) (*Codebook, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("codebook.Load: %w", err)
	}
	cb, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("codebook.Load: %s: %w", path, err)
	}
	return cb, nil
}

func parse(data []byte) (*Codebook, error) { return parseWith(data, false) }

// parseWith is parse, with the decoder reading every list when slow.
func parseWith(data []byte, slow bool) (*Codebook, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf(`the codebook is empty; write {"columns": [{"name": ..., "categories": [...]}, ...]}`)
	}
	p := &parser{data: data, dec: json.NewDecoder(bytes.NewReader(data)), slow: slow}
	p.dec.UseNumber()
	specs, err := p.file()
	if err != nil {
		return nil, err
	}
	// From here on nothing holds data: the specs' labels are copies. A
	// caller that let go of its own reference first (decrypt takes a key
	// file's item out of the reader's Meta before parsing it) lets the
	// collector free the text before the label tables below are built:
	// at 4M labels a 45 MB item, 46 MB of labels and a 23 MB table were
	// live at once, 157 MB of peak RSS; 127 MB without the item.
	if afterScan != nil {
		afterScan()
	}
	cb := &Codebook{Columns: make([]Column, len(specs))}
	for i, s := range specs {
		c, err := newColumn(s)
		if err != nil {
			return nil, fmt.Errorf("column %q (#%d): %w", s.Name, i+1, err)
		}
		cb.Columns[i] = c
	}
	if err := checkColumns(cb.Columns); err != nil {
		return nil, err
	}
	return cb, nil
}

// afterScan, when set (by tests), runs once the text is parsed and
// before the columns are built.
var afterScan func()

// parser reads the file token by token rather than with json.Unmarshal,
// which would accept keys in any letter case, let a repeated key override
// the first, and turn null into "" or 0 without a word.
type parser struct {
	data []byte
	dec  *json.Decoder
	base int64 // the offset in data of dec's input offset 0 (resume)
	slow bool  // no plainStrings fast path (tests compare the two)
}

// offset is the decoder's input offset in data.
func (p *parser) offset() int64 { return p.base + p.dec.InputOffset() }

var columnKeys = []string{"name", "categories", "cuts", "labels", "missing"}

func (p *parser) file() ([]Spec, error) {
	if err := p.delim('{', `a codebook file is a JSON object {"columns": [...]}`); err != nil {
		return nil, err
	}
	var specs []Spec
	seenColumns := false
	for p.dec.More() {
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		if key != "columns" {
			return nil, p.errorf(`unknown key %q at the top level; the only key is "columns"`, key)
		}
		if seenColumns {
			return nil, p.errorf(`key "columns" appears twice; merge the lists`)
		}
		seenColumns = true
		if err := p.delim('[', `"columns" must be a list of column objects`); err != nil {
			return nil, err
		}
		for p.dec.More() {
			s, err := p.column(len(specs) + 1)
			if err != nil {
				return nil, err
			}
			specs = append(specs, s)
		}
		if err := p.delim(']', ""); err != nil {
			return nil, err
		}
	}
	if err := p.delim('}', ""); err != nil {
		return nil, err
	}
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, p.errorf("unexpected data after the codebook object; a file holds one codebook")
	}
	if !seenColumns {
		return nil, fmt.Errorf(`no "columns" key; write {"columns": [{"name": ..., "categories": [...]}, ...]}`)
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf(`"columns" is empty; a codebook needs at least one column`)
	}
	return specs, nil
}

// column reads the column object number nth (from 1).
func (p *parser) column(nth int) (Spec, error) {
	var s Spec
	where := fmt.Sprintf("column #%d", nth)
	if err := p.delim('{', where+` must be an object {"name": ..., "categories": [...]}`); err != nil {
		return s, err
	}
	seen := make(map[string]bool, len(columnKeys))
	for p.dec.More() {
		key, err := p.key()
		if err != nil {
			return s, err
		}
		known := false
		for _, k := range columnKeys {
			known = known || k == key
		}
		if !known {
			return s, p.errorf("%s: unknown key %q (known: %s; keys are case-sensitive)", where, key, strings.Join(columnKeys, ", "))
		}
		if seen[key] {
			return s, p.errorf("%s: key %q appears twice; keep one", where, key)
		}
		seen[key] = true
		field := fmt.Sprintf("%s: %q", where, key)
		switch key {
		case "name":
			s.Name, err = p.str(field)
			if err == nil {
				where = fmt.Sprintf("column %q (#%d)", s.Name, nth)
			}
		case "categories":
			s.categories, err = p.labels(field)
		case "labels":
			s.Labels, err = p.strs(field)
		case "cuts":
			s.Cuts, err = p.nums(field)
		case "missing":
			s.Missing, err = p.str(field)
			if err == nil && s.Missing == "" {
				err = p.errorf(`%s: "missing" is empty; empty cells are always missing, give a visible token such as "?" or "NA" (or remove the key if the column has no missing values)`, where)
			}
		}
		if err != nil {
			return s, err
		}
	}
	return s, p.delim('}', "")
}

func (p *parser) token() (json.Token, error) {
	tok, err := p.dec.Token()
	if err == nil {
		return tok, nil
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		// Not se.Offset: a value's syntax error counts the bytes of
		// every value the decoder has read (strings too), not the
		// input's, so it named a place before the error. The input
		// offset is where the bad token or value starts.
		return nil, fmt.Errorf("invalid JSON at %s: %s", p.position(p.offset()), se.Error())
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("the JSON ends early, at %s; an object or list is not closed", p.position(int64(len(p.data))))
	}
	return nil, fmt.Errorf("invalid JSON at %s: %w", p.position(p.offset()), err)
}

func (p *parser) delim(want json.Delim, hint string) error {
	tok, err := p.token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); ok && d == want {
		return nil
	}
	if hint == "" {
		hint = fmt.Sprintf("want %q", want.String())
	}
	return p.errorf("%s, got %s", hint, describe(tok))
}

func (p *parser) key() (string, error) {
	tok, err := p.token()
	if err != nil {
		return "", err
	}
	// Inside an object the decoder only returns strings as keys.
	return tok.(string), nil
}

func (p *parser) str(field string) (string, error) {
	tok, err := p.token()
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", p.errorf("%s must be a string, got %s", field, describe(tok))
	}
	return s, nil
}

// strs reads a list of strings; an empty list gives a non-nil empty slice so
// that "categories": [] is reported as empty rather than as absent.
func (p *parser) strs(field string) ([]string, error) {
	var out []string
	err := p.eachString(field, func(n, _ int) { out = make([]string, 0, n) }, func(s string) int {
		out = append(out, strings.Clone(s)) // a plain string is data's bytes
		return len(out)
	})
	return out, err
}

// labels reads a list of strings into a labelBuilder, as strs does into
// a []string: the categories of a column, stored as they are decoded
// (labelBuilder says why).
func (p *parser) labels(field string) (*labelBuilder, error) {
	b := new(labelBuilder)
	err := p.eachString(field, b.grow, func(s string) int {
		b.add(s)
		return b.len()
	})
	return b, err
}

// eachString reads a list of strings: start gets its length and string
// bytes ahead (items), add each string in turn and returns how many it
// holds (for errors). The strings add gets may be data's own bytes.
func (p *parser) eachString(field string, start func(n, strBytes int), add func(string) int) error {
	if err := p.delim('[', field+" must be a list of strings"); err != nil {
		return err
	}
	if !p.slow {
		at := p.offset()
		if n, strBytes, end, ok := plainStrings(p.data[at:]); ok {
			start(n, strBytes)
			eachPlainString(p.data[at:at+int64(end)], func(s []byte) { add(unsafe.String(unsafe.SliceData(s), len(s))) })
			return p.resume(at + int64(end) + 1)
		}
	}
	start(p.items())
	held := 0
	for p.dec.More() {
		tok, err := p.token()
		if err != nil {
			return err
		}
		s, ok := tok.(string)
		if !ok {
			return p.errorf("%s must be a list of strings, but item #%d is %s", field, held+1, describe(tok))
		}
		held = add(s)
	}
	return p.delim(']', "")
}

// items counts the items of the JSON array whose '[' the decoder has just
// read, by its commas outside strings and nested values, and the bytes
// inside its strings (escapes as written, so at least their decoded
// size): capacities for strs and labels, so that a list of 1M categories
// is not grown by appends, each a fresh allocation and a copy (a third of
// loading such a codebook, most of it page faults). Only a hint: a
// malformed list is the decoder's to report.
func (p *parser) items() (n, strBytes int) {
	data := p.data[min(int(p.offset()), len(p.data)):]
	depth, inStr, esc, any := 0, false, false, false
	for _, c := range data {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
				strBytes-- // (counted below)
			}
			strBytes++
		case c == '"':
			inStr, any = true, true
		case c == '[' || c == '{':
			depth, any = depth+1, true
		case c == ']' || c == '}':
			if depth == 0 {
				if any {
					n++
				}
				return n, strBytes
			}
			depth--
		case c == ',' && depth == 0:
			n++
		case c > ' ':
			any = true
		}
	}
	return 0, 0
}

// plainStrings reports whether data, which follows a list's '[', is a
// list of plain strings up to its ']' (at data[end]): no escapes, no
// control characters, valid UTF-8, so that each decodes to its own bytes;
// n is their number and strBytes their bytes. Anything else (and a
// malformed list) is left to the decoder, which names the error. A
// codebook's categories are plain strings, and decoding them token by
// token took half of loading 4M labels (1 of 2 s).
func plainStrings(data []byte) (n, strBytes, end int, ok bool) {
	i := skipSpace(data, 0)
	if i < len(data) && data[i] == ']' {
		return 0, 0, i, true
	}
	for i < len(data) && data[i] == '"' {
		j, ascii := i+1, true
		for ; j < len(data); j++ {
			c := data[j]
			if c == '"' || c == '\\' || c < ' ' {
				break
			}
			ascii = ascii && c < utf8.RuneSelf
		}
		if j == len(data) || data[j] != '"' || (!ascii && !utf8.Valid(data[i+1:j])) {
			return 0, 0, 0, false
		}
		n, strBytes = n+1, strBytes+j-i-1
		switch i = skipSpace(data, j+1); {
		case i < len(data) && data[i] == ']':
			return n, strBytes, i, true
		case i < len(data) && data[i] == ',':
			i = skipSpace(data, i+1)
		default:
			return 0, 0, 0, false
		}
	}
	return 0, 0, 0, false
}

// eachPlainString calls f with each string of list, a list of plain
// strings without its brackets (plainStrings).
func eachPlainString(list []byte, f func([]byte)) {
	for {
		i := bytes.IndexByte(list, '"')
		if i < 0 {
			return
		}
		j := bytes.IndexByte(list[i+1:], '"')
		f(list[i+1 : i+1+j])
		list = list[i+1+j+1:]
	}
}

// skipSpace returns the position of the first byte of data from i on
// that is not JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\t' || data[i] == '\r') {
		i++
	}
	return i
}

// resumePrefix takes a fresh decoder to where the decoder is after a
// column's list: inside the file object, its "columns" list and a column
// object, after a key's value (eachString reads only such lists). The
// value is a string, which ends at its quote: a number would take the
// bytes after it as more digits ("0" then ".5").
const resumePrefix = `{"c":[{"x":""`

// resume continues parsing at data[at], the byte after a list that
// plainStrings read instead of the decoder: a new decoder reads
// resumePrefix, then data[at:], and p.base maps its offsets to data's.
func (p *parser) resume(at int64) error {
	dec := json.NewDecoder(io.MultiReader(strings.NewReader(resumePrefix), bytes.NewReader(p.data[at:])))
	dec.UseNumber()
	for range 6 { // { "c" [ { "x" ""
		if _, err := dec.Token(); err != nil {
			return fmt.Errorf("codebook: resuming the parse: %w", err) // cannot happen
		}
	}
	p.dec, p.base = dec, at-int64(len(resumePrefix))
	return nil
}

func (p *parser) nums(field string) ([]float64, error) {
	if err := p.delim('[', field+" must be a list of numbers"); err != nil {
		return nil, err
	}
	out := []float64{}
	for p.dec.More() {
		tok, err := p.token()
		if err != nil {
			return nil, err
		}
		n, ok := tok.(json.Number)
		if !ok {
			return nil, p.errorf("%s must be a list of numbers, but item #%d is %s", field, len(out)+1, describe(tok))
		}
		x, err := strconv.ParseFloat(string(n), 64)
		if err != nil || math.IsInf(x, 0) {
			return nil, p.errorf("%s: item #%d (%s) is out of the float64 range", field, len(out)+1, n)
		}
		out = append(out, x)
	}
	return out, p.delim(']', "")
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s", p.position(p.offset()), fmt.Sprintf(format, args...))
}

// position turns a byte offset into "line L, column C" (both from 1).
func (p *parser) position(off int64) string {
	off = max(0, min(off, int64(len(p.data))))
	before := p.data[:off]
	line := 1 + bytes.Count(before, []byte{'\n'})
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}

func describe(tok json.Token) string {
	switch t := tok.(type) {
	case nil:
		return "null"
	case json.Delim:
		switch t {
		case '{', '}':
			return "an object"
		default:
			return "a list"
		}
	case string:
		return fmt.Sprintf("the string %q", t)
	case json.Number:
		return "the number " + t.String()
	case bool:
		return fmt.Sprintf("%t", t)
	}
	return fmt.Sprintf("%v", tok)
}
