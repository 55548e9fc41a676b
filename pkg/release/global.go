package release

import (
	"fmt"

	"github.com/pramkit/pramkit/pkg/table"
)

// MechanismGlobal is the "mechanism" item of anonymize --mechanism global.
const MechanismGlobal = "global"

const globalFix = "publish the original table again with anonymize"

// Global is the metadata of a global-randomization release (anonymize
// --mechanism global, Fu et al.'s mechanism A): each row keeps its
// sensitive value with probability p, else draws one uniformly from the V
// values of the column's codebook.
type Global struct {
	Sensitive []string
	// P[k] is the keep probability of sensitive column k, 0 ≤ p < 1: p = 1
	// would publish the column unchanged.
	P []float64
	// L is ℓ′ when p was set from it (retention 1/ℓ′, that is
	// p = max(0, (V/ℓ′ − 1)/(V − 1))); 0 when p was given directly.
	L int
}

// CheckKeep checks a keep probability: 0 ≤ p < 1. p = 0 (every value
// redrawn) is allowed: it is the comparison point ℓ′ = V, private but
// carrying no information, which estimate refuses to estimate from.
func CheckKeep(p float64) error {
	switch {
	case p == 1:
		return fmt.Errorf("p = 1 keeps every value: mechanism A would publish the sensitive column unchanged, with no privacy; choose p < 1")
	case !(p >= 0 && p < 1): // also NaN
		return fmt.Errorf("p = %v is not a keep probability in [0, 1)", p)
	}
	return nil
}

// KeepForRetention returns the keep probability that makes a row retain its
// value with probability 1/ℓ′ among V values, the paper's comparison point
// (§9.4): p + (1 − p)/V = 1/ℓ′, p = max(0, (V/ℓ′ − 1)/(V − 1)).
func KeepForRetention(V, l int) float64 {
	v := float64(V)
	return max(0, (v/float64(l)-1)/(v-1))
}

// Encode stores the release's mechanism, sensitive columns, p (and
// p_per_column when the columns differ) and ℓ′ when set.
func (g Global) Encode(meta table.Meta) error {
	meta["mechanism"] = MechanismGlobal
	if err := meta.SetJSON("sensitive", g.Sensitive); err != nil {
		return err
	}
	delete(meta, "p_per_column")
	delete(meta, "l")
	if len(g.P) > 0 {
		meta.SetFloat("p", g.P[0])
		for _, p := range g.P[1:] {
			if p != g.P[0] {
				if err := meta.SetJSON("p_per_column", g.P); err != nil {
					return err
				}
				break
			}
		}
	}
	if g.L > 0 {
		meta.SetInt("l", int64(g.L))
	}
	return nil
}

// Decode reads a global release's items and checks them: at least one
// sensitive column, 0 ≤ p < 1 for each (CheckKeep), p_per_column with one
// entry per column starting with p, and, when ℓ′ is recorded, ℓ′ ≥ 2 and
// p = max(0, (V/ℓ′ − 1)/(V − 1)) with V from the codebook in the metadata.
func (g *Global) Decode(meta table.Meta, file string) error {
	f := newFields(meta, file, globalFix)
	if mech := f.str("mechanism"); f.err == nil && mech != MechanismGlobal {
		f.failf("mechanism", "metadata %q = %q is not a global release", "mechanism", mech)
	}
	g.Sensitive = nil
	f.json("sensitive", &g.Sensitive)
	p := f.float("p")
	if f.err != nil {
		return f.err
	}
	if len(g.Sensitive) == 0 {
		f.failf("sensitive", "metadata %q names no sensitive column", "sensitive")
		return f.err
	}
	if err := CheckKeep(p); err != nil {
		f.outOfRange("p", p, err.Error())
		return f.err
	}
	g.P = make([]float64, len(g.Sensitive))
	for k := range g.P {
		g.P[k] = p
	}
	if f.has("p_per_column") {
		g.P = nil
		f.json("p_per_column", &g.P)
		switch {
		case f.err != nil:
		case len(g.P) != len(g.Sensitive):
			f.failf("p_per_column", "metadata %q has %d entries for %d sensitive columns", "p_per_column", len(g.P), len(g.Sensitive))
		case g.P[0] != p:
			f.mismatch("p_per_column", g.P[0], "\"p\" = %v (the first column's keep probability)", p)
		}
		for k, pk := range g.P {
			if err := CheckKeep(pk); err != nil && f.err == nil {
				f.outOfRange("p_per_column", pk, fmt.Sprintf("column %q: %v", g.Sensitive[k], err))
			}
		}
	}
	g.L = 0
	if !f.has("l") || f.err != nil {
		return f.err
	}
	l := f.int("l")
	if f.err == nil && (l < 2 || l > maxInt32) {
		f.outOfRange("l", l, "ℓ′ ≥ 2")
	}
	if f.err != nil {
		return f.err
	}
	g.L = int(l)
	cb := f.codebook(KeyCodebook)
	if f.err != nil {
		return f.err
	}
	key := "p"
	if meta["p_per_column"] != "" {
		key = "p_per_column"
	}
	for k, name := range g.Sensitive {
		col, ok := cb.Column(name)
		if !ok {
			f.failf("codebook", "the codebook in the metadata has no column %q", name)
			return f.err
		}
		V := col.K()
		if V < g.L {
			f.outOfRange("l", g.L, fmt.Sprintf("ℓ′ ≤ V = %d, the values of %q", V, name))
			return f.err
		}
		if want := KeepForRetention(V, g.L); !agree(g.P[k], want) {
			f.mismatch(key, g.P[k], "ℓ′ = %d, V = %d for %q (p = max(0, (V/ℓ′ − 1)/(V − 1)) = %v)", g.L, V, name, want)
			return f.err
		}
	}
	return f.err
}
