package anonymize

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// twoPass reports whether the run publishes with A′ (or Anatomy), which
// reads the input twice (package anonymize's Plan).
func (o *Options) twoPass() bool {
	if o.Check || (o.Report && table.IsStdio(o.Output.Path)) {
		return false
	}
	return o.Mechanism == diverted || o.Mechanism == anatomy
}

// spoolStdin copies standard input to a private temporary file, so that
// the two passes can read it twice; the returned function removes it.
func (o *Options) spoolStdin() (string, func(), error) {
	dir, err := os.MkdirTemp("", "pramkit-anonymize-*")
	if err != nil {
		return "", func() {}, fmt.Errorf("stdin: cannot make a temporary folder to read it twice: %w", err)
	}
	cleanup := func() { os.RemoveAll(dir) }
	path := filepath.Join(dir, "stdin")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		cleanup()
		return "", func() {}, fmt.Errorf("stdin: cannot spool it to a temporary file: %w", err)
	}
	in := o.Streams.In
	if in == nil {
		in = os.Stdin
	}
	if _, err := io.Copy(f, in); err != nil {
		f.Close()
		cleanup()
		return "", func() {}, fmt.Errorf("stdin: cannot spool it to a temporary file (in %s; set TMPDIR to a folder with room): %w", os.TempDir(), err)
	}
	if err := f.Close(); err != nil {
		cleanup()
		return "", func() {}, fmt.Errorf("stdin: cannot spool it to a temporary file: %w", err)
	}
	return path, cleanup, nil
}

// namedReader is a reader of the spooled standard input, named "stdin" in
// messages.
type namedReader struct {
	table.Reader
	name string
}

func (r namedReader) Name() string { return r.name }

// open opens the input, or its spooled copy, for one pass.
func (o *Options) open() (table.Reader, error) {
	if o.spooled == "" {
		return table.Open(o.Input, table.ReadOptions{Stdin: o.Streams.In, BatchSize: o.batchSize})
	}
	in, err := table.Open(o.spooled, table.ReadOptions{BatchSize: o.batchSize})
	if err != nil {
		return nil, err
	}
	return namedReader{in, "stdin"}, nil
}

// splitRand returns a source for the shuffle of the published rows,
// seeded from r: the rows' randomization draws from r in row order and the
// shuffle from its own stream, so that a seeded run gives the same output
// whatever the batch size.
func splitRand(r *rand.Rand) *rand.Rand {
	var seed [32]byte
	for i := 0; i < 32; i += 8 {
		u := r.Uint64()
		for j := range 8 {
			seed[i+j] = byte(u >> (8 * j))
		}
	}
	return rand.New(rand.NewChaCha8(seed))
}

// pass is one pass over the input: per kept row (a row no --missing drop
// removes), its value index in every sensitive column.
func (g *globalRun) pass(in table.Reader, row func(rec arrow.RecordBatch, i int, vals []uint32) error) error {
	g.missing = 0
	vals := make([]uint32, len(g.sens))
	for {
		rec, err := in.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		for j, k := range g.which {
			if k >= 0 {
				g.sensCols[k] = g.sens[k].in.column(rec.Column(j))
			} else {
				g.cells[j] = table.ValuesOf(rec.Column(j))
			}
		}
		kept, err := g.keptRows(int(rec.NumRows()), in.RowsRead()-rec.NumRows()+1, in.Name())
		if err != nil {
			return err
		}
		for _, i := range kept {
			for k, c := range g.sensCols {
				code, _ := c.code(i)
				vals[k] = uint32(g.sens[k].index[code])
			}
			if err := row(rec, i, vals); err != nil {
				return err
			}
		}
	}
	if in.RowsRead() == 0 {
		return fmt.Errorf("%s has no data rows: nothing to anonymize", in.Name())
	}
	if in.RowsRead() == g.missing {
		return fmt.Errorf("%s: every row has a missing sensitive value and --missing drop removed them all: nothing to anonymize", in.Name())
	}
	return nil
}

// countPass is pass 1 of A′ and Anatomy: it counts the sensitive values
// and draws the rows to drop (Plan.Count), then checks eligibility and
// computes the schedules (Plan.Finish). The returned dataset holds what the
// messages and --report need: the names, the sensitive columns, the
// counts of the published rows and the rows --missing drop removed.
func (o *Options) countPass(in table.Reader, cb *codebook.Codebook, r *rand.Rand) (*globalRun, *anonymize.Plan, *dataset, error) {
	g, err := o.globalColumns(in, cb)
	if err != nil {
		return nil, nil, nil, err
	}
	v := make([]int, len(g.sens))
	for k, sv := range g.sens {
		v[k] = sv.col.K()
	}
	plan, err := anonymize.NewPlan(v, o.L, anonymize.Grouping(o.Grouping))
	if err != nil {
		return nil, nil, nil, err
	}
	meter := o.Streams.Progress("anonymize: count")
	err = g.pass(in, func(rec arrow.RecordBatch, _ int, vals []uint32) error {
		if plan.Rows() >= anonymize.MaxRows-1 {
			return fmt.Errorf("%s has more than %d rows, the most anonymize handles; split the table", in.Name(), anonymize.MaxRows-1)
		}
		return plan.Count(vals, r)
	})
	meter.Add(in.RowsRead())
	meter.Done()
	if err != nil {
		return nil, nil, nil, err
	}
	d := &dataset{name: in.Name(), names: g.names, sens: g.sens, missing: g.missing, rows: plan.Rows()}
	for k := range g.sens {
		d.counts = append(d.counts, plan.Counts(k))
	}
	if err := plan.Finish(r); err != nil {
		return nil, nil, nil, d.libError(err)
	}
	return g, plan, d, nil
}

// runDiverted publishes with mechanism A′ in two passes over the input
// (package anonymize's Plan; its doc proves the law is SPEC §4's): pass 1
// counts, pass 2 publishes each row as it comes, through the bounded-memory
// shuffle unless --keep-order. Memory does not grow with the rows.
func (o *Options) runDiverted(in table.Reader, cb *codebook.Codebook) error {
	r := o.Seed.Rand(o.cmd)
	shuffleRand := splitRand(r)
	g, plan, d, err := o.countPass(in, cb, r)
	if err != nil {
		return err
	}
	n := plan.Rows() - int64(len(plan.Dropped))
	o.notes(d, len(plan.Dropped), n)
	meta, err := o.meta(cb, &release.Anonymized{Mechanism: diverted, Grouping: o.Grouping, Rows: n, Dropped: int64(len(plan.Dropped)), MissingDropped: d.missing, L: o.L})
	if err != nil {
		return err
	}
	in2, err := o.open()
	if err != nil {
		return err
	}
	defer in2.Close()
	schema := table.StringSchema(g.names)
	w, err := o.Streams.Create(o.Output, schema, meta, in.Format(), o.inputs())
	if err != nil {
		return err
	}
	defer w.Abort()
	sw, err := o.Order.Writer(w, schema, shuffleRand)
	if err != nil {
		return err
	}
	defer sw.Abort()
	rw := table.NewRowWriter(sw, schema, 0)
	defer rw.Release()
	meter := o.Streams.Progress("anonymize: publish")
	rw.OnBatch = func(rows int) { meter.Add(int64(rows)) }
	pub := make([]uint32, len(g.sens))
	bb := rw.BatchBuilder
	err = g.pass(in2, func(rec arrow.RecordBatch, i int, vals []uint32) error {
		ok, err := plan.Divert(vals, pub, r)
		if err != nil {
			return fmt.Errorf("%s: %w", in2.Name(), err)
		}
		if !ok {
			return nil
		}
		for j, k := range g.which {
			if k >= 0 {
				bb.String(j, g.sens[k].col.Label(int(pub[k])))
			} else {
				bb.String(j, g.cells[j].String(i))
			}
		}
		return rw.EndRow()
	})
	if err != nil {
		return err
	}
	if err := plan.Done(); err != nil {
		return fmt.Errorf("%s: %w", in2.Name(), err)
	}
	if err := rw.Flush(); err != nil {
		return err
	}
	meter.Done()
	if err := sw.Commit(); err != nil {
		return err
	}
	if o.Report {
		return o.printReport(d, d.counts, "the published rows")
	}
	return nil
}
