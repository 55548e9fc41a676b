package anonymize

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/table"
)

// nsaCoder carries a non-sensitive column that the codebook declares
// categorical as codes over the codebook's labels, from the reader through
// the shuffle to the writer (issue 11: codes, not strings). A published
// cell is its code, 4 bytes through the shuffle instead of the text, and
// the Parquet writer takes the column as finished dictionary pages instead
// of hashing a string per row. On the bench's 10M rows (an id and 5 such
// columns) the shuffle's rows went from 52 to 17 bytes, and the live heap
// while emitting from about 54 MB, over the 48 MiB soft limit (the
// collector ran 1,700 times), to well under it (500): 18.9 s to 7.4 s on
// 2 cores, 19.9 s to 10.2 s on one, peak RSS 90 MB to 75 MB.
//
// The codebook does not bind a non-sensitive column (anonymize publishes
// it as it is), so a cell whose text is no label is still published: it
// gets a code after the labels, in a list of extra labels kept in memory
// (at most maxExtraLabels, maxExtraBytes of text). The dictionary grows
// at its end as they come (the shuffle takes that, shuffle.Options.Relabel
// sorts them at the end: in order of first appearance they would tell the
// input's order of those values, which the shuffle hides).
type nsaCoder struct {
	name   string
	k      int // the codebook's labels
	labels []string
	lookup func(string) (uint32, error) // the codebook's labels, matched exactly
	coder  *table.Coder                 // lookup, cached
	// read is the codebook's labels as the passes read the column
	// (ReadOptions.Labels): a batch of them alone shares read's
	// dictionary, and its codes are the published ones.
	read  *table.Labels
	entry []uint32 // a batch dictionary's entries' codes (dictCodes)

	extras     map[string]uint32 // extra label → code (k + its place)
	extraBytes int
	dict       *table.Labels // over labels; nil when extras came since
}

// Bounds of a column's extra labels: past them anonymize stops and says
// to declare the values or to drop the column from the codebook
// (variables for tests).
var (
	maxExtraLabels = 1 << 16
	maxExtraBytes  = 16 << 20
)

// newNSACoder returns the coder of non-sensitive column col of the
// codebook.
func newNSACoder(col *codebook.Column) (*nsaCoder, error) {
	// MissingKeep: the missing token is a label like the others; a cell
	// matches only its own label (Encoder.Index also maps "" to it).
	enc, err := col.Encoder(codebook.Policy{Missing: codebook.MissingKeep})
	if err != nil {
		return nil, err
	}
	labels := col.Labels()
	c := &nsaCoder{name: col.Name(), k: len(labels), labels: labels, read: table.NewLabels(labels)}
	c.lookup = func(s string) (uint32, error) {
		x, err := enc.Index(s)
		if err != nil || labels[x] != s {
			return 0, &table.UnknownLabelError{Label: s}
		}
		return x, nil
	}
	c.coder = table.NewCoder(c.lookup)
	c.dict = c.read
	return c, nil
}

// nsaCoders returns, per column of schema, the coder of each non-sensitive
// column (which[j] < 0) that travels as codes: text columns (utf8, or a
// dictionary of utf8) that the codebook declares categorical. Others are
// nil.
func nsaCoders(schema *arrow.Schema, which []int, cb *codebook.Codebook) ([]*nsaCoder, error) {
	out := make([]*nsaCoder, len(which))
	for j, f := range schema.Fields() {
		if which[j] >= 0 || !isText(f.Type) {
			continue
		}
		col, ok := cb.Column(f.Name)
		if !ok || col.IsNumeric() {
			continue
		}
		c, err := newNSACoder(col)
		if err != nil {
			return nil, err
		}
		out[j] = c
	}
	return out, nil
}

func isText(t arrow.DataType) bool {
	if d, ok := t.(*arrow.DictionaryType); ok {
		t = d.ValueType
	}
	return t.ID() == arrow.STRING
}

// codes sets dst[x] to the code of cell rows[x] of a (all of a's cells,
// in order, when rows is nil).
func (c *nsaCoder) codes(dst []uint32, a arrow.Array, rows []int) error {
	if d, ok := a.(*array.Dictionary); ok && d.NullN() == 0 {
		if idx, ok := d.Indices().(*array.Int32); ok {
			return c.dictCodes(dst, d.Dictionary(), idx.Int32Values(), rows)
		}
	}
	if rows == nil {
		for off := 0; off < len(dst); {
			i, err := c.coder.Codes(dst[off:], a, off)
			if err == nil {
				return nil
			}
			if dst[off+i], err = c.extra(a, off+i, err); err != nil {
				return err
			}
			off += i + 1
		}
		return nil
	}
	for x, r := range rows {
		i, err := c.coder.Codes(dst[x:x+1], a, r)
		if err != nil && i == 0 {
			if dst[x], err = c.extra(a, r, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// unmapped marks a dictionary entry dictCodes has not coded yet.
const unmapped = ^uint32(0)

// dictCodes is codes for a dictionary column (dict, idx): the indices
// themselves when dict is read's (the cells were all labels), else each
// entry coded once, when a cell first uses it.
func (c *nsaCoder) dictCodes(dst []uint32, dict arrow.Array, idx []int32, rows []int) error {
	at := func(x int) int {
		if rows == nil {
			return x
		}
		return rows[x]
	}
	if dict.Data() == c.read.Dictionary().Data() {
		for x := range dst {
			dst[x] = uint32(idx[at(x)])
		}
		return nil
	}
	vs := table.ValuesOf(dict)
	c.entry = slices.Grow(c.entry[:0], dict.Len())[:dict.Len()]
	for e := range c.entry {
		c.entry[e] = unmapped
	}
	for x := range dst {
		i := at(x)
		k := idx[i]
		if c.entry[k] == unmapped {
			s := vs.String(int(k))
			code, err := c.lookup(s)
			if err != nil {
				if code, err = c.extraLabel(s, i); err != nil {
					return err
				}
			}
			c.entry[k] = code
		}
		dst[x] = c.entry[k]
	}
	return nil
}

// extra returns the code of cell i of a, which the codebook lacks (lookup
// said so with err), giving it one after the labels if it has none yet.
func (c *nsaCoder) extra(a arrow.Array, i int, err error) (uint32, error) {
	var unknown *table.UnknownLabelError
	if !errors.As(err, &unknown) {
		return 0, err
	}
	return c.extraLabel(unknown.Label, i)
}

// extraLabel returns the code of s, cell i of its batch, which the
// codebook lacks, giving it one after the labels if it has none yet.
func (c *nsaCoder) extraLabel(s string, i int) (uint32, error) {
	if code, ok := c.extras[s]; ok {
		return code, nil
	}
	if len(c.extras) >= maxExtraLabels || c.extraBytes+len(s) > maxExtraBytes {
		return 0, &cellError{i: i, err: fmt.Errorf("value %s makes more than %d values (or %d MiB of them) that the codebook does not declare for this column; declare them in the codebook, or remove the column from it (anonymize publishes it as it is)", table.QuoteCell(s), len(c.extras), maxExtraBytes>>20)}
	}
	if c.extras == nil {
		c.extras = map[string]uint32{}
	}
	s = strings.Clone(s)
	code := uint32(len(c.labels))
	c.extras[s] = code
	c.extraBytes += len(s)
	c.labels = append(c.labels, s)
	c.dict = nil
	return code, nil
}

// cellError is an error of cell i of a batch.
type cellError struct {
	i   int
	err error
}

func (e *cellError) Error() string { return e.err.Error() }

// column returns codes as a column over the labels so far.
func (c *nsaCoder) column(codes []uint32) arrow.Array {
	if c.dict == nil {
		c.dict = table.NewLabels(c.labels)
	}
	return c.dict.Column(codes)
}

// sortExtras is shuffle.Options.Relabel for a coded column: the codebook's
// labels keep their codes, the extra labels (dict's entries past them)
// come out in sorted order.
func sortExtras(k int, dict arrow.Array) (arrow.Array, []int32) {
	if dict.Len() <= k+1 {
		return dict, nil
	}
	vs := table.ValuesOf(dict)
	order := make([]int, dict.Len()-k)
	for i := range order {
		order[i] = k + i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(vs.String(a), vs.String(b)) })
	labels := make([]string, dict.Len())
	codes := make([]int32, dict.Len())
	for i := range k {
		labels[i], codes[i] = vs.String(i), int32(i)
	}
	for rank, old := range order {
		labels[k+rank], codes[old] = vs.String(old), int32(k+rank)
	}
	return table.NewLabels(labels).Dictionary(), codes
}
