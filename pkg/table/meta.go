package table

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// MetaPrefix starts every pramkit key in a schema's key-value metadata, so
// our keys never collide with those of other tools (pandas, Spark…).
const MetaPrefix = "pramkit."

// Meta is the metadata a later stage needs: codebook hash, n, m, γ, ε,
// mechanism, sample fingerprint, tool version… Keys are given without
// MetaPrefix; values are strings (numbers in Go's shortest round-trip form,
// structures as JSON).
type Meta map[string]string

// Clone returns a copy that can be changed without touching m.
func (m Meta) Clone() Meta {
	if m == nil {
		return Meta{}
	}
	return maps.Clone(m)
}

// SetInt stores an integer.
func (m Meta) SetInt(key string, v int64) { m[key] = strconv.FormatInt(v, 10) }

// SetFloat stores a float so that it parses back to the same float64.
func (m Meta) SetFloat(key string, v float64) { m[key] = strconv.FormatFloat(v, 'g', -1, 64) }

// SetJSON stores v as JSON, as json.Marshal writes it.
func (m Meta) SetJSON(key string, v any) error {
	if j, ok := v.(json.Marshaler); ok {
		s, err := marshalerJSON(j)
		if err != nil {
			return fmt.Errorf("table.Meta.SetJSON %s: %w", key, err)
		}
		m[key] = s
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("table.Meta.SetJSON %s: %w", key, err)
	}
	m[key] = string(b)
	return nil
}

// compactMarshaler is a json.Marshaler that writes json.Marshal's bytes
// for itself (compact, HTML characters escaped) in a buffer of its own
// size: codebook.Codebook, whose compacted MarshalJSON held two copies of
// a release's codebook (42 MB at 2M labels).
type compactMarshaler interface {
	AppendCompactJSON(b []byte) []byte
}

// marshalerJSON is json.Marshal(j) as a string, with one copy of j's
// output instead of json.Marshal's three (its buffer, grown by doubling,
// its result, then the string): a release's embedded codebook of 1M
// labels is 10 MB. json.Marshal compacts a Marshaler's output and escapes
// '<', '>', '&', U+2028 and U+2029 in it (escapeHTML); so does this.
func marshalerJSON(j json.Marshaler) (string, error) {
	if c, ok := j.(compactMarshaler); ok {
		b := c.AppendCompactJSON(nil)
		if len(b) == 0 {
			return "", nil
		}
		return unsafe.String(&b[0], len(b)), nil
	}
	src, err := j.MarshalJSON()
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	buf.Grow(len(src))
	if err := json.Compact(&buf, src); err != nil {
		return "", err
	}
	if bytes.ContainsAny(buf.Bytes(), "<>&\u2028\u2029") {
		src = slices.Clone(buf.Bytes())
		buf.Reset()
		json.HTMLEscape(&buf, src)
	}
	b := buf.Bytes()
	if len(b) == 0 {
		return "", nil
	}
	// buf is this function's own and is not used again: its bytes are
	// the string's.
	return unsafe.String(&b[0], len(b)), nil
}

// MissingError says that a stage needs a metadata item the input lacks, and
// which flag supplies it.
type MissingError struct {
	Key  string
	Flag string // the flag that supplies the value, "" when none does
}

func (e *MissingError) Error() string {
	if e.Flag == "" {
		return fmt.Sprintf("no %q in the metadata: the file was not written by the pramkit stage that sets it", e.Key)
	}
	return fmt.Sprintf("no %q in the metadata: pass %s", e.Key, e.Flag)
}

// Int reads an integer; flag names the flag that can supply it when absent.
func (m Meta) Int(key, flag string) (int64, error) {
	s, ok := m[key]
	if !ok {
		return 0, &MissingError{key, flag}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("metadata %q = %s is not an integer", key, QuoteCell(s))
	}
	return v, nil
}

// Float reads a float; flag names the flag that can supply it when absent.
func (m Meta) Float(key, flag string) (float64, error) {
	s, ok := m[key]
	if !ok {
		return 0, &MissingError{key, flag}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("metadata %q = %s is not a number", key, QuoteCell(s))
	}
	return v, nil
}

// String reads a string; flag names the flag that can supply it when absent.
func (m Meta) String(key, flag string) (string, error) {
	s, ok := m[key]
	if !ok {
		return "", &MissingError{key, flag}
	}
	return s, nil
}

// JSON decodes a JSON value into v.
func (m Meta) JSON(key, flag string, v any) error {
	s, ok := m[key]
	if !ok {
		return &MissingError{key, flag}
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("metadata %q is not valid: %v", key, err)
	}
	return nil
}

// metaKey returns the Meta key of metadata key k, if k is a pramkit key.
func metaKey(k string) (string, bool) {
	if len(k) > len(MetaPrefix) && k[:len(MetaPrefix)] == MetaPrefix {
		return k[len(MetaPrefix):], true
	}
	return "", false
}

// metaFromSchema extracts the pramkit keys of a schema's metadata.
func metaFromSchema(s *arrow.Schema) Meta {
	m := Meta{}
	md := s.Metadata()
	for i, k := range md.Keys() {
		if key, ok := metaKey(k); ok {
			m[key] = md.Values()[i]
		}
	}
	return m
}

// metaOfParquet extracts the pramkit keys of a Parquet file's key-value
// metadata, where they always are (fileKeyValues; pyarrow and DuckDB read
// them there too), or of its Arrow schema if the file has none there. A
// file's stored Arrow schema (ARROW:schema) carries them too only while
// they are small (storedSchemaMeta).
func metaOfParquet(kv metadata.KeyValueMetadata, s *arrow.Schema) Meta {
	m := Meta{}
	for _, e := range kv {
		if key, ok := metaKey(e.GetKey()); ok && e.Value != nil {
			m[key] = *e.Value
		}
	}
	if len(m) == 0 {
		return metaFromSchema(s)
	}
	return m
}

// withMeta returns schema s carrying meta (replacing pramkit keys it had and
// keeping other tools' keys).
func withMeta(s *arrow.Schema, meta Meta) *arrow.Schema {
	var keys, vals []string
	md := s.Metadata()
	for i, k := range md.Keys() {
		if len(k) < len(MetaPrefix) || k[:len(MetaPrefix)] != MetaPrefix {
			keys = append(keys, k)
			vals = append(vals, md.Values()[i])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		keys = append(keys, MetaPrefix+k)
		vals = append(vals, meta[k])
	}
	md2 := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(s.Fields(), &md2)
}

// sidecarPath is where a CSV file's metadata lives.
func sidecarPath(csvPath string) string { return csvPath + sidecarSuffix }

// sidecarSuffix ends the name of a CSV file's metadata sidecar.
const sidecarSuffix = ".meta.json"

// sidecar is the JSON layout of a metadata sidecar and of the "#pramkit"
// line: a version tag so the layout can change later, the items, and, in a
// sidecar file only, what binds it to its data file.
type sidecar struct {
	Pramkit int         `json:"pramkit"`
	Meta    Meta        `json:"meta"`
	Data    *dataDigest `json:"data,omitempty"`
}

// dataDigest identifies the exact bytes of the CSV file a sidecar describes.
// A CSV and its sidecar are two files, renamed into place one after the
// other; a crash between the renames, two runs writing the same -o, or a
// copy of one file without the other would otherwise pair rows with the
// metadata of another run, which later stages trust (n, m, γ, the sample
// fingerprint). Readers check the size on open and the SHA-256 at the end
// of the stream, so a mismatched pair is never accepted. The data file's
// name is not recorded: renaming both files together keeps them valid.
type dataDigest struct {
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

func encodeSidecar(m Meta) ([]byte, error) {
	return json.Marshal(sidecar{Pramkit: 1, Meta: m})
}

// writeBoundSidecar writes a sidecar file's content, the metadata and the
// digest of the data file it describes, to w: the bytes of
// json.Marshal(sidecar{Pramkit: 1, Meta: m, Data: &d}) and a newline,
// written a piece at a time. json.Marshal builds the whole file in a
// buffer grown by doubling and then copies it: ~25 MB live at once for
// decrypt's sidecar, whose codebook of 1M labels is 10 MB of JSON inside
// a JSON string (issue 11: peak RSS ≤ 100 MB per stage). Every string is
// escaped by json.Marshal itself, in pieces cut between two of the runes
// it decodes (pieceWriter.string), so the bytes are the same.
//
// The items of later, whose keys m does not have, are written in their
// places among m's, from their Deferred a piece at a time.
func writeBoundSidecar(w io.Writer, m Meta, later []Deferred, d dataDigest) error {
	dj, err := json.Marshal(&d)
	if err != nil {
		return err
	}
	p := &pieceWriter{w: w, b: make([]byte, 0, 2*sidecarPiece)}
	p.b = append(p.b, `{"pramkit":1,"meta":`...)
	if m == nil && len(later) == 0 {
		p.b = append(p.b, "null"...)
	} else {
		made := make(map[string]Deferred, len(later))
		keys := slices.Collect(maps.Keys(m))
		for _, item := range later {
			made[item.Key] = item
			keys = append(keys, item.Key)
		}
		slices.Sort(keys)
		p.b = append(p.b, '{')
		for i, k := range keys {
			if i > 0 {
				p.b = append(p.b, ',')
			}
			p.string(k)
			p.b = append(p.b, ':')
			if item, ok := made[k]; ok {
				if err := p.stringPieces(item); err != nil {
					return err
				}
				continue
			}
			p.string(m[k])
		}
		p.b = append(p.b, '}')
	}
	p.b = append(p.b, `,"data":`...)
	p.b = append(p.b, dj...)
	p.b = append(p.b, "}\n"...)
	p.flush(0)
	return p.err
}

// sidecarPiece is the size of the pieces of a string that
// writeBoundSidecar escapes at a time, and of its writes; tests make it
// small, but no less than utf8.UTFMax (string backs up to three bytes
// from a cut).
var sidecarPiece = 64 << 10

// pieceWriter writes JSON to w through a buffer of about sidecarPiece
// bytes; err is w's first error, after which nothing more is written.
type pieceWriter struct {
	w   io.Writer
	b   []byte
	err error
}

// flush writes the buffer if it holds at least atLeast bytes.
func (p *pieceWriter) flush(atLeast int) {
	if len(p.b) < atLeast || len(p.b) == 0 {
		return
	}
	if p.err == nil {
		_, p.err = p.w.Write(p.b)
	}
	p.b = p.b[:0]
}

// string appends s as json.Marshal writes it, a piece of sidecarPiece
// bytes at a time. A piece ends before a byte that starts a rune, or
// after three bytes that cannot start one (a rune has at most four
// bytes): json.Marshal decodes s rune by rune, an invalid byte alone, so
// it decodes every piece as it decodes s, and escapes nothing across the
// cuts.
func (p *pieceWriter) string(s string) {
	p.b = append(p.b, '"')
	p.escape(s, true)
	p.b = append(p.b, '"')
}

// escape writes s escaped, a piece at a time, and returns the bytes of s
// it took: all of them when final, else the pieces that more bytes after
// s could not change (all but the last sidecarPiece or fewer).
func (p *pieceWriter) escape(s string, final bool) int {
	took := 0
	for len(s) > sidecarPiece || final && len(s) > 0 {
		n := min(len(s), sidecarPiece)
		if n < len(s) {
			c := n
			for k := 0; k < utf8.UTFMax-1 && !utf8.RuneStart(s[c]); k++ {
				c--
			}
			if utf8.RuneStart(s[c]) {
				n = c
			}
		}
		q, _ := json.Marshal(s[:n]) // a string always marshals
		p.b = append(p.b, q[1:len(q)-1]...)
		s, took = s[n:], took+n
		p.flush(sidecarPiece)
	}
	return took
}

// stringPieces is string of d's value, taken a piece at a time: the
// bytes not yet escaped stay in a window of about two pieces, cut where
// string would cut the whole value.
func (p *pieceWriter) stringPieces(d Deferred) error {
	p.b = append(p.b, '"')
	var win []byte
	err := d.Write(func(piece []byte) error {
		win = append(win, piece...)
		if n := p.escape(unsafe.String(unsafe.SliceData(win), len(win)), false); n > 0 {
			win = win[:copy(win, win[n:])]
		}
		return p.err
	})
	if err != nil {
		return err
	}
	p.escape(string(win), true)
	p.b = append(p.b, '"')
	return p.err
}

func decodeSidecar(b []byte) (Meta, error) {
	s, err := decodeSidecarFull(b, false)
	return s.Meta, err
}

// decodeSidecarFull decodes a sidecar and checks its version; owned: b is
// given up (decodeSidecarOwned).
func decodeSidecarFull(b []byte, owned bool) (sidecar, error) {
	var s sidecar
	decode := decodeSidecarJSON
	if owned {
		decode = decodeSidecarOwned
	}
	if err := decode(b, &s); err != nil {
		return s, err
	}
	if s.Pramkit != 1 {
		return s, fmt.Errorf("metadata layout version %d is not supported (want 1)", s.Pramkit)
	}
	if s.Meta == nil {
		s.Meta = Meta{}
	}
	return s, nil
}
