package codebook

import (
	"cmp"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// DefaultMaxK is InferOptions.MaxK's default: more distinct values than this
// in one column suggests a continuous or identifying column (Adult's fnlwgt
// has 28,523 in 48,842 rows) that should be bucketed or left out.
const DefaultMaxK = 1000

// InferOptions configures Infer and NewInferrer.
type InferOptions struct {
	// Missing is the missing-value token ("?" for Adult). Values equal to it
	// and empty values become the missing category of their column; a column
	// gets "missing": Missing only if such a value occurs. Default "": no
	// token, and an empty value is an error.
	Missing string
	// MaxK is the most distinct values (besides missing) a column may have.
	// Default (0): DefaultMaxK.
	MaxK int
}

// Inferrer derives a categorical codebook from data, row by row.
//
// Inference reveals the data: the inferred codebook lists every value that
// occurs at least once, so publishing it tells everyone that someone has that
// value, and a rare value can single a person out. Prefer a codebook written
// from public documentation (for Adult, adult.names); infer only when the
// value set is itself public, or to draft a codebook that a person reviews.
type Inferrer struct {
	names      []string
	opts       InferOptions
	seen       []map[string]struct{}
	sawMissing []bool
}

// NewInferrer returns an Inferrer for rows whose values are in the order of
// names.
func NewInferrer(names []string, opts InferOptions) (*Inferrer, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("codebook.NewInferrer: no column names given")
	}
	for i, n := range names {
		if err := checkName(n); err != nil {
			return nil, fmt.Errorf("codebook.NewInferrer: column #%d: %w", i+1, err)
		}
		if j := slices.Index(names[:i], n); j >= 0 {
			return nil, fmt.Errorf("codebook.NewInferrer: column %q appears twice (#%d and #%d)", n, j+1, i+1)
		}
	}
	if opts.Missing != "" {
		if err := checkValue("missing token", opts.Missing); err != nil {
			return nil, fmt.Errorf("codebook.NewInferrer: %w", err)
		}
	}
	switch {
	case opts.MaxK == 0:
		opts.MaxK = DefaultMaxK
	case opts.MaxK < 1 || opts.MaxK >= MaxK:
		return nil, fmt.Errorf("codebook.NewInferrer: MaxK must be in [1, %d), got %d", MaxK, opts.MaxK)
	}
	in := &Inferrer{
		names:      slices.Clone(names),
		opts:       opts,
		seen:       make([]map[string]struct{}, len(names)),
		sawMissing: make([]bool, len(names)),
	}
	for i := range in.seen {
		in.seen[i] = make(map[string]struct{})
	}
	return in, nil
}

// Add records one row. It allocates only for values not seen before (which
// it copies, so the caller may reuse row's memory).
func (in *Inferrer) Add(row []string) error {
	if err := in.add(row); err != nil {
		return fmt.Errorf("codebook.Inferrer.Add: %w", err)
	}
	return nil
}

func (in *Inferrer) add(row []string) error {
	if len(row) != len(in.names) {
		return fmt.Errorf("%d values for %d columns", len(row), len(in.names))
	}
	for j, v := range row {
		if v == "" || v == in.opts.Missing {
			if in.opts.Missing == "" {
				return fmt.Errorf("empty value in column %q; give a missing token (for example \"?\") so that empty values get a missing category", in.names[j])
			}
			in.sawMissing[j] = true
			continue
		}
		seen := in.seen[j]
		if _, ok := seen[v]; ok {
			continue
		}
		if len(seen) >= in.opts.MaxK {
			return fmt.Errorf("column %q has more than %d distinct values; it looks continuous or identifying: declare cut points for it in a codebook file, or leave it out", in.names[j], in.opts.MaxK)
		}
		if err := checkValue("value", v); err != nil {
			return fmt.Errorf("column %q: %w", in.names[j], err)
		}
		seen[strings.Clone(v)] = struct{}{}
	}
	return nil
}

// Codebook returns the inferred codebook: one categorical column per name,
// its categories sorted by CompareValues, plus the missing token where a
// missing value occurred. Numeric columns get one category per distinct
// value; to bucket them, declare cuts in a codebook file instead.
func (in *Inferrer) Codebook() (*Codebook, error) {
	cols := make([]Column, len(in.names))
	for j, name := range in.names {
		if len(in.seen[j]) == 0 {
			return nil, fmt.Errorf("codebook.Inferrer.Codebook: column %q has no values besides missing ones; there is nothing to infer its categories from", name)
		}
		s := Spec{Name: name, Categories: slices.SortedFunc(maps.Keys(in.seen[j]), CompareValues)}
		if in.sawMissing[j] {
			s.Missing = in.opts.Missing
		}
		c, err := newColumn(s)
		if err != nil {
			return nil, fmt.Errorf("codebook.Inferrer.Codebook: column %q: %w", name, err)
		}
		cols[j] = c
	}
	return &Codebook{Columns: cols}, nil
}

// Infer derives a codebook from rows (values in the order of names); see
// Inferrer for what inference reveals. Errors name the row (from 1).
func Infer(names []string, rows iter.Seq[[]string], opts InferOptions) (*Codebook, error) {
	in, err := NewInferrer(names, opts)
	if err != nil {
		return nil, err
	}
	n := 0
	for row := range rows {
		n++
		if err := in.add(row); err != nil {
			return nil, fmt.Errorf("codebook.Infer: row %d: %w", n, err)
		}
	}
	return in.Codebook()
}

// CompareValues is the deterministic order of inferred categories, a total
// order on strings:
//
//  1. strings that parse as finite numbers come first, by numeric value
//     ("-2" < "1.5" < "10");
//  2. then the other strings in natural order: runs of ASCII digits compare
//     by their numeric value ("a2" < "a10"), other bytes by byte value, a
//     digit run sorting where its first digit would;
//  3. ties (such as "1.0" and "1", or "a01" and "a1") are broken by byte
//     order.
func CompareValues(a, b string) int {
	x, aNum := number(a)
	y, bNum := number(b)
	switch {
	case aNum && bNum:
		if c := cmp.Compare(x, y); c != 0 {
			return c
		}
	case aNum:
		return -1
	case bNum:
		return 1
	default:
		if c := naturalCompare(a, b); c != 0 {
			return c
		}
	}
	return strings.Compare(a, b)
}

func number(s string) (float64, bool) {
	x, err := strconv.ParseFloat(s, 64)
	return x, err == nil && !math.IsNaN(x) && !math.IsInf(x, 0)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// naturalCompare compares a and b as sequences of tokens — a maximal run of
// ASCII digits, or one other byte — lexicographically. Two digit runs compare
// by numeric value (leading zeros ignored); a digit run against a byte
// compares as the byte '0'. This is a total preorder, which CompareValues
// makes total with byte order.
func naturalCompare(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		da, db := isDigit(ca), isDigit(cb)
		if da && db {
			si, sj := i, j
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			ra, rb := strings.TrimLeft(a[si:i], "0"), strings.TrimLeft(b[sj:j], "0")
			if c := cmp.Compare(len(ra), len(rb)); c != 0 {
				return c
			}
			if c := strings.Compare(ra, rb); c != 0 {
				return c
			}
			continue
		}
		if da {
			ca = '0'
		}
		if db {
			cb = '0'
		}
		if c := cmp.Compare(ca, cb); c != 0 {
			return c
		}
		// Equal ranks: both are the same non-digit byte.
		i++
		j++
	}
	return cmp.Compare(len(a)-i, len(b)-j)
}
