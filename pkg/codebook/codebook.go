package codebook

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pramkit/pramkit/pkg/table"
)

// MaxK is the largest alphabet size a column may have. Value indices are
// uint32 and mechanisms add two of them before reducing mod k, so k ≤ 2^31
// keeps every intermediate sum below 2^32.
const MaxK = 1 << 31

// Codebook is an ordered list of column codebooks. Its order is the order of
// the joint alphabet G = Z_{k_1} × … × Z_{k_d} and of Hash.
//
// Build one with Parse, Load, New, Select or Infer; the zero Column is not
// usable.
type Codebook struct {
	Columns []Column
}

// Column is the codebook of one column: its name and its k labels, value
// index = position. It is either categorical (labels = declared categories)
// or numeric (labels name the buckets between cut points). A missing
// category, if any, is one of the k labels.
type Column struct {
	name    string
	labels  labelList  // all k labels, the missing category included
	cuts    []float64  // nil for a categorical column
	missing int        // index of the missing category, -1 if none
	index   *lazyIndex // label → index (a numeric column's bucket labels too, for LabelIndex), built on first use
}

// Spec is a column as written in a codebook file: the JSON object
// {"name", "categories" | "cuts" + "labels", "missing"}. See the package
// documentation for the meaning of each field.
type Spec struct {
	// Name is the column's name. Required.
	Name string
	// Categories lists a categorical column's values in index order.
	// Exactly one of Categories and Cuts is set.
	Categories []string
	// Cuts lists a numeric column's cut points, finite and strictly
	// increasing.
	Cuts []float64
	// Labels optionally names a numeric column's len(Cuts)+1 buckets;
	// nil means generated labels.
	Labels []string
	// Missing is the missing-value token; "" means the column has no
	// missing category.
	Missing string

	// categories holds Categories instead when the parser has read them
	// (labelBuilder), nil otherwise.
	categories *labelBuilder
}

// NewColumn validates s and builds its column.
func NewColumn(s Spec) (Column, error) {
	c, err := newColumn(s)
	if err != nil {
		return Column{}, fmt.Errorf("codebook.NewColumn: column %q: %w", s.Name, err)
	}
	return c, nil
}

// newColumn validates s; its errors do not name the column (callers do).
func newColumn(s Spec) (Column, error) {
	if err := checkName(s.Name); err != nil {
		return Column{}, err
	}
	hasCats, hasCuts := s.Categories != nil || s.categories != nil, s.Cuts != nil
	switch {
	case hasCats && hasCuts:
		return Column{}, fmt.Errorf(`has both "categories" and "cuts"; a column is either categorical (categories) or numeric (cuts), remove one`)
	case !hasCats && !hasCuts:
		return Column{}, fmt.Errorf(`has neither "categories" nor "cuts"; list its values in "categories", or its cut points in "cuts" for a numeric column`)
	case hasCats && s.Labels != nil:
		return Column{}, fmt.Errorf(`"labels" names the buckets of a numeric column; a categorical column's labels are its categories, remove "labels"`)
	}
	if s.Missing != "" {
		if err := checkValue("missing token", s.Missing); err != nil {
			return Column{}, err
		}
	}
	if hasCats {
		return newCategorical(s)
	}
	return newNumeric(s)
}

func newCategorical(s Spec) (Column, error) {
	cats := s.categories
	if cats == nil {
		cats = new(labelBuilder)
		n := 0
		for _, v := range s.Categories {
			n += len(v)
		}
		cats.grow(len(s.Categories)+1, n+len(s.Missing))
		for _, v := range s.Categories {
			cats.add(v)
		}
	}
	n := cats.len()
	if n == 0 {
		return Column{}, fmt.Errorf(`"categories" is empty; list at least one value`)
	}
	extra := s.Missing != ""
	for i := range cats.stored() {
		if extra && cats.at(i) == s.Missing {
			extra = false
		}
	}
	k := n
	if extra {
		k++
	}
	if err := checkK(k, "categories", "bucket the column with cuts, or leave it out"); err != nil {
		return Column{}, err
	}
	if extra {
		cats.add(s.Missing)
	}
	labels, err := cats.list()
	if err != nil {
		return Column{}, err
	}
	c := Column{name: s.Name, labels: labels, missing: -1}
	// A table of the labels finds a repeated category; the column's
	// lookups take it if they come soon, or build it again (lazyIndex).
	seen := new(labelIndex)
	*seen = newLabelIndex(k)
	for i := range n {
		v := labels.at(i)
		if err := checkItem("category", i, v); err != nil {
			return Column{}, err
		}
		if j, dup := seen.get(&c.labels, v); dup {
			return Column{}, fmt.Errorf("category %q appears twice (#%d and #%d); remove one, since each value needs one index", v, j+1, i+1)
		}
		seen.put(v, uint32(i))
		if v == s.Missing {
			c.missing = i
		}
	}
	if c.missing == 0 && n == 1 {
		return Column{}, fmt.Errorf(`"categories" lists only the missing token %q; list at least one value besides it`, s.Missing)
	}
	if extra {
		c.missing = n
		seen.put(s.Missing, uint32(c.missing))
	}
	c.index = newLazyIndex(labels, seen)
	return c, nil
}

func newNumeric(s Spec) (Column, error) {
	n := len(s.Cuts)
	if n == 0 {
		return Column{}, fmt.Errorf(`"cuts" is empty; give at least one cut point (n cuts make n+1 buckets)`)
	}
	k := n + 1
	if s.Missing != "" {
		k++
	}
	if err := checkK(k, "buckets", "use fewer cut points"); err != nil {
		return Column{}, err
	}
	cuts := make([]float64, n)
	for i, x := range s.Cuts {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return Column{}, fmt.Errorf("cut #%d is %v; cut points must be finite numbers", i+1, x)
		}
		if x == 0 {
			x = 0 // −0 and +0 are the same cut; keep one spelling for Hash.
		}
		if i > 0 && !(x > cuts[i-1]) {
			return Column{}, fmt.Errorf("cuts must be strictly increasing, but cut #%d (%s) is not above cut #%d (%s); sort the cuts and remove duplicates",
				i+1, formatNumber(x), i, formatNumber(cuts[i-1]))
		}
		cuts[i] = x
	}
	labels := s.Labels
	if labels == nil {
		labels = bucketLabels(cuts)
	} else if len(labels) != n+1 {
		return Column{}, fmt.Errorf(`has %d cuts, so %d buckets, but %d labels; give one label per bucket, or remove "labels" to generate them`, n, n+1, len(labels))
	}
	seen := make(map[string]int, k)
	for i, l := range labels {
		if err := checkItem("label", i, l); err != nil {
			return Column{}, err
		}
		if j, dup := seen[l]; dup {
			return Column{}, fmt.Errorf("label %q names two buckets (#%d and #%d); bucket labels must be distinct", l, j+1, i+1)
		}
		seen[l] = i
	}
	var extra []string
	if s.Missing != "" {
		if j, dup := seen[s.Missing]; dup {
			return Column{}, fmt.Errorf("missing token %q is also the label of bucket #%d; choose another token or label", s.Missing, j+1)
		}
		if _, isNumber := number(s.Missing); isNumber {
			return Column{}, fmt.Errorf(`missing token %q is a number, which would then never be bucketed; choose a token that is not a number, such as "?" or "NA"`, s.Missing)
		}
		extra = []string{s.Missing}
	}
	all, err := newLabelList(labels, extra...)
	if err != nil {
		return Column{}, err
	}
	// The index serves LabelIndex (Index buckets numbers by the cuts).
	c := Column{name: s.Name, labels: all, cuts: cuts, missing: -1, index: newLazyIndex(all, nil)}
	if extra != nil {
		c.missing = len(labels)
	}
	return c, nil
}

// checkK rejects an alphabet size above MaxK (the missing category counted).
func checkK(k int, what, fix string) error {
	if k > MaxK {
		return fmt.Errorf("has %d %s (missing category included), more than the limit of %d; %s", k, what, MaxK, fix)
	}
	return nil
}

func checkName(name string) error {
	if name == "" {
		return fmt.Errorf(`has no "name"; give the column's name as in the table's header`)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("name is not valid UTF-8")
	}
	if strings.TrimFunc(name, unicode.IsSpace) != name {
		return fmt.Errorf("name has leading or trailing spaces; names are matched exactly, remove them")
	}
	return nil
}

// checkValue rejects strings that could never match a trimmed, non-missing
// cell: values are compared byte for byte and "" always means missing.
func checkValue(what, v string) error {
	if plainValue(v) {
		return nil
	}
	switch {
	case v == "":
		return fmt.Errorf("%s is empty; an empty cell always means a missing value, declare a \"missing\" token instead", what)
	case !utf8.ValidString(v):
		return fmt.Errorf("%s %s is not valid UTF-8", what, table.QuoteCell(v))
	case strings.TrimFunc(v, unicode.IsSpace) != v:
		return fmt.Errorf("%s %s has leading or trailing spaces; values are matched exactly, so trim them here and in the data", what, table.QuoteCell(v))
	}
	return nil
}

// plainValue reports whether checkValue accepts v, without building a
// message.
func plainValue(v string) bool {
	return v != "" && utf8.ValidString(v) && strings.TrimFunc(v, unicode.IsSpace) == v
}

// checkItem is checkValue for item i (from 0) of a list of kind, named
// "kind #i+1" in an error; the name is made only then (a Sprintf per item
// was a tenth of loading a codebook of 1M categories).
func checkItem(kind string, i int, v string) error {
	if plainValue(v) {
		return nil
	}
	return checkValue(fmt.Sprintf("%s #%d", kind, i+1), v)
}

// bucketLabels generates the labels of the len(cuts)+1 buckets (package
// documentation, "integer style" and "interval style").
func bucketLabels(cuts []float64) []string {
	n := len(cuts)
	labels := make([]string, n+1)
	integer := true
	for _, x := range cuts {
		if x != math.Trunc(x) || x < 0 || x > 1<<53 {
			integer = false
			break
		}
	}
	labels[0] = "<" + formatNumber(cuts[0])
	for i := 1; i < n; i++ {
		a, b := cuts[i-1], cuts[i]
		switch {
		case !integer:
			labels[i] = "[" + formatNumber(a) + "," + formatNumber(b) + ")"
		case b-a == 1:
			labels[i] = formatNumber(a)
		default:
			labels[i] = formatNumber(a) + "-" + formatNumber(b-1)
		}
	}
	if integer {
		labels[n] = formatNumber(cuts[n-1]) + "+"
	} else {
		labels[n] = ">=" + formatNumber(cuts[n-1])
	}
	return labels
}

// Name returns the column's name.
func (c *Column) Name() string { return c.name }

// K returns the alphabet size: the number of value indices, the missing
// category included.
func (c *Column) K() int { return c.labels.len() }

// Label returns the label of value index i (0 ≤ i < K; panics otherwise).
func (c *Column) Label(i int) string { return c.labels.at(i) }

// LabelIndex returns the index of label s, if it is one of the column's
// labels (a category, or a numeric column's bucket label): the codebook's
// own index, which costs a large column ~6 bytes a label (a Go map of its
// labels, which countquery built, ~55).
//
// The first lookup builds the index (lazyIndex); it is safe to call from
// several goroutines at once.
func (c *Column) LabelIndex(s string) (int, bool) {
	if c.index == nil {
		return 0, false // the zero Column
	}
	i, ok := c.index.get().get(&c.labels, s)
	return int(i), ok
}

// ForgetIndex lets the column's label index go, for every copy of the
// column (they share it), though not an Encoder's, which holds its own: a
// tool that looks up no label for a while frees the table (~6 bytes a
// label, 11 MB at 2M labels) in between, and the next lookup or Encoder
// builds it again. Not safe while another goroutine looks labels up.
func (c *Column) ForgetIndex() {
	if c.index != nil {
		c.index.forget()
	}
}

// Labels returns the K labels in index order, in a new slice.
func (c *Column) Labels() []string { return c.labels.strings() }

// Dictionary returns the K labels as a table dictionary (code i standing
// for label i) that shares the column's memory.
func (c *Column) Dictionary() *table.Labels { return table.LabelsOfText(c.labels.text, c.labels.offs) }

// DictionaryWith is Dictionary with the labels extra after the K labels
// (codes K, K+1, …): the outputs of a stage that writes values of its own
// besides the column's (ddps's ⊥0, "(none)"). The column's labels move
// into the dictionary's memory — their text copied once, the old copy
// left to the collector — so that the column and the dictionary share
// it: at 1M labels a dictionary of its own was ~12 MB more, held for the
// whole run. Copies of c made before (Codebook.Select's) keep the old
// memory; call it before c is shared between goroutines.
func (c *Column) DictionaryWith(extra ...string) (*table.Labels, error) {
	k := c.K()
	size := len(c.labels.text)
	for _, l := range extra {
		size += len(l)
	}
	if size > math.MaxInt32 {
		return nil, fmt.Errorf("column %s: labels of %d bytes in all, more than the limit of 2 GiB", c.name, size)
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(c.labels.text)
	offs := make([]int32, k+1, k+1+len(extra))
	copy(offs, c.labels.offs)
	for _, l := range extra {
		b.WriteString(l)
		offs = append(offs, int32(b.Len()))
	}
	text := b.String()
	c.labels = labelList{text: text[:len(c.labels.text)], offs: offs[:k+1]}
	if c.index != nil {
		c.index.labels = c.labels // the same labels, in the new memory
	}
	return table.LabelsOfText(text, offs), nil
}

// ReadLabels is the labels that a table reader codes c's cells with as it
// parses them (table.ReadOptions.Labels, table.CodeCSVColumns), or nil
// for a numeric column or one of more than table.MaxReadLabels labels.
func (c *Column) ReadLabels() *table.Labels {
	if c.IsNumeric() || c.K() > table.MaxReadLabels {
		return nil
	}
	return c.Dictionary()
}

// ReadLabels is Column.ReadLabels of the columns among names, by name,
// for those that have them. Names the codebook lacks are left out.
func (cb *Codebook) ReadLabels(names []string) map[string]*table.Labels {
	labels := map[string]*table.Labels{}
	for _, name := range names {
		if c, ok := cb.Column(name); ok {
			if l := c.ReadLabels(); l != nil {
				labels[name] = l
			}
		}
	}
	return labels
}

// IsNumeric reports whether the column buckets numbers by cut points.
func (c *Column) IsNumeric() bool { return c.cuts != nil }

// Cuts returns a copy of a numeric column's cut points (nil if categorical).
func (c *Column) Cuts() []float64 { return slices.Clone(c.cuts) }

// MissingIndex returns the index of the missing category, if the column has
// one.
func (c *Column) MissingIndex() (int, bool) { return c.missing, c.missing >= 0 }

// MissingToken returns the missing-value token (the missing category's
// label), if the column has one.
func (c *Column) MissingToken() (string, bool) {
	if c.missing < 0 {
		return "", false
	}
	return c.labels.at(c.missing), true
}

// Spec returns the column in canonical file form: a missing token that is the
// last category is not listed among the categories, and generated bucket
// labels are left out. NewColumn(c.Spec()) rebuilds an equal column.
func (c *Column) Spec() Spec {
	s := Spec{Name: c.name}
	tok, hasMissing := c.MissingToken()
	if hasMissing {
		s.Missing = tok
	}
	if c.cuts == nil {
		s.Categories = c.labels.strings()
		if hasMissing && c.missing == c.labels.len()-1 {
			s.Categories = s.Categories[:c.missing]
		}
		return s
	}
	s.Cuts = slices.Clone(c.cuts)
	buckets := c.labels.strings()[:len(c.cuts)+1]
	if !slices.Equal(buckets, bucketLabels(c.cuts)) {
		s.Labels = buckets
	}
	return s
}

// New returns a codebook of the given columns, in order. Column names must be
// distinct.
func New(columns ...Column) (*Codebook, error) {
	if err := checkColumns(columns); err != nil {
		return nil, fmt.Errorf("codebook.New: %w", err)
	}
	return &Codebook{Columns: columns}, nil
}

func checkColumns(columns []Column) error {
	if len(columns) == 0 {
		return fmt.Errorf("no columns; a codebook needs at least one")
	}
	seen := make(map[string]int, len(columns))
	for i := range columns {
		c := &columns[i]
		if c.labels.offs == nil {
			return fmt.Errorf("column #%d was not built by NewColumn or Parse", i+1)
		}
		if j, dup := seen[c.name]; dup {
			return fmt.Errorf("column %q appears twice (#%d and #%d); each column needs one codebook, remove one", c.name, j+1, i+1)
		}
		seen[c.name] = i
	}
	return nil
}

// Column returns the column called name. A codebook has a handful of
// columns, so this is a linear scan; keep the *Column for hot loops.
func (cb *Codebook) Column(name string) (*Column, bool) {
	for i := range cb.Columns {
		if cb.Columns[i].name == name {
			return &cb.Columns[i], true
		}
	}
	return nil, false
}

// Names returns the column names in order.
func (cb *Codebook) Names() []string {
	names := make([]string, len(cb.Columns))
	for i := range cb.Columns {
		names[i] = cb.Columns[i].name
	}
	return names
}

// Select returns a codebook of the named columns, in the order given.
func (cb *Codebook) Select(names []string) (*Codebook, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("codebook.Select: no column names given")
	}
	out := &Codebook{Columns: make([]Column, 0, len(names))}
	for i, name := range names {
		c, ok := cb.Column(name)
		if !ok {
			return nil, fmt.Errorf("codebook.Select: no column %q in the codebook (known: %s)", name, strings.Join(cb.Names(), ", "))
		}
		if j := slices.Index(names[:i], name); j >= 0 {
			return nil, fmt.Errorf("codebook.Select: column %q is asked for twice (#%d and #%d)", name, j+1, i+1)
		}
		out.Columns = append(out.Columns, *c)
	}
	return out, nil
}

// Unindexed is cb with columns that share its labels but not its label
// index: what holds a codebook only to write it out (a metadata item made
// when the output is committed, release.CodebookItem) keeps the labels
// alive, not the index the run's lookups built (11 MB at 2M labels).
func (cb *Codebook) Unindexed() *Codebook {
	out := &Codebook{Columns: slices.Clone(cb.Columns)}
	for i := range out.Columns {
		c := &out.Columns[i]
		c.index = newLazyIndex(c.labels, nil)
	}
	return out
}

// hashVersion starts the hashed encoding; change it whenever the encoding or
// the meaning of a codebook (bucket rules, label generation) changes.
const hashVersion = "pramkit-codebook-v1\n"

// Hash returns the SHA-256 (hex) of a canonical encoding of the codebook's
// columns, in order, so that parties can check that they use the same
// codebook. To fingerprint some columns only, Select them first.
//
// The encoding holds what determines value indices — per column its name,
// all K labels, the cut points of a numeric column and the index of the
// missing category — one compact JSON object per line after a version line:
//
//	pramkit-codebook-v1
//	{"name":"age","labels":["<25","25-34",…,"65+"],"cuts":[25,35,45,55,65]}
//	{"name":"workclass","labels":["Private",…,"?"],"missing":8}
//
// It ignores the file's layout and how it was written: codebooks that encode
// every value to the same index (for example a generated label written out
// explicitly, or the missing token listed last versus appended) hash alike.
func (cb *Codebook) Hash() string {
	h := sha256.New()
	h.Write([]byte(hashVersion))
	var b []byte
	for i := range cb.Columns {
		c := &cb.Columns[i]
		b = append(b, `{"name":`...)
		b = appendString(b, c.name)
		b = append(b, `,"labels":[`...)
		for i := range c.labels.len() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, c.labels.at(i))
			if len(b) >= 64<<10 {
				// A large column's labels go to the hash in pieces.
				h.Write(b)
				b = b[:0]
			}
		}
		b = append(b, ']')
		if c.cuts != nil {
			b = append(b, `,"cuts":`...)
			b = appendNumbers(b, c.cuts, ",")
		}
		if c.missing >= 0 {
			b = append(b, `,"missing":`...)
			b = fmt.Appendf(b, "%d", c.missing)
		}
		b = append(b, "}\n"...)
		h.Write(b)
		b = b[:0]
	}
	return hex.EncodeToString(h.Sum(nil))
}
