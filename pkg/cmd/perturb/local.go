package perturb

import (
	"fmt"
	"strings"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// Input and output handling shared by the local mechanisms (bitflip.go,
// ddps.go): each reads one plaintext table row by row and writes its
// randomized reports.

// openOne opens the single input of a local mechanism and refuses tables
// that are not plaintext rows.
func (o *Options) openOne(mech string) (table.Reader, error) {
	if len(o.Inputs) != 1 {
		return nil, cli.Usagef("--mechanism %s randomizes one table, got %d inputs", mech, len(o.Inputs))
	}
	in, err := o.Streams.Open(o.Inputs[0])
	if err != nil {
		return nil, err
	}
	meta := in.Meta()
	switch stage := meta[release.KeyStage]; {
	case stage == release.StageEncrypt || stage == release.StageKey:
		in.Close()
		return nil, fmt.Errorf("%s holds encrypted values or pads (stage: %s): %s is a local mechanism that each data owner runs on their own plaintext rows; give it the table before encrypt", in.Name(), stage, mech)
	case meta[release.KeyMechanism] != "":
		in.Close()
		return nil, fmt.Errorf("%s is already a %s release: randomizing it again would compose the privacy losses; run %s on the original table", in.Name(), meta[release.KeyMechanism], mech)
	}
	return in, nil
}

// columnIndex finds a column of the input by name.
func columnIndex(in table.Reader, name string) (int, error) {
	idx := in.Schema().FieldIndices(name)
	if len(idx) == 0 {
		names := make([]string, in.Schema().NumFields())
		for i, f := range in.Schema().Fields() {
			names[i] = f.Name
		}
		return 0, fmt.Errorf("%s has no column %q (columns: %s)", in.Name(), name, strings.Join(names, ", "))
	}
	return idx[0], nil
}
