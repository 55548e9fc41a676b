package table

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MetaDigest is "sha256:" and the hex SHA-256 of a metadata item's text:
// what a stage keeps to compare another file's item with once it has
// parsed the text and let it go (ReadOptions.DigestMeta). It hashes the
// text a piece at a time: sha256.Sum256([]byte(text)) copied it whole
// (20 MB for a codebook of 2M labels).
func MetaDigest(text string) string {
	h := sha256.New()
	var buf [32 << 10]byte
	for len(text) > 0 {
		n := copy(buf[:], text)
		h.Write(buf[:n])
		text = text[n:]
	}
	return digestString(h)
}

func digestString(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

// digestItems replaces the items of m named in keys by their MetaDigest;
// when digested (readSidecarDigesting did it), only those that are not
// of a digest's form (a safety net: none should be left).
func digestItems(m Meta, keys []string, digested bool) {
	for _, k := range keys {
		if v, ok := m[k]; ok && (!digested || !isDigest(v)) {
			m[k] = MetaDigest(v)
		}
	}
}

// isDigest reports whether v has MetaDigest's form.
func isDigest(v string) bool {
	if len(v) != len("sha256:")+2*sha256.Size || v[:7] != "sha256:" {
		return false
	}
	_, err := hex.DecodeString(v[7:])
	return err == nil
}

// readSidecarDigesting reads the sidecar at path for ReadOptions.DigestMeta:
// the bytes to decode, where the string value of each "meta" item named in
// keys is its MetaDigest already, hashed as it is read and never held
// (20 MB for a 2M-label codebook, which an Anatomy release's groups table
// carries beside the release's own: issue 11). A value it is not sure to
// decode as the sidecar decoder would (an escaped surrogate, invalid
// UTF-8, anything invalid), a key with an escape or a second "meta" make
// it read the file whole instead: digested then says that the named
// items are not digested yet (digestItems, after decoding).
func readSidecarDigesting(path string, keys []string) (b []byte, digested bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	d := &sidecarDigester{r: bufio.NewReaderSize(f, 64<<10), keys: keys}
	if b, err := d.run(); err == nil {
		return b, true, nil
	}
	b, err = os.ReadFile(path)
	return b, false, err
}

// sidecarDigester copies a sidecar, digesting the named "meta" items.
type sidecarDigester struct {
	r    *bufio.Reader
	keys []string
	out  []byte
	raw  []byte // the current string's content, as written
}

// run copies the whole input. It follows the usual shape only: the top
// object's key "meta" (exactly), whose value is an object of keys and
// values; depth and keys tell where a string is.
func (d *sidecarDigester) run() ([]byte, error) {
	var (
		stack  []byte // '{' or '[' per open container
		key    string // the last key read in the current object
		isKey  = false
		inMeta = false // the current object is the top object's "meta"
		metaAt = -1    // the depth of the "meta" object
		topKey string
	)
	for {
		c, err := d.r.ReadByte()
		if err == io.EOF {
			return d.out, nil
		}
		if err != nil {
			return nil, err
		}
		switch c {
		case '{':
			stack = append(stack, c)
			isKey = true
			inMeta = len(stack) == 2 && topKey == "meta" && metaAt < 0
			if inMeta {
				metaAt = 2
			}
		case '[':
			stack = append(stack, c)
			isKey = false
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			inMeta = len(stack) == metaAt && metaAt > 0 && stack[len(stack)-1] == '{'
			isKey = false
		case ',':
			isKey = len(stack) > 0 && stack[len(stack)-1] == '{'
		case ':':
			isKey = false
		case '"':
			d.out = append(d.out, c)
			digest := inMeta && !isKey && len(stack) == metaAt && slices.Contains(d.keys, key)
			s, err := d.str(digest)
			if err != nil {
				return nil, err
			}
			if isKey {
				key = s
				if len(stack) == 1 {
					// json.Unmarshal takes "Meta", "META" or an
					// escaped name for the field too.
					if s == "meta" && metaAt > 0 || s != "meta" && (strings.EqualFold(s, "meta") || strings.IndexByte(s, '\\') >= 0) {
						return nil, errUnsure
					}
					topKey = s
				}
				if inMeta && len(stack) == metaAt && bytes.IndexByte(d.raw, '\\') >= 0 {
					return nil, errUnsure // an item's name with an escape
				}
			}
			continue
		}
		d.out = append(d.out, c)
	}
}

// str copies a string whose opening quote was read, up to its closing
// quote; a digested one is replaced by its digest. It returns the string
// as written (for keys; "" when digested).
func (d *sidecarDigester) str(digest bool) (string, error) {
	d.raw = d.raw[:0]
	var h hash.Hash
	var dec []byte
	sure := digest
	var scan jsonStringScan
	// last is where in raw the last token starts: an escape, or a byte
	// that is not a UTF-8 continuation byte. What ends before it cuts no
	// escape or UTF-8 sequence, and is hashed once raw holds 64 KiB. It
	// is kept as the bytes come (finding it by scanning raw again at
	// each byte took time quadratic in a string of escapes: 27 s for
	// 512 KiB of "\n").
	last := 0
	for {
		c, err := d.r.ReadByte()
		if err != nil {
			return "", err // an unclosed string: the decoder says so
		}
		starts := !scan.inEscape() && utf8.RuneStart(c)
		end, bad := scan.step(c)
		if bad {
			return "", errUnsure // invalid: the decoder says so, read whole
		}
		if end {
			break
		}
		if starts {
			last = len(d.raw)
		}
		d.raw = append(d.raw, c)
		if sure && len(d.raw) >= 64<<10 && last > 0 {
			if h == nil {
				h = sha256.New()
			}
			if dec, sure = unquotePlain(dec[:0], d.raw[:last]); !sure {
				return "", errUnsure
			}
			h.Write(dec)
			d.raw = append(d.raw[:0], d.raw[last:]...)
			last = 0
		}
	}
	if digest {
		if dec, sure = unquotePlain(dec[:0], d.raw); !sure {
			return "", errUnsure
		}
		if h == nil {
			h = sha256.New()
		}
		h.Write(dec)
		d.out = append(d.out, digestString(h)...)
		d.out = append(d.out, '"')
		return "", nil
	}
	d.out = append(d.out, d.raw...)
	d.out = append(d.out, '"')
	return string(d.raw), nil
}

// errUnsure: part of a digested item was hashed before a part the
// digester is not sure to decode as the decoder would.
var errUnsure = &unsureError{}

type unsureError struct{}

func (*unsureError) Error() string { return "a metadata item the digester cannot decode" }

// unquotePlain appends the unquoted raw to out, as appendUnquoted does,
// and false when raw is not what the sidecar's fast decoder decodes
// (decodeSidecarFast): an invalid escape or UTF-8, a control character,
// an escaped surrogate, an escape cut at its end.
func unquotePlain(out, raw []byte) ([]byte, bool) {
	if !utf8.Valid(raw) {
		return out, false
	}
	for k := 0; k < len(raw); k++ {
		c := raw[k]
		switch {
		case c < ' ':
			return out, false
		case c != '\\':
			continue
		case k+1 >= len(raw):
			return out, false
		}
		switch raw[k+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			k++
		case 'u':
			if k+6 > len(raw) {
				return out, false
			}
			r, err := strconv.ParseUint(string(raw[k+2:k+6]), 16, 32)
			if err != nil || r >= 0xd800 && r < 0xe000 {
				return out, false
			}
			k += 5
		default:
			return out, false
		}
	}
	return appendUnquoted(out, raw), true
}
