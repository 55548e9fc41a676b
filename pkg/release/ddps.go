package release

import (
	"fmt"
	"strings"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/ddps"
	"github.com/pramkit/pramkit/pkg/table"
)

// MechanismDDPS is the "mechanism" item of a DDPS release.
const MechanismDDPS = "ddps"

const ddpsFix = "randomize the original table again with perturb --mechanism ddps"

// Items of a DDPS release (besides mechanism, epsilon and codebook).
const (
	KeyDDPSColumn         = "column"
	KeyDDPSNoneToken      = "none_token"
	KeyDDPSNonParticipant = "non_participant"
	KeyDDPSPiS            = "pi_s"
	// KeyDDPSPiBottom holds π_⊥0..π_⊥V: a JSON list, or a single number
	// when all V + 1 masses are that number (the default and --epsilon).
	// A list starts with "[", a number never does.
	KeyDDPSPiBottom = "pi_bot"
	// KeyDDPSValues listed the labels of ⊥1..⊥V in releases before
	// contract version 4. They are always the codebook column's
	// categories but the non-participant one, in order, so the item was
	// a second copy of them (~10 MB at a million values); a release that
	// has it is still read, and refused unless it agrees with the
	// codebook.
	KeyDDPSValues = "values"
)

// DDPS is the metadata of a DDPS release (perturb --mechanism ddps, Joy):
// the column, the masses, the ε they determine, and — from the release's
// codebook — its V values.
type DDPS struct {
	Column    string
	NoneToken string // the label of output ⊥0
	// NonParticipant is the category that reports ⊥0 in round two; "" when
	// every owner holds one of the values.
	NonParticipant string
	PiS            float64 // π_s, 0 < π_s < 1
	// PiBottom is π_⊥0..π_⊥V, Σ π_⊥ + π_s = 1; nil when every output has
	// the mass PiBottomEach. Encode writes a PiBottom whose masses are all
	// equal as that one number: V + 1 copies of it in the footer took
	// 20 MB at a million values (issue 11).
	PiBottom     []float64
	PiBottomEach float64
	// Epsilon = max_v ln((π_⊥v + π_s)/π_⊥v) (ddps.Mechanism.Epsilon).
	Epsilon float64

	// Set by Decode from the "codebook" item, which the stage writes (not
	// Encode): the codebook, its column Column, whose categories but
	// NonParticipant are the values ⊥1..⊥V in codebook order, and V.
	Codebook *codebook.Codebook
	Col      *codebook.Column
	V        int
	np       int // Col's index of NonParticipant, −1 without one
}

// uniform returns the mass of every output when all are equal.
func (d *DDPS) uniform() (float64, bool) {
	if d.PiBottom == nil {
		return d.PiBottomEach, true
	}
	for _, p := range d.PiBottom[1:] {
		if p != d.PiBottom[0] {
			return 0, false
		}
	}
	return d.PiBottom[0], true
}

// Mass returns π_⊥o.
func (d *DDPS) Mass(o int) float64 {
	if d.PiBottom == nil {
		return d.PiBottomEach
	}
	return d.PiBottom[o]
}

// Label returns how output ⊥o (0..V) is written: the none token, then the
// values in codebook order.
func (d *DDPS) Label(o int) string {
	if o == 0 {
		return d.NoneToken
	}
	if x := o - 1; d.np < 0 || x < d.np {
		return d.Col.Label(x)
	}
	return d.Col.Label(o)
}

// Output returns the output of the column's category x: 1..V, or 0 for
// the non-participant category (its owners report ⊥0 in round two).
func (d *DDPS) Output(x int) int { return DDPSOutput(d.np, x) }

// DDPSOutput is the output of category x of a ddps column whose
// non-participant category is np (−1 if none): the categories but that
// one are the outputs 1..V in codebook order, np's owners report ⊥0.
func DDPSOutput(np, x int) int {
	switch {
	case np < 0 || x < np:
		return x + 1
	case x == np:
		return 0
	}
	return x
}

// Mechanism returns the mechanism the masses describe (after Decode, which
// sets V).
func (d *DDPS) Mechanism() (*ddps.Mechanism, error) {
	pb := d.PiBottom
	// ddps.New's default masses are exactly (1 − π_s)/(V + 1): uniform
	// masses equal to them need no V + 1 copies. Other uniform masses
	// (given or normalized by New) are spelled out, so that New checks
	// their sum and rebuilds the mechanism bit for bit.
	if pb == nil && d.PiBottomEach != (1-d.PiS)/float64(d.V+1) && d.V >= 1 && d.V <= ddps.MaxValues {
		pb = make([]float64, d.V+1)
		for o := range pb {
			pb[o] = d.PiBottomEach
		}
	}
	return ddps.New(ddps.Options{Values: d.V, PiS: d.PiS, PiBottom: pb, NonParticipants: d.NonParticipant != ""})
}

// Encode stores the release's items (not the stage or codebook).
func (d DDPS) Encode(meta table.Meta) error {
	meta[KeyMechanism] = MechanismDDPS
	meta[KeyDDPSColumn] = d.Column
	meta[KeyDDPSNoneToken] = d.NoneToken
	delete(meta, KeyDDPSNonParticipant)
	if d.NonParticipant != "" {
		meta[KeyDDPSNonParticipant] = d.NonParticipant
	}
	meta.SetFloat(KeyDDPSPiS, d.PiS)
	meta.SetFloat(KeyEpsilon, d.Epsilon)
	delete(meta, KeyDDPSValues)
	if each, ok := d.uniform(); ok {
		meta.SetFloat(KeyDDPSPiBottom, each)
		return nil
	}
	return meta.SetJSON(KeyDDPSPiBottom, d.PiBottom)
}

// Decode reads a DDPS release's items and checks them: a column and none
// token, a codebook with the column, at least one value, masses that
// ddps.New accepts (0 < π_s < 1, V + 1 masses π_⊥ ≥ 0 summing with π_s to
// 1, none zero where it would reveal a value), and ε against the masses.
// An older release's "values" must be the codebook's.
func (d *DDPS) Decode(meta table.Meta, file string) error {
	f := newFields(meta, file, ddpsFix)
	*d = DDPS{np: -1}
	if mech := f.str(KeyMechanism); f.err == nil && mech != MechanismDDPS {
		f.failf(KeyMechanism, "metadata %q = %q is not a ddps release", KeyMechanism, mech)
	}
	d.Column = f.nonEmpty(KeyDDPSColumn)
	d.NoneToken = f.nonEmpty(KeyDDPSNoneToken)
	d.NonParticipant = meta[KeyDDPSNonParticipant]
	d.PiS = f.float(KeyDDPSPiS)
	d.Epsilon = f.float(KeyEpsilon)
	if strings.HasPrefix(meta[KeyDDPSPiBottom], "[") {
		f.json(KeyDDPSPiBottom, &d.PiBottom)
	} else {
		d.PiBottomEach = f.float(KeyDDPSPiBottom)
	}
	if f.err != nil {
		return f.err
	}
	d.decodeValues(f)
	switch {
	case f.err != nil:
	case !(d.PiS > 0 && d.PiS < 1):
		f.outOfRange(KeyDDPSPiS, d.PiS, "the sampling mass needs 0 < π_s < 1")
	case !finite(d.Epsilon) || d.Epsilon < 0:
		f.outOfRange(KeyEpsilon, d.Epsilon, "ε must be a finite number ≥ 0")
	}
	if f.err != nil {
		return f.err
	}
	mech, err := d.Mechanism()
	if err != nil {
		f.outOfRange(KeyDDPSPiBottom, d.massesText(), err.Error())
		return f.err
	}
	if eps := mech.Epsilon(); !agree(d.Epsilon, eps) {
		f.mismatch(KeyEpsilon, d.Epsilon, "π_s = %v, π_⊥ = %v (ε = max_v ln((π_⊥v + π_s)/π_⊥v) = %v)", d.PiS, d.massesText(), eps)
	}
	return f.err
}

// decodeValues reads the codebook and its column, which fix the values
// and V, and checks an older release's "values" against them.
func (d *DDPS) decodeValues(f *fields) {
	cb := f.codebook(KeyCodebook)
	if f.err != nil {
		return
	}
	col, ok := cb.Column(d.Column)
	if !ok {
		f.failf(KeyCodebook, "the codebook in the metadata has no column %q", d.Column)
		return
	}
	if _, ok := col.LabelIndex(d.NoneToken); ok {
		f.failf(KeyCodebook, "the codebook's column %q has a category %q, the none token of output ⊥0", d.Column, d.NoneToken)
		return
	}
	d.Codebook, d.Col, d.V = cb, col, col.K()
	if d.NonParticipant != "" {
		x, ok := col.LabelIndex(d.NonParticipant)
		if !ok {
			f.failf(KeyDDPSNonParticipant, "metadata %q = %q is not a category of the codebook's column %q", KeyDDPSNonParticipant, d.NonParticipant, d.Column)
			return
		}
		d.np, d.V = x, d.V-1
	}
	if f.has(KeyDDPSValues) {
		var values []string
		if f.json(KeyDDPSValues, &values); f.err != nil {
			return
		}
		if len(values) == 0 {
			f.failf(KeyDDPSValues, "metadata %q lists no values", KeyDDPSValues)
			return
		}
		for o, v := range values[:min(len(values), d.V)] {
			if v != d.Label(o+1) {
				f.failf(KeyDDPSValues, "metadata %q disagrees with the codebook's column %q: value %d is %s, not %s", KeyDDPSValues, d.Column, o+1, table.QuoteCell(v), table.QuoteCell(d.Label(o+1)))
				return
			}
		}
		if len(values) != d.V {
			f.failf(KeyDDPSValues, "metadata %q lists %d values, the codebook's column %q %d", KeyDDPSValues, len(values), d.Column, d.V)
			return
		}
	}
	if d.V < 1 {
		f.failf(KeyCodebook, "the codebook's column %q has no value besides the non-participant one", d.Column)
	}
}

// massesText is π_⊥ for a message: the number of uniform masses ("0.16
// each"), or the list, its start only when long.
func (d *DDPS) massesText() string {
	if d.PiBottom == nil {
		return fmt.Sprintf("%v each", d.PiBottomEach)
	}
	const show = 8
	if len(d.PiBottom) <= show {
		return fmt.Sprint(d.PiBottom)
	}
	return strings.TrimSuffix(fmt.Sprint(d.PiBottom[:show]), "]") + fmt.Sprintf(" … (%d masses)]", len(d.PiBottom))
}
