package release

import (
	"fmt"

	"github.com/pramkit/pramkit/pkg/ddps"
	"github.com/pramkit/pramkit/pkg/table"
)

// MechanismDDPS is the "mechanism" item of a DDPS release.
const MechanismDDPS = "ddps"

const ddpsFix = "randomize the original table again with perturb --mechanism ddps"

// DDPS is the metadata of a DDPS release (perturb --mechanism ddps, Joy):
// the column, its V values, the masses, and the ε they determine.
type DDPS struct {
	Column    string
	NoneToken string // the label of output ⊥0
	// NonParticipant is the category that reports ⊥0 in round two; "" when
	// every owner holds one of the values.
	NonParticipant string
	Values         []string  // labels of ⊥1..⊥V
	PiS            float64   // π_s, 0 < π_s < 1
	PiBottom       []float64 // π_⊥0..π_⊥V, Σ π_⊥ + π_s = 1
	// Epsilon = max_v ln((π_⊥v + π_s)/π_⊥v) (ddps.Mechanism.Epsilon).
	Epsilon float64
}

// Mechanism returns the mechanism the masses describe.
func (d DDPS) Mechanism() (*ddps.Mechanism, error) {
	return ddps.New(ddps.Options{Values: len(d.Values), PiS: d.PiS, PiBottom: d.PiBottom, NonParticipants: d.NonParticipant != ""})
}

// Encode stores the release's items (not the stage or codebook).
func (d DDPS) Encode(meta table.Meta) error {
	meta["mechanism"] = MechanismDDPS
	meta["column"] = d.Column
	meta["none_token"] = d.NoneToken
	delete(meta, "non_participant")
	if d.NonParticipant != "" {
		meta["non_participant"] = d.NonParticipant
	}
	meta.SetFloat("pi_s", d.PiS)
	meta.SetFloat("epsilon", d.Epsilon)
	if err := meta.SetJSON("pi_bot", d.PiBottom); err != nil {
		return err
	}
	return meta.SetJSON("values", d.Values)
}

// Decode reads a DDPS release's items and checks them: a column and none
// token, at least one value, masses that ddps.New accepts (0 < π_s < 1,
// V + 1 masses π_⊥ ≥ 0 summing with π_s to 1, none zero where it would
// reveal a value), and ε against the masses.
func (d *DDPS) Decode(meta table.Meta, file string) error {
	f := newFields(meta, file, ddpsFix)
	if mech := f.str("mechanism"); f.err == nil && mech != MechanismDDPS {
		f.failf("mechanism", "metadata %q = %q is not a ddps release", "mechanism", mech)
	}
	d.Column = f.nonEmpty("column")
	d.NoneToken = f.nonEmpty("none_token")
	d.NonParticipant = meta["non_participant"]
	d.PiS = f.float("pi_s")
	d.Epsilon = f.float("epsilon")
	d.PiBottom = nil
	f.json("pi_bot", &d.PiBottom)
	d.Values = nil
	f.json("values", &d.Values)
	if f.err != nil {
		return f.err
	}
	switch {
	case len(d.Values) == 0:
		f.failf("values", "metadata %q lists no values", "values")
	case !(d.PiS > 0 && d.PiS < 1):
		f.outOfRange("pi_s", d.PiS, "the sampling mass needs 0 < π_s < 1")
	case !finite(d.Epsilon) || d.Epsilon < 0:
		f.outOfRange("epsilon", d.Epsilon, "ε must be a finite number ≥ 0")
	}
	if f.err != nil {
		return f.err
	}
	mech, err := d.Mechanism()
	if err != nil {
		f.outOfRange("pi_bot", fmt.Sprint(d.PiBottom), err.Error())
		return f.err
	}
	if eps := mech.Epsilon(); !agree(d.Epsilon, eps) {
		f.mismatch("epsilon", d.Epsilon, "π_s = %v, π_⊥ = %v (ε = max_v ln((π_⊥v + π_s)/π_⊥v) = %v)", d.PiS, d.PiBottom, eps)
	}
	return f.err
}
