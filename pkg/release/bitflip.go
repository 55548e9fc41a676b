package release

import (
	"github.com/pramkit/pramkit/pkg/bitflip"
	"github.com/pramkit/pramkit/pkg/table"
)

// MechanismBitflip is the "mechanism" item of a bitflip release.
const MechanismBitflip = "bitflip"

const bitflipFix = "randomize the original table again with perturb --mechanism bitflip"

// Bitflip is the metadata of a K-randomization release (perturb --mechanism
// bitflip): lie probability q, record length L, the bit layout, and the
// privacy losses they determine (Zhilyaev–Zeber; SPEC §5).
type Bitflip struct {
	Lie    float64 // q, 2^−64 ≤ q < 1/2
	Bits   int     // L = Layout.Width()
	Layout *bitflip.Layout
	// EpsilonPerBit = ln((1 − q)/q); EpsilonPerRecord = L·EpsilonPerBit;
	// EpsilonEncoded = D·EpsilonPerBit, D the layout's largest Hamming
	// distance between two encodings.
	EpsilonPerBit, EpsilonPerRecord, EpsilonEncoded float64
}

// NewBitflip returns the metadata of mechanism mech applied with layout l.
func NewBitflip(mech *bitflip.Mechanism, l *bitflip.Layout) (Bitflip, error) {
	enc, err := mech.EpsilonEncoded(l)
	if err != nil {
		return Bitflip{}, err
	}
	return Bitflip{Lie: mech.LieProbability(), Bits: mech.Bits(), Layout: l,
		EpsilonPerBit: mech.EpsilonBit(), EpsilonPerRecord: mech.EpsilonRecord(), EpsilonEncoded: enc}, nil
}

// Encode stores the release's items (not the stage or codebook).
func (b Bitflip) Encode(meta table.Meta) error {
	meta["mechanism"] = MechanismBitflip
	meta.SetFloat("lie", b.Lie)
	meta.SetInt("bits", int64(b.Bits))
	meta.SetFloat("epsilon_per_bit", b.EpsilonPerBit)
	meta.SetFloat("epsilon_per_record", b.EpsilonPerRecord)
	meta.SetFloat("epsilon_encoded", b.EpsilonEncoded)
	return meta.SetJSON("layout", b.Layout)
}

// Decode reads a bitflip release's items and checks them: 2^−64 ≤ q < 1/2
// (q = 0 would publish the bits unchanged), 1 ≤ L ≤ bitflip.MaxBits, a layout
// of L bits, and the three ε against q, L and the layout.
func (b *Bitflip) Decode(meta table.Meta, file string) error {
	f := newFields(meta, file, bitflipFix)
	if mech := f.str("mechanism"); f.err == nil && mech != MechanismBitflip {
		f.failf("mechanism", "metadata %q = %q is not a bitflip release", "mechanism", mech)
	}
	b.Lie = f.float("lie")
	L := f.int("bits")
	b.EpsilonPerBit = f.float("epsilon_per_bit")
	b.EpsilonPerRecord = f.float("epsilon_per_record")
	b.EpsilonEncoded = f.float("epsilon_encoded")
	b.Layout = new(bitflip.Layout)
	f.json("layout", b.Layout)
	if f.err != nil {
		return f.err
	}
	switch {
	case !(b.Lie >= 0x1p-64 && b.Lie < 0.5):
		f.outOfRange("lie", b.Lie, "the lie probability q must satisfy 2^-64 ≤ q < 1/2 (q = 0 publishes the bits unchanged)")
	case L < 1 || L > bitflip.MaxBits:
		f.outOfRange("bits", L, "the record length L must be in [1, 2^24]")
	case int64(b.Layout.Width()) != L:
		f.failf("bits", "metadata %q = %d does not match the %d bits of the layout", "bits", L, b.Layout.Width())
	}
	if f.err != nil {
		return f.err
	}
	b.Bits = int(L)
	mech, err := bitflip.New(bitflip.Options{LieProbability: b.Lie, Bits: b.Bits})
	if err != nil {
		f.failf("lie", "%v", err)
		return f.err
	}
	want, err := NewBitflip(mech, b.Layout)
	if err != nil {
		f.failf("layout", "%v", err)
		return f.err
	}
	switch {
	case !agree(b.EpsilonPerBit, want.EpsilonPerBit):
		f.mismatch("epsilon_per_bit", b.EpsilonPerBit, "q = %v (ε = ln((1−q)/q) = %v)", b.Lie, want.EpsilonPerBit)
	case !agree(b.EpsilonPerRecord, want.EpsilonPerRecord):
		f.mismatch("epsilon_per_record", b.EpsilonPerRecord, "q = %v, L = %d (ε = L·ln((1−q)/q) = %v)", b.Lie, b.Bits, want.EpsilonPerRecord)
	case !agree(b.EpsilonEncoded, want.EpsilonEncoded):
		f.mismatch("epsilon_encoded", b.EpsilonEncoded, "q = %v and the layout's largest distance D = %d (ε = D·ln((1−q)/q) = %v)", b.Lie, b.Layout.MaxDistance(), want.EpsilonEncoded)
	}
	return f.err
}
