package perturb

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/progress"
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

// eachBatch calls fn with every batch of in and the row number of its
// first row (1-based), then refuses an input without data rows. Memory:
// one batch.
func eachBatch(in table.Reader, fn func(rec arrow.RecordBatch, first int64) error) error {
	if err := table.EachBatch(in, fn); err != nil {
		return err
	}
	if in.RowsRead() == 0 {
		return fmt.Errorf("%s has no data rows: nothing to randomize", in.Name())
	}
	return nil
}

// reportWriter writes a local mechanism's reports in batches of up to full
// rows and counts them on the progress meter. The caller fills row rows of
// the batch being built, then calls endRow.
type reportWriter struct {
	w     table.Writer
	meter *progress.Meter
	full  int
	batch func(rows int) arrow.RecordBatch // the batch of the first rows filled
	rows  int                              // rows filled and not written yet
}

// endRow counts a filled row and writes the batch once it is full.
func (rw *reportWriter) endRow() error {
	if rw.rows++; rw.rows == rw.full {
		return rw.flush()
	}
	return nil
}

// fill calls fn, which fills the reports, with every batch of in (see
// eachBatch), then writes the reports left.
func (rw *reportWriter) fill(in table.Reader, fn func(rec arrow.RecordBatch, first int64) error) error {
	if err := eachBatch(in, fn); err != nil {
		return err
	}
	return rw.flush()
}

// flush writes the rows filled since the last batch, if any.
func (rw *reportWriter) flush() error {
	if rw.rows == 0 {
		return nil
	}
	rec := rw.batch(rw.rows)
	defer rec.Release()
	if err := rw.w.Write(rec); err != nil {
		return err
	}
	rw.meter.Add(int64(rw.rows))
	rw.rows = 0
	return nil
}
