package codebook

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/pramkit/pramkit/pkg/table"
)

// UnknownPolicy says what an Encoder does with a value that is not in the
// codebook (or, in a numeric column, is not a finite number). It implements
// the flag.Value / pflag.Value interface for a --unknown flag.
type UnknownPolicy uint8

const (
	// UnknownFail returns a *ValueError. The default: a value outside the
	// public codebook usually means the codebook or the data is wrong.
	UnknownFail UnknownPolicy = iota
	// UnknownMissing treats the value as missing; the MissingPolicy then
	// applies. The column needs a missing category unless rows are dropped.
	UnknownMissing
)

// MissingPolicy says what an Encoder does with a missing value (the empty
// string or the column's missing token). It implements flag.Value /
// pflag.Value for a --missing flag.
type MissingPolicy uint8

const (
	// MissingKeep encodes it as the column's missing category (SPEC §2:
	// missing values are a category of their own). The default.
	MissingKeep MissingPolicy = iota
	// MissingDrop makes Index return ErrDrop: the caller drops the row.
	MissingDrop
	// MissingFail returns a *ValueError.
	MissingFail
)

// Policy gathers an Encoder's policies. The zero Policy fails on unknown
// values and keeps missing values as their category.
type Policy struct {
	Unknown UnknownPolicy
	Missing MissingPolicy
}

var (
	unknownNames = []string{UnknownFail: "fail", UnknownMissing: "missing"}
	missingNames = []string{MissingKeep: "keep", MissingDrop: "drop", MissingFail: "fail"}
)

// String returns the flag spelling: "fail" or "missing".
func (p UnknownPolicy) String() string {
	if int(p) < len(unknownNames) {
		return unknownNames[p]
	}
	return fmt.Sprintf("UnknownPolicy(%d)", p)
}

// Set parses the flag spelling.
func (p *UnknownPolicy) Set(s string) error {
	for i, n := range unknownNames {
		if s == n {
			*p = UnknownPolicy(i)
			return nil
		}
	}
	return fmt.Errorf("codebook.UnknownPolicy.Set: %q is not a policy for unknown values; use %s", s, strings.Join(unknownNames, " or "))
}

// Type names the flag's value type in help text.
func (p *UnknownPolicy) Type() string { return strings.Join(unknownNames, "|") }

// String returns the flag spelling: "keep", "drop" or "fail".
func (p MissingPolicy) String() string {
	if int(p) < len(missingNames) {
		return missingNames[p]
	}
	return fmt.Sprintf("MissingPolicy(%d)", p)
}

// Set parses the flag spelling.
func (p *MissingPolicy) Set(s string) error {
	for i, n := range missingNames {
		if s == n {
			*p = MissingPolicy(i)
			return nil
		}
	}
	return fmt.Errorf("codebook.MissingPolicy.Set: %q is not a policy for missing values; use %s", s, strings.Join(missingNames, ", "))
}

// Type names the flag's value type in help text.
func (p *MissingPolicy) Type() string { return strings.Join(missingNames, "|") }

// ErrDrop is returned by Encoder.Index under MissingDrop: the value is
// missing (or unknown and UnknownMissing) and the caller should drop the
// row. It is a sentinel so that dropping costs no allocation; a caller that
// treats every error as fatal fails safe instead of keeping a wrong index.
var ErrDrop = errors.New("codebook: missing value, drop the row")

// ErrorKind classifies a *ValueError.
type ErrorKind uint8

const (
	// KindUnknown: a categorical value that is not in the codebook.
	KindUnknown ErrorKind = iota + 1
	// KindNotNumber: a numeric column's value is not a finite number.
	KindNotNumber
	// KindMissing: a missing value the policy does not accept.
	KindMissing
)

// ValueError reports a value an Encoder cannot encode. Its message names
// the value and the column and says how to fix it, in terms of the codebook
// file and of the tools' --unknown and --missing flags; callers wrap it with
// the file and row.
type ValueError struct {
	Column string
	Value  string
	Kind   ErrorKind

	col    *Column
	policy Policy
}

// maxKnown bounds the categories quoted in an error message.
const maxKnown = 12

func (e *ValueError) Error() string {
	var b strings.Builder
	c := e.col
	tok, hasMissing := c.MissingToken()
	switch e.Kind {
	case KindUnknown:
		fmt.Fprintf(&b, "value %s is not in the codebook for column %s (known: ", table.QuoteCell(e.Value), table.QuoteCell(e.Column))
		n := min(c.K(), maxKnown)
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(table.ShortCell(c.Label(i)))
		}
		if c.K() > n {
			fmt.Fprintf(&b, ", and %d more", c.K()-n)
		}
		b.WriteString(")")
	case KindNotNumber:
		fmt.Fprintf(&b, "value %s in numeric column %s is not a finite number", table.QuoteCell(e.Value), table.QuoteCell(e.Column))
	case KindMissing:
		if e.Value == "" {
			fmt.Fprintf(&b, "empty value in column %s", table.QuoteCell(e.Column))
		} else {
			fmt.Fprintf(&b, "missing value %s in column %s", table.QuoteCell(e.Value), table.QuoteCell(e.Column))
		}
	}
	if e.Value != strings.TrimFunc(e.Value, unicode.IsSpace) {
		b.WriteString(" (it has leading or trailing spaces: trim the data)")
	}
	missingFix := `give the column a "missing" token in the codebook (for example "missing": "?")`
	switch {
	case e.Kind == KindMissing && e.policy.Missing == MissingFail:
		b.WriteString("; --missing fail refuses missing values: pass --missing keep to keep them as a category or --missing drop to drop their rows")
	case e.Kind == KindMissing:
		fmt.Fprintf(&b, ", which has no missing category; %s, or pass --missing drop", missingFix)
	case e.policy.Unknown == UnknownMissing && e.policy.Missing == MissingFail:
		b.WriteString("; --unknown missing treats it as missing, which --missing fail refuses: fix the value, or pass --missing keep or --missing drop")
	case e.policy.Unknown == UnknownMissing:
		fmt.Fprintf(&b, "; --unknown missing needs a missing category, which the column lacks: %s, fix the value, or pass --missing drop", missingFix)
	case e.Kind == KindNotNumber:
		if hasMissing {
			fmt.Fprintf(&b, "; fix the value, write the missing token %q, or pass --unknown missing", tok)
		} else {
			fmt.Fprintf(&b, "; fix the value, or %s and pass --unknown missing", missingFix)
		}
	default:
		if hasMissing {
			b.WriteString("; add it to the codebook or pass --unknown missing")
		} else {
			fmt.Fprintf(&b, "; add it to the codebook, or %s and pass --unknown missing", missingFix)
		}
	}
	return b.String()
}

// Encoder maps one column's values to value indices. Index does not
// allocate except to build an error, so it can run once per cell.
type Encoder struct {
	col        *Column
	policy     Policy
	index      labelIndex // categorical
	labels     labelList
	cuts       []float64 // numeric
	missing    uint32
	hasMissing bool
	token      string
}

// Encoder returns an encoder for the column under policy p.
func (c *Column) Encoder(p Policy) (*Encoder, error) {
	if c.labels.offs == nil {
		return nil, fmt.Errorf("codebook.Column.Encoder: the column was not built by NewColumn or Parse")
	}
	if int(p.Unknown) >= len(unknownNames) || int(p.Missing) >= len(missingNames) {
		return nil, fmt.Errorf("codebook.Column.Encoder: column %q: invalid policy %v/%v", c.name, p.Unknown, p.Missing)
	}
	e := &Encoder{col: c, policy: p, labels: c.labels, cuts: c.cuts}
	if c.cuts == nil {
		e.index = *c.index.get() // built here if no lookup came before
	}
	if i, ok := c.MissingIndex(); ok {
		e.missing, e.hasMissing, e.token = uint32(i), true, c.labels.at(i)
	}
	return e, nil
}

// Encoders returns one encoder per column, in order, all under policy p.
func (cb *Codebook) Encoders(p Policy) ([]*Encoder, error) {
	encs := make([]*Encoder, len(cb.Columns))
	for i := range cb.Columns {
		e, err := cb.Columns[i].Encoder(p)
		if err != nil {
			return nil, err
		}
		encs[i] = e
	}
	return encs, nil
}

// Column returns the column the encoder encodes.
func (e *Encoder) Column() *Column { return e.col }

// Policy returns the policy the encoder was made with.
func (e *Encoder) Policy() Policy { return e.policy }

// IndexAll sets out[i] to Index(ss[i]) and ok[i] for every label of ss
// that Index codes from the label table as it stands — a category other
// than the missing one — looked up in blocks (Column.LabelIndexes); ok[i]
// is false for the others (missing, unknown, every value of a numeric
// column), which Index codes or refuses one at a time under the policy.
func (e *Encoder) IndexAll(ss []string, out []uint32, ok []bool) {
	if e.cuts != nil {
		clear(ok)
		return
	}
	e.index.getAll(&e.labels, ss, out, ok)
	if e.hasMissing {
		for i, x := range out {
			ok[i] = ok[i] && x != e.missing
		}
	}
}

// Index returns the value index of v: its position among the categories,
// or for a numeric column the bucket i with c_i ≤ x < c_{i+1} (c_0 = −∞,
// c_{n+1} = +∞), found by binary search over the n cuts in O(log n). Values
// are matched exactly; trim white space first.
//
// A missing value (v is "" or the missing token) is handled by the
// MissingPolicy, a value outside the codebook by the UnknownPolicy. Errors
// are ErrDrop (drop the row) or a *ValueError.
func (e *Encoder) Index(v string) (uint32, error) {
	if e.cuts == nil {
		if i, ok := e.index.get(&e.labels, v); ok {
			if !e.hasMissing || i != e.missing {
				return i, nil
			}
			return e.onMissing(v, KindMissing)
		}
		if v == "" {
			return e.onMissing(v, KindMissing)
		}
		return e.onUnknown(v, KindUnknown)
	}
	if v == "" || (e.hasMissing && v == e.token) {
		return e.onMissing(v, KindMissing)
	}
	x, ok := parseSmallInt(v)
	if !ok {
		var err error
		x, err = strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return e.onUnknown(v, KindNotNumber)
		}
	}
	// The index is the number of cuts ≤ x.
	lo, hi := 0, len(e.cuts)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if e.cuts[mid] <= x {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return uint32(lo), nil
}

// onMissing applies the MissingPolicy; kind is KindUnknown or KindNotNumber
// when an unknown value is being treated as missing.
// onMissing and onUnknown clone v into the error: v may point into a batch
// whose buffers the reader lends to a later one (table.ReadOptions.
// ReuseBuffers), and the error is reported after that.
func (e *Encoder) onMissing(v string, kind ErrorKind) (uint32, error) {
	switch e.policy.Missing {
	case MissingDrop:
		return 0, ErrDrop
	case MissingKeep:
		if e.hasMissing {
			return e.missing, nil
		}
	}
	return 0, &ValueError{Column: e.col.name, Value: strings.Clone(v), Kind: kind, col: e.col, policy: e.policy}
}

func (e *Encoder) onUnknown(v string, kind ErrorKind) (uint32, error) {
	if e.policy.Unknown == UnknownMissing {
		return e.onMissing(v, kind)
	}
	return 0, &ValueError{Column: e.col.name, Value: strings.Clone(v), Kind: kind, col: e.col, policy: e.policy}
}

// parseSmallInt parses an optional '-' and 1 to 15 ASCII digits, the usual
// spelling of numeric census fields, about three times faster than
// strconv.ParseFloat. Below 10^15 < 2^53 every integer is a float64, so the
// result is exactly ParseFloat's; other spellings report false and take the
// general path.
func parseSmallInt(v string) (float64, bool) {
	neg := len(v) > 0 && v[0] == '-'
	digits := v
	if neg {
		digits = v[1:]
	}
	if len(digits) == 0 || len(digits) > 15 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	x := float64(n)
	if neg {
		x = -x
	}
	return x, true
}
