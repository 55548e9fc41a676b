package perturb

import (
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// BitflipRelease is --mechanism bitflip's setup for a run that randomizes
// the rows elsewhere (pramkit-beam perturb): it checks the flags as
// perturb does and returns the metadata perturb writes for the input in
// (a representative part: its columns and metadata) — order shuffled, the
// insecure-seed marks — and the release's bit columns, so that the
// distributed release is read by estimate exactly as the tool's.
func (o *Options) BitflipRelease(in table.Reader) (table.Meta, []string, error) {
	if o.Mechanism != release.MechanismBitflip {
		return nil, nil, cli.Usagef("internal error: BitflipRelease on --mechanism %s", o.Mechanism)
	}
	if err := o.checkBitflipFlags(); err != nil {
		return nil, nil, err
	}
	if err := checkPlaintext(in, "bitflip"); err != nil {
		return nil, nil, err
	}
	su, err := o.bitflipSetup(in)
	if err != nil {
		return nil, nil, err
	}
	o.markInsecureSeed(su.meta, in)
	o.Order.Record(su.meta)
	return su.meta, su.names, nil
}

// DDPSRelease is --mechanism ddps's setup for a run that draws the
// reports elsewhere (pramkit-beam perturb), as BitflipRelease is bitflip's:
// the flags checked as perturb checks them, the metadata perturb writes for
// the input in, and the release's two columns.
func (o *Options) DDPSRelease(in table.Reader) (table.Meta, []string, error) {
	if o.Mechanism != release.MechanismDDPS {
		return nil, nil, cli.Usagef("internal error: DDPSRelease on --mechanism %s", o.Mechanism)
	}
	su, err := o.ddpsSetup()
	if err != nil {
		return nil, nil, err
	}
	if err := checkPlaintext(in, "ddps"); err != nil {
		return nil, nil, err
	}
	if _, err := columnIndex(in, su.col.Name()); err != nil {
		return nil, nil, err
	}
	o.markInsecureSeed(su.meta, in)
	o.Order.Record(su.meta)
	su.meta[release.KeyCodebook] = su.sel.CompactJSON()
	return su.meta, []string{su.col.Name() + ".round1", su.col.Name() + ".round2"}, nil
}
