package bitflip

import (
	"fmt"
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
