package perturb

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// Input and output handling shared by the local mechanisms (bitflip.go,
// ddps.go): each reads one plaintext table row by row and writes its
// randomized reports.

// openOne opens the single input of a local mechanism, reading only the
// columns cols (a report carries only the columns it randomizes, so the
// others are never built: table.ReadOptions.Columns), and refuses tables
// that are not plaintext rows.
func (o *Options) openOne(mech string, cols []string) (table.Reader, error) {
	if len(o.Inputs) != 1 {
		return nil, cli.Usagef("--mechanism %s randomizes one table, got %d inputs", mech, len(o.Inputs))
	}
	// ReuseBuffers: runLocal's chunks are slices that hold their batch
	// until emitted, and bitflip and ddps only code cells (table.Coder
	// and the codebook's errors copy what they keep) into new reports.
	in, err := o.Streams.OpenWith(o.Inputs[0], table.ReadOptions{Columns: cols, ReuseBuffers: true})
	var ce *table.ColumnError
	if errors.As(err, &ce) && !table.IsStdio(o.Inputs[0]) {
		// A table that is not plaintext rows is refused for that first,
		// whatever columns it has.
		if whole, err2 := o.Streams.Open(o.Inputs[0]); err2 == nil {
			err2 = checkPlaintext(whole, mech)
			whole.Close()
			if err2 != nil {
				return nil, err2
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if err := checkPlaintext(in, mech); err != nil {
		in.Close()
		return nil, err
	}
	return in, nil
}

// checkPlaintext refuses a table that is not plaintext rows: encrypted
// values, pads, or a release of a local mechanism already.
func checkPlaintext(in table.Reader, mech string) error {
	meta := in.Meta()
	switch stage := meta[release.KeyStage]; {
	case stage == release.StageEncrypt || stage == release.StageKey:
		return fmt.Errorf("%s holds encrypted values or pads (stage: %s): %s is a local mechanism that each data owner runs on their own plaintext rows; give it the table before encrypt", in.Name(), stage, mech)
	case meta[release.KeyMechanism] != "":
		return fmt.Errorf("%s is already a %s release: randomizing it again would compose the privacy losses; run %s on the original table", in.Name(), meta[release.KeyMechanism], mech)
	}
	return nil
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
