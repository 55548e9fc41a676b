package table

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// decodeSidecarJSON decodes a sidecar (or a "#pramkit" line) into s as
// json.Unmarshal(b, s) does: the same items, the same errors. Valid JSON of
// the sidecar's usual shape — an object of "pramkit", "meta" (string
// items) and "data", each at most once, with strings of valid UTF-8 and no
// \u escape of a surrogate — is decoded here; anything else is left to
// json.Unmarshal, for its result and its error.
//
// Why: a release's metadata holds its codebook, ~10 MB of JSON inside a
// JSON string at 1M labels, and json.Unmarshal holds three copies of it at
// once to decode it (the file's bytes, the unquoted bytes, the string made
// from them): ~34 MB, on top of a stage's codebook already parsed from
// the release's other file (report and estimate read an Anatomy release's
// two tables; issue 11, peak RSS ≤ 100 MB). Here each string is unquoted
// once into memory of its exact size, which becomes the string.
func decodeSidecarJSON(b []byte, s *sidecar) error {
	return decodeSidecarBytes(b, s, 0)
}

// decodeSidecarOwned is decodeSidecarJSON of bytes the caller gives up (a
// sidecar file read whole): an item value of at least inPlaceBytes is
// unquoted in place, into b's own memory, which the string then shares —
// b must not be used again. A CSV release's sidecar at 2M labels is 24 MB
// holding a 20 MB codebook: read and decoded into memory of its own, both
// were live at once, on top of the codebook another table of the release
// had parsed (estimate --query and report --queries of an Anatomy
// release peaked at 123 and 129 MB). The whole buffer stays live while
// the string does (4 MB more than the string, there).
func decodeSidecarOwned(b []byte, s *sidecar) error {
	return decodeSidecarBytes(b, s, inPlaceBytes)
}

// inPlaceBytes is the length of an item's quoted value from which
// decodeSidecarOwned unquotes it in place.
const inPlaceBytes = 1 << 20

// decodeSidecarBytes is decodeSidecarJSON that unquotes item values of at
// least inPlace bytes (quoted) in place; 0: none.
func decodeSidecarBytes(b []byte, s *sidecar, inPlace int) error {
	if !json.Valid(b) || !decodeSidecarFastIn(b, s, inPlace) {
		*s = sidecar{}
		return json.Unmarshal(b, s)
	}
	return nil
}

// decodeSidecarFast decodes valid JSON b into s, and reports false (s
// half-filled) for what it leaves to json.Unmarshal.
func decodeSidecarFast(b []byte, s *sidecar) bool { return decodeSidecarFastIn(b, s, 0) }

// decodeSidecarFastIn is decodeSidecarFast that unquotes item values of
// at least inPlace bytes in place (0: none) — only once the whole sidecar
// has decoded, so that b is intact for json.Unmarshal whenever the fast
// path gives up.
func decodeSidecarFastIn(b []byte, s *sidecar, inPlace int) bool {
	d := jsonBytes{b: b, inPlaceMin: inPlace}
	if !d.sidecar(s) {
		return false
	}
	for _, p := range d.inPlace {
		raw := b[p.start:p.end]
		out := appendUnquoted(raw[:0], raw) // writes never pass reads: see appendUnquoted
		s.Meta[p.key] = unsafe.String(unsafe.SliceData(out), len(out))
	}
	return true
}

// sidecar decodes the whole sidecar into s.
func (d *jsonBytes) sidecar(s *sidecar) bool {
	if d.next() != '{' {
		return false
	}
	d.i++
	var seen [3]bool
	for d.next() != '}' {
		key, ok := d.str()
		if !ok || !isASCII(key) {
			return false // a name json.Unmarshal may fold its own way
		}
		d.colon()
		field := -1
		for k, name := range [...]string{"pramkit", "meta", "data"} {
			// encoding/json matches a field name without regard to case.
			if strings.EqualFold(key, name) {
				field = k
			}
		}
		if field >= 0 {
			if seen[field] {
				return false // json.Unmarshal merges repeated items
			}
			seen[field] = true
		}
		switch field {
		case 0:
			n, ok := d.int()
			if !ok {
				return false
			}
			s.Pramkit = int(n)
		case 1:
			if !d.meta(s) {
				return false
			}
		case 2:
			if !d.digest(s) {
				return false
			}
		default:
			d.skip()
		}
		d.comma()
	}
	return true
}

// jsonBytes reads valid JSON: b is known to be valid (json.Valid), so a
// value's end is found without checking its syntax again.
type jsonBytes struct {
	b []byte
	i int
	// Item values of at least inPlaceMin bytes (0: none) are left in b,
	// where inPlace records them, to be unquoted there
	// (decodeSidecarOwned).
	inPlaceMin int
	inPlace    []inPlaceItem
}

// inPlaceItem is an item whose quoted value is b[start:end].
type inPlaceItem struct {
	key        string
	start, end int
}

// next skips white space and returns the next byte (0 at the end).
func (d *jsonBytes) next() byte {
	for d.i < len(d.b) {
		switch c := d.b[d.i]; c {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return c
		}
	}
	return 0
}

func (d *jsonBytes) colon() { d.next(); d.i++ }

// comma skips the comma after a member, if there is one.
func (d *jsonBytes) comma() {
	if d.next() == ',' {
		d.i++
	}
}

// null reads a null, if that is what comes next.
func (d *jsonBytes) null() bool {
	if d.next() == 'n' {
		d.i += len("null")
		return true
	}
	return false
}

// str reads a string, unquoted into memory of its exact size; false for
// what json.Unmarshal decodes differently (invalid UTF-8, an escaped
// surrogate) or a value that is not a string.
func (d *jsonBytes) str() (string, bool) {
	start, end, n, ok := d.scanString()
	if !ok {
		return "", false
	}
	return d.unquote(start, end, n), true
}

// scanString reads a string: its content is b[start:end], n bytes once
// unquoted; false for what json.Unmarshal decodes differently (invalid
// UTF-8, an escaped surrogate) or a value that is not a string.
func (d *jsonBytes) scanString() (start, end, n int, ok bool) {
	if d.next() != '"' {
		return 0, 0, 0, false
	}
	start = d.i + 1
	end = start // the closing quote
	for end < len(d.b) && d.b[end] != '"' {
		if d.b[end] != '\\' {
			n, end = n+1, end+1
			continue
		}
		if d.b[end+1] != 'u' {
			n, end = n+1, end+2
			continue
		}
		r, err := strconv.ParseUint(string(d.b[end+2:end+6]), 16, 32)
		if err != nil || r >= 0xd800 && r < 0xe000 {
			return 0, 0, 0, false
		}
		n, end = n+utf8.RuneLen(rune(r)), end+6
	}
	d.i = end + 1
	return start, end, n, utf8.Valid(d.b[start:end])
}

// unquote is the string scanString found, in memory of its exact size.
func (d *jsonBytes) unquote(start, end, n int) string {
	raw := d.b[start:end]
	if n == len(raw) {
		return string(raw)
	}
	out := appendUnquoted(make([]byte, 0, n), raw)
	return unsafe.String(unsafe.SliceData(out), len(out))
}

// appendUnquoted appends to out the unquoted bytes of raw, a JSON string's
// content without its quotes, known to be valid. out may be raw[:0]: each
// byte is written at or before where it was read, an escape's bytes only
// after all of them were read (\uXXXX, six bytes, gives at most three),
// so it unquotes in place.
func appendUnquoted(out, raw []byte) []byte {
	for k := 0; k < len(raw); k++ {
		c := raw[k]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		k++
		switch raw[k] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, _ := strconv.ParseUint(string(raw[k+1:k+5]), 16, 32)
			out = utf8.AppendRune(out, rune(r))
			k += 4
		default: // " \ /
			out = append(out, raw[k])
		}
	}
	return out
}

// int reads an integer number; false for another value (a fraction, an
// exponent, a string: json.Unmarshal's errors).
func (d *jsonBytes) int() (int64, bool) {
	d.next()
	start := d.i
	for d.i < len(d.b) && strings.IndexByte("+-0123456789.eE", d.b[d.i]) >= 0 {
		d.i++
	}
	n, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 64)
	return n, err == nil && d.i > start
}

// meta reads the items: an object of strings, or null.
func (d *jsonBytes) meta(s *sidecar) bool {
	if d.null() {
		s.Meta = nil
		return true
	}
	if d.next() != '{' {
		return false
	}
	d.i++
	s.Meta = Meta{}
	for d.next() != '}' {
		k, ok := d.str()
		if !ok {
			return false
		}
		d.colon()
		if _, dup := s.Meta[k]; dup {
			return false
		}
		start, end, n, ok := d.scanString()
		switch {
		case !ok:
			return false // null, a number…: json.Unmarshal's business
		case d.inPlaceMin > 0 && end-start >= d.inPlaceMin:
			s.Meta[k] = "" // unquoted in place once the whole sidecar decoded
			d.inPlace = append(d.inPlace, inPlaceItem{k, start, end})
		default:
			s.Meta[k] = d.unquote(start, end, n)
		}
		d.comma()
	}
	d.i++
	return true
}

// digest reads the data file's size and SHA-256, or null.
func (d *jsonBytes) digest(s *sidecar) bool {
	if d.null() {
		s.Data = nil
		return true
	}
	if d.next() != '{' {
		return false
	}
	d.i++
	s.Data = &dataDigest{}
	var seen [2]bool
	for d.next() != '}' {
		k, ok := d.str()
		if !ok || !isASCII(k) {
			return false
		}
		d.colon()
		switch {
		case strings.EqualFold(k, "bytes") && !seen[0]:
			seen[0] = true
			if s.Data.Bytes, ok = d.int(); !ok {
				return false
			}
		case strings.EqualFold(k, "sha256") && !seen[1]:
			seen[1] = true
			if s.Data.SHA256, ok = d.str(); !ok {
				return false
			}
		case strings.EqualFold(k, "bytes"), strings.EqualFold(k, "sha256"):
			return false
		default:
			d.skip()
		}
		d.comma()
	}
	d.i++
	return true
}

// skip skips a value.
func (d *jsonBytes) skip() {
	depth := 0
	for {
		switch c := d.next(); c {
		case '"':
			d.i++
			for d.b[d.i] != '"' {
				if d.b[d.i] == '\\' {
					d.i++
				}
				d.i++
			}
			d.i++
		case '{', '[':
			depth++
			d.i++
		case '}', ']':
			depth--
			d.i++
		case ',', ':':
			d.i++
			continue
		default: // a number, true, false, null
			for d.i < len(d.b) && strings.IndexByte(" \t\n\r,:]}", d.b[d.i]) < 0 {
				d.i++
			}
		}
		if depth == 0 {
			return
		}
	}
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
