package bitflip

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Kind says how a column is encoded as bits.
type Kind int

const (
	// OneHot encodes a categorical column as one bit per codebook label,
	// the bit of the row's value set and all others clear.
	OneHot Kind = iota
	// Binary encodes a two-valued column as a single bit: Labels[0] is 0,
	// Labels[1] is 1.
	Binary
)

func (k Kind) String() string {
	switch k {
	case OneHot:
		return "one-hot"
	case Binary:
		return "binary"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// MarshalText writes the kind as a layout's JSON does: "one-hot" or "binary".
func (k Kind) MarshalText() ([]byte, error) {
	if k != OneHot && k != Binary {
		return nil, fmt.Errorf("bitflip.Kind.MarshalText: unknown kind %d", int(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText reads "one-hot" or "binary".
func (k *Kind) UnmarshalText(b []byte) error {
	switch string(b) {
	case OneHot.String():
		*k = OneHot
	case Binary.String():
		*k = Binary
	default:
		return fmt.Errorf("bitflip.Kind.UnmarshalText: kind %q is not %s or %s", b, Binary, OneHot)
	}
	return nil
}

// Group is one column of a record's bit vector.
type Group struct {
	Name   string   // Required. Column name, unique in the layout.
	Kind   Kind     // OneHot (default) or Binary.
	Labels []string // Required. The codebook: ≥ 1 labels for OneHot, exactly 2 for Binary.
}

// Width returns the number of bits the group occupies.
func (g Group) Width() int {
	if g.Kind == Binary {
		return 1
	}
	return len(g.Labels)
}

// Layout places columns side by side in a bit vector: group j occupies bits
// [Offset(j), Offset(j) + Width) and L = Σ widths. It is immutable.
type Layout struct {
	groups  []Group
	offsets []int
	width   int
	maxDist int
}

// NewLayout returns the layout of groups, in order.
func NewLayout(groups []Group) (*Layout, error) {
	if len(groups) == 0 {
		return nil, fmt.Errorf("bitflip.NewLayout: no groups")
	}
	l := &Layout{groups: make([]Group, len(groups)), offsets: make([]int, len(groups))}
	seen := make(map[string]bool, len(groups))
	for j, g := range groups {
		if g.Name == "" {
			return nil, fmt.Errorf("bitflip.NewLayout: group %d has no name", j)
		}
		if seen[g.Name] {
			return nil, fmt.Errorf("bitflip.NewLayout: group name %q used twice", g.Name)
		}
		seen[g.Name] = true
		switch g.Kind {
		case OneHot:
			if len(g.Labels) < 1 {
				return nil, fmt.Errorf("bitflip.NewLayout: one-hot group %q has no labels", g.Name)
			}
			if len(g.Labels) >= 2 {
				l.maxDist += 2 // changing the value clears one bit and sets another
			}
		case Binary:
			if len(g.Labels) != 2 {
				return nil, fmt.Errorf("bitflip.NewLayout: binary group %q needs exactly 2 labels, got %d", g.Name, len(g.Labels))
			}
			l.maxDist++
		default:
			return nil, fmt.Errorf("bitflip.NewLayout: group %q has unknown kind %d", g.Name, int(g.Kind))
		}
		labels := make(map[string]bool, len(g.Labels))
		for _, lab := range g.Labels {
			if labels[lab] {
				return nil, fmt.Errorf("bitflip.NewLayout: group %q lists label %q twice", g.Name, lab)
			}
			labels[lab] = true
		}
		g.Labels = append([]string(nil), g.Labels...)
		l.groups[j] = g
		l.offsets[j] = l.width
		l.width += g.Width()
	}
	if l.width > MaxBits {
		return nil, fmt.Errorf("bitflip.NewLayout: %d bits exceed MaxBits = %d", l.width, MaxBits)
	}
	return l, nil
}

// Width returns L, the total number of bits.
func (l *Layout) Width() int { return l.width }

// Words returns ⌈L/64⌉, the length of an encoded row.
func (l *Layout) Words() int { return (l.width + 63) / 64 }

// NumGroups returns the number of groups.
func (l *Layout) NumGroups() int { return len(l.groups) }

// Group returns group j (its Labels slice must not be modified).
func (l *Layout) Group(j int) Group { return l.groups[j] }

// Offset returns the index of group j's first bit.
func (l *Layout) Offset(j int) int { return l.offsets[j] }

// BitName returns the name of bit i in a release: "group=label", the label
// whose presence the bit records (a binary group's second label, the one
// encoded as 1). perturb names the bit columns so and estimate finds them
// by these names.
func (l *Layout) BitName(i int) string {
	// The group of bit i: the last one starting at or before i.
	j, found := slices.BinarySearch(l.offsets, i)
	if !found {
		j--
	}
	g := &l.groups[j]
	if g.Kind == Binary {
		return g.Name + "=" + g.Labels[1]
	}
	return g.Name + "=" + g.Labels[i-l.offsets[j]]
}

// bitNames returns the names of group j's bits, in order.
func (l *Layout) bitNames(j int) []string {
	names := make([]string, l.groups[j].Width())
	for b := range names {
		names[b] = l.BitName(l.offsets[j] + b)
	}
	return names
}

// MaxDistance returns the largest Hamming distance between two valid
// encodings: 2 per one-hot group of width ≥ 2, 1 per binary group.
func (l *Layout) MaxDistance() int { return l.maxDist }

// Encode writes the bit vector of a record into row (Words() words, cleared
// first). values[j] is the codebook index of group j's value: a label index
// for OneHot, 0 or 1 for Binary.
func (l *Layout) Encode(values []int, row []uint64) error {
	if len(values) != len(l.groups) {
		return fmt.Errorf("bitflip.Layout.Encode: %d values for %d groups", len(values), len(l.groups))
	}
	if len(row) != l.Words() {
		return fmt.Errorf("bitflip.Layout.Encode: row has %d words, want %d", len(row), l.Words())
	}
	clear(row)
	for j, v := range values {
		g := &l.groups[j]
		if v < 0 || v >= len(g.Labels) {
			return fmt.Errorf("bitflip.Layout.Encode: group %q: value index %d outside [0, %d)", g.Name, v, len(g.Labels))
		}
		i := l.offsets[j]
		if g.Kind == OneHot {
			i += v
		} else if v == 0 {
			continue
		}
		row[i/64] |= 1 << (i % 64)
	}
	return nil
}

// Bit reports whether bit i of row is set.
func Bit(row []uint64, i int) bool { return row[i/64]>>(i%64)&1 == 1 }

// SetBit sets bit i of row to b.
func SetBit(row []uint64, i int, b bool) {
	if b {
		row[i/64] |= 1 << (i % 64)
	} else {
		row[i/64] &^= 1 << (i % 64)
	}
}

// layoutGroupJSON is one group of a layout's JSON form, which releases carry
// in their metadata ("layout").
type layoutGroupJSON struct {
	Name   string   `json:"name"`
	Kind   Kind     `json:"kind"`   // "binary" or "one-hot"
	Labels []string `json:"labels"` // the codebook, index order
	Bits   []string `json:"bits"`   // its bits' names (BitName), in order
}

// MarshalJSON writes the layout as a list of its groups, in order:
//
//	[{"name":"sex","kind":"binary","labels":["Female","Male"],"bits":["sex=Male"]}, …]
//
// "bits" names each group's bits (BitName), so that a reader can find the
// bit columns of a release without knowing how they are named.
func (l *Layout) MarshalJSON() ([]byte, error) {
	groups := make([]layoutGroupJSON, len(l.groups))
	for j, g := range l.groups {
		groups[j] = layoutGroupJSON{Name: g.Name, Kind: g.Kind, Labels: g.Labels, Bits: l.bitNames(j)}
	}
	return json.Marshal(groups)
}

// UnmarshalJSON reads the form MarshalJSON writes. The groups are checked as
// NewLayout checks them, and each group's "bits" must be the names of its
// bits, in order; null or an empty list is an error (a layout has groups).
func (l *Layout) UnmarshalJSON(b []byte) error {
	var groups []layoutGroupJSON
	if err := json.Unmarshal(b, &groups); err != nil {
		return fmt.Errorf("bitflip.Layout.UnmarshalJSON: %w", err)
	}
	gs := make([]Group, len(groups))
	for j, g := range groups {
		gs[j] = Group{Name: g.Name, Kind: g.Kind, Labels: g.Labels}
	}
	nl, err := NewLayout(gs)
	if err != nil {
		return fmt.Errorf("bitflip.Layout.UnmarshalJSON: %w", err)
	}
	for j, g := range groups {
		if want := nl.bitNames(j); !slices.Equal(g.Bits, want) {
			return fmt.Errorf("bitflip.Layout.UnmarshalJSON: group %q lists the bits %q, want %q", g.Name, g.Bits, want)
		}
	}
	*l = *nl
	return nil
}
