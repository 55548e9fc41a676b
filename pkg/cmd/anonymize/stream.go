package anonymize

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/progress"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/shuffle"
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

// rereadable reports whether the input can be opened a second time for
// pass 2: a regular file can; standard input, a named pipe (mkfifo, bash's
// <(…) as /dev/fd/N) or a character device cannot — reopening a pipe
// would wait for a writer that never comes.
func rereadable(input string) bool {
	if table.IsStdio(input) {
		return false
	}
	fi, err := os.Stat(input)
	// A path that cannot be stat'ed fails in Open with its own message.
	return err != nil || fi.Mode().IsRegular()
}

// spoolInput copies an input that cannot be read twice (standard input,
// a pipe) to a private temporary file, so that the two passes can read
// it; the returned function removes it.
func (o *Options) spoolInput() (string, func(), error) {
	name := table.DisplayName(o.Input)
	dir, err := os.MkdirTemp("", "pramkit-anonymize-*")
	if err != nil {
		return "", func() {}, fmt.Errorf("%s: cannot make a temporary folder to read it twice: %w", name, err)
	}
	// The copy is the sensitive input itself: a signal must not leave it.
	forget, err := table.TrackTemp(dir)
	if err != nil {
		return "", func() {}, err
	}
	cleanup := func() { os.RemoveAll(dir); forget() }
	path := filepath.Join(dir, "input")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		cleanup()
		return "", func() {}, fmt.Errorf("%s: cannot spool it to a temporary file: %w", name, err)
	}
	var in io.Reader
	if table.IsStdio(o.Input) {
		in = o.Streams.In
		if in == nil {
			in = os.Stdin
		}
	} else {
		p, err := os.Open(o.Input)
		if err != nil {
			f.Close()
			cleanup()
			return "", func() {}, fmt.Errorf("%s: %w", name, err)
		}
		defer p.Close()
		in = p
	}
	if _, err := io.Copy(f, in); err != nil {
		f.Close()
		cleanup()
		return "", func() {}, fmt.Errorf("%s: cannot spool it to a temporary file (in %s; set TMPDIR to a folder with room): %w", name, os.TempDir(), err)
	}
	if err := f.Close(); err != nil {
		cleanup()
		return "", func() {}, fmt.Errorf("%s: cannot spool it to a temporary file: %w", name, err)
	}
	return path, cleanup, nil
}

// namedReader is a reader of the spooled input, named as the input
// ("stdin", or the pipe's path) in messages.
type namedReader struct {
	table.Reader
	name string
}

func (r namedReader) Name() string { return r.name }

// readBatchRows is the rows of anonymize's input batches, below the
// other tools' table.DefaultBatchSize (65,536). anonymize holds, besides
// the batches in flight, state that grows with the sensitive values, so
// its fixed part must be small: on 4M rows with 300k sensitive values
// (--grouping anatomy), batches of 8,192 rows (a CSV is then cut into
// chunks of 512 KiB, not 1 MiB) took the peak RSS from 106 to 93 MB in
// the same time (10.4 against 11.2 s), and the 10M-row bench table ran
// as fast (5.8 s either way) with the same 79 MB.
const readBatchRows = 8192

// manyValues is the sensitive values (all columns) past which the input
// batches are of readBatchRows/2 rows. Past it the per-value state (the
// codebook, the Dealers: ~33 bytes a value) takes the live heap near the
// memory limit, where the reader's buffers decide how often the runtime
// collects: on 4M rows over 1M values, --grouping anatomy (54 MB live in
// pass 2) ran ~1,150 collections and 11.9 s of user CPU with batches of
// 8,192 rows, 91–97 and 9.0–9.8 s with 4,096, at 93–95 MB peak RSS either
// way; the random grouping (48 MB live) as fast either way.
const manyValues = 1 << 18

// readBatch is the rows per input batch: o.batchSize when a test sets it,
// else $PRAMKIT_BATCH_ROWS when set (table.BatchRows), else readBatchRows
// (half of it past manyValues sensitive values). A seeded run's output
// does not depend on it.
func (o *Options) readBatch() int {
	if o.batchSize > 0 || os.Getenv(table.BatchRowsEnv) != "" {
		return o.batchSize
	}
	if o.manyValues {
		return readBatchRows / 2
	}
	return readBatchRows
}

// open opens the input, or its spooled copy, for one pass, reading only
// the columns cols when some are given (table.ReadOptions.Columns).
func (o *Options) open(cols ...string) (table.Reader, error) {
	if o.beforeOpen != nil {
		o.beforeOpen()
	}
	opt := table.ReadOptions{BatchSize: o.readBatch(), Columns: cols, DictColumns: o.dictCols, Labels: o.readLabels}
	path := o.spooled
	if path == "" {
		opt.Stdin = o.Streams.In
		path = o.Input
	}
	var in table.Reader
	err := o.sameInput(path, func() (err error) {
		in, err = table.Open(path, opt)
		return err
	})
	switch {
	case err != nil:
		if in != nil {
			in.Close()
		}
		return nil, err
	case o.spooled == "":
		return in, nil
	}
	return namedReader{in, table.DisplayName(o.Input)}, nil
}

// sameInput runs open, which opens the file at path, and checks that the
// file is the one the first open found — the same file (device and
// inode), size and modification time, before and after open — so that
// the passes read one table. Another job that replaced or rewrote the
// input between them would otherwise have its rows published with the
// first pass's sensitive values (pass 2 reads them back from the codes
// spool when there are many, codeSpool) or counts. Standard input is
// spooled to a private file, checked the same way.
func (o *Options) sameInput(path string, open func() error) error {
	if table.IsStdio(path) {
		return open()
	}
	before, statErr := os.Stat(path)
	if err := open(); err != nil || statErr != nil {
		return err // the open's error names the file
	}
	after, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: %w", table.DisplayName(o.Input), err)
	}
	for _, st := range []os.FileInfo{before, after} {
		if o.inputID == nil {
			o.inputID = st
			continue
		}
		if !os.SameFile(o.inputID, st) || st.Size() != o.inputID.Size() || !st.ModTime().Equal(o.inputID.ModTime()) {
			return fmt.Errorf("%s changed while anonymize read it (it was replaced or written between its passes): another job writes it; run anonymize again once nothing does", table.DisplayName(o.Input))
		}
	}
	return nil
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

// divertedMemoryLimit is A′'s soft memory limit, below cli.MemoryLimit: its
// live heap is about 28 MiB at 10M rows (an input batch, the shuffle's
// spill buffers or the bucket being emitted, a Parquet batch), so under
// cli.MemoryLimit the heap grew to the limit between collections and the
// peak RSS, with ~28 MB of the binary's text on top, was 93–99 MB at 10M
// rows. At 48 MiB it is 73 MB on 1M rows (89 MB before) and 79 MB on 10M,
// for about 8 % more CPU (collections twice as often).
const divertedMemoryLimit = 48 << 20

// anatomyMemoryLimit is --mechanism anatomy's soft memory limit. Its two
// shuffles hold 4 MiB each (shuffleBudget) and its two writers a row
// group each. Under divertedMemoryLimit the runtime gave freed pages back
// and faulted them in again all the time (1M rows: 130 MB scavenged
// eagerly, 55k page faults, 1.3 s of system time in a 2.5 s run; 10M:
// 385k faults, 29.6 s); under cli.MemoryLimit the peak RSS was 91–96 MB
// at 1M and 10M rows (10M in 19.7 s), too near 100 MB. At 56 MiB: 1M rows
// in 1.8 s at 87 MB instead of 2.5 s at 75–82 MB, 10M rows in 25.5 s at
// 87 MB.
const anatomyMemoryLimit = 56 << 20

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
		kept, err := g.batchRows(rec, in)
		if err != nil {
			return err
		}
		for n, i := range kept {
			for k := range g.sensCols {
				vals[k] = g.idx[k][n]
			}
			if err := row(rec, i, vals); err != nil {
				return err
			}
		}
		if g.batchDone != nil {
			if err := g.batchDone(rec); err != nil {
				return err
			}
		}
	}
	if g.codesIn != nil {
		if err := g.codesIn.finish(); err != nil {
			return fmt.Errorf("%s: %w", in.Name(), err)
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

// batchRows lists the rows of batch rec (of in) that --missing drop
// keeps, with their value indexes in g.idx (keptRows): looked up, or read
// back from g.codesIn when pass 1 spooled them, and then the sensitive
// columns of rec are not read. When g.codesOut is set, it writes them
// there.
func (g *globalRun) batchRows(rec arrow.RecordBatch, in table.Reader) ([]int, error) {
	n := int(rec.NumRows())
	for j, k := range g.which {
		switch {
		case k < 0:
			g.cells[j] = table.ValuesOf(rec.Column(j))
		case g.codesIn == nil:
			g.sensCols[k] = g.sens[k].column(rec.Column(j))
		}
	}
	if g.codesIn != nil {
		kept, missing, err := g.codesIn.readRows(n, g.kept[:0], g.idx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.Name(), err)
		}
		g.kept, g.missing = kept, g.missing+missing
		return kept, nil
	}
	kept, err := g.keptRows(n, in.RowsRead()-rec.NumRows()+1, in.Name())
	if err != nil {
		return nil, err
	}
	if g.codesOut != nil {
		if err := g.codesOut.write(n, kept, g.idx); err != nil {
			return nil, err
		}
	}
	return kept, nil
}

// countPass is pass 1 of A′ and Anatomy: it counts the sensitive values
// and draws the rows to drop (Plan.Count), then checks eligibility and
// computes the schedules (Plan.Finish). The returned dataset holds what the
// messages and --report need: the names, the sensitive columns, the
// counts of the published rows and the rows --missing drop removed.
// prepare, when not nil, prepares the plan before pass 1 (Plan.DivertOnly).
func (o *Options) countPass(in table.Reader, cb *codebook.Codebook, r *rand.Rand, prepare func(*anonymize.Plan)) (*globalRun, *anonymize.Plan, *dataset, error) {
	g, err := o.globalColumns(in, cb)
	if err != nil {
		return nil, nil, nil, err
	}
	v := make([]int, len(g.sens))
	values := 0
	for k, sv := range g.sens {
		v[k] = sv.col.K()
		values += v[k]
	}
	// The passes' readers, opened from here on, read smaller batches.
	o.manyValues = values > manyValues
	plan, err := anonymize.NewPlan(v, o.L, anonymize.Grouping(o.Grouping))
	if err != nil {
		return nil, nil, nil, err
	}
	if prepare != nil {
		prepare(plan)
	}
	// Pass 1 needs the sensitive columns alone: it reads them from a
	// projection of the input (the other columns are checked but never
	// built), sharing g's sensitive columns so that the codes it interns
	// are pass 2's. in itself is left unread. A CSV input's categorical
	// sensitive columns come coded from the parsing goroutines.
	o.readLabels = map[string]*table.Labels{}
	for _, sv := range g.sens {
		if l := sv.readLabels(); l != nil {
			o.readLabels[sv.name] = l
		}
	}
	in1, err := o.open(o.Sensitive...)
	if err != nil {
		return nil, nil, nil, err
	}
	close1 := closeOnce(in1) // once pass 1 ends
	defer close1()
	g1, err := o.globalColumns(in1, cb)
	if err != nil {
		return nil, nil, nil, err
	}
	g1.sens = g.sens
	if values > o.codeSpoolLabels() {
		if g1.codesOut, err = newCodeSpool(len(g.sens)); err != nil {
			return nil, nil, nil, err
		}
		// Pass 2's, once written; closed here on failure, else by
		// the caller (globalRun.closeSpool).
		defer func() {
			if g.codesIn == nil {
				g1.codesOut.close()
			}
		}()
	}
	meter := o.Streams.Progress("anonymize: count")
	err = g1.pass(in1, func(rec arrow.RecordBatch, _ int, vals []uint32) error {
		if plan.Rows() >= anonymize.MaxRows-1 {
			return fmt.Errorf("%s has more than %d rows, the most anonymize handles; split the table", in.Name(), anonymize.MaxRows-1)
		}
		return plan.Count(vals, r)
	})
	meter.Add(in1.RowsRead())
	meter.Done()
	if err != nil {
		return nil, nil, nil, err
	}
	// The reader's buffers go before the schedules are made.
	close1()
	if g1.codesOut != nil {
		if err := g1.codesOut.rewind(); err != nil {
			return nil, nil, nil, err
		}
	}
	d := &dataset{name: in.Name(), names: g.names, sens: g.sens, missing: g1.missing, rows: plan.Rows()}
	if o.Report {
		// Else the plan's counts may be the schedule's working memory
		// (Plan.DropCounts before Finish), and go with it.
		for k := range g.sens {
			d.counts = append(d.counts, plan.Counts(k))
		}
	}
	// Making the schedules looks up no label: the sensitive columns'
	// label tables (6 bytes a label, 11 MB at 2M labels) go, encoders and
	// all, and pass 2's encoders build them again after (~0.1 s at 2M
	// labels), so that the tables are not live beside Finish's working
	// memory (the sets it builds the schedules from), anatomy's peak.
	// Pass 2 reading pass 1's codes back needs neither.
	policies := make([]codebook.Policy, len(g.sens))
	for k, sv := range g.sens {
		policies[k] = sv.enc.Policy()
		sv.enc = nil
		sv.col.ForgetIndex()
	}
	if err := plan.Finish(r); err != nil {
		return nil, nil, nil, d.libError(err)
	}
	if g1.codesOut != nil {
		g.codesIn = g1.codesOut
		return g, plan, d, nil
	}
	for k, sv := range g.sens {
		if sv.enc, err = sv.col.Encoder(policies[k]); err != nil {
			return nil, nil, nil, err
		}
	}
	return g, plan, d, nil
}

// runDiverted publishes with mechanism A′ in two passes over the input
// (package anonymize's Plan; its doc proves the law is SPEC §4's): pass 1
// counts, pass 2 publishes each row as it comes, through the bounded-memory
// shuffle unless --keep-order. Memory does not grow with the rows.
func (o *Options) runDiverted(in table.Reader, cb *codebook.Codebook) error {
	// With cli's headroom when per-value state outgrows it; GOMEMLIMIT
	// wins, as does a lower limit in force.
	cli.LowerMemoryLimit(divertedMemoryLimit)
	r := o.Seed.Rand(o.cmd)
	shuffleRand := splitRand(r)
	// Pass 2 only diverts: the Dealers' flat sets are all it needs of the
	// schedules (half their memory on a high-cardinality column), so the
	// plan never makes the rest.
	g, plan, d, err := o.countPass(in, cb, r, func(p *anonymize.Plan) {
		p.DivertOnly()
		if !o.Report {
			p.DropCounts()
		}
	})
	if err != nil {
		return err
	}
	defer g.closeSpool()
	n := plan.Rows() - int64(len(plan.Dropped))
	o.notes(d, len(plan.Dropped), n)
	rel := &release.Anonymized{Mechanism: diverted, Grouping: o.Grouping, Rows: n, Dropped: int64(len(plan.Dropped)), MissingDropped: d.missing, L: o.L}
	// The codebook's categorical columns travel as codes too (nsaCoder),
	// through the shuffle: --keep-order writes the rows as they come,
	// and strings need no dictionary that grows between batches.
	coders := make([]*nsaCoder, len(g.which))
	// cb holds the sensitive columns alone (what the release declares);
	// the --codebook file may declare others.
	if others := o.Codebook.Others(); !o.Order.Keep && others != nil {
		if coders, err = nsaCoders(in.Schema(), g.which, others); err != nil {
			return err
		}
		for j, c := range coders {
			if c != nil {
				o.dictCols = append(o.dictCols, g.names[j])
				if c.k <= table.MaxReadLabels {
					o.readLabels[g.names[j]] = c.read
				}
			}
		}
	}
	in2, err := o.open()
	if err != nil {
		return err
	}
	defer in2.Close()
	// The sensitive columns travel as codes over their codebook's labels
	// (table.Labels): 4 bytes a cell through the shuffle instead of a
	// string, and the Parquet writer takes them as dictionary pages
	// without hashing a label per row.
	schema := table.StringSchema(g.names)
	labels := make([]*table.Labels, len(g.sens))
	fields := schema.Fields()
	for j, k := range g.which {
		if k >= 0 {
			labels[k] = g.sens[k].dictionary()
			fields[j] = table.DictField(g.names[j])
		}
		if coders[j] != nil {
			fields[j] = table.DictField(g.names[j])
		}
	}
	schema = arrow.NewSchema(fields, nil)
	fw, err := o.createLate(schema, func() (table.Meta, error) { return o.meta(cb, rel) }, in.Format())
	if err != nil {
		return err
	}
	defer fw.Abort()
	// Three stages run side by side: reading and dealing, the shuffle
	// (asyncWriter), and encoding the output, which needs no asyncWriter of
	// its own: the shuffle emits on a goroutine of its own, and Parquet
	// encodes on one too (each queue held batches: 120 MB peak RSS).
	relabel := func(j int, dict arrow.Array) (arrow.Array, []int32) {
		if c := coders[j]; c != nil {
			return sortExtras(c.k, dict)
		}
		return dict, nil
	}
	ow, err := o.shuffled(fw, schema, shuffleRand, shuffleBudget, relabel)
	if err != nil {
		return err
	}
	defer ow.Abort()
	sw := newAsyncWriter(ow)
	defer sw.Abort()
	meter := o.Streams.Progress("anonymize: publish")
	pw := &publisher{g: g, schema: schema, w: sw, meter: meter, labels: make([][]uint32, len(g.sens)), dicts: labels, coders: coders, in: in2}
	pub := make([]uint32, len(g.sens))
	g.batchDone = pw.flush
	err = g.pass(in2, func(rec arrow.RecordBatch, i int, vals []uint32) error {
		ok, err := plan.Divert(vals, pub, r)
		if err != nil {
			return fmt.Errorf("%s: %w", in2.Name(), err)
		}
		if ok {
			pw.rows = append(pw.rows, i)
			for k, y := range pub {
				pw.labels[k] = append(pw.labels[k], y)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := plan.Done(); err != nil {
		return fmt.Errorf("%s: %w", in2.Name(), err)
	}
	meter.Done()
	// The Dealers are garbage now: the output (its metadata, and as much
	// again while it is encoded) takes their place, before the shuffle
	// writes to it. A collection first, so that it reuses their memory
	// rather than grow the heap to the limit before one: 1M values, peak
	// RSS 98–100 → 93 MB (anatomy grouping 101–103 → 96), for one
	// collection of a ~35 MB heap.
	if lw, ok := fw.(*lateWriter); ok {
		plan = nil
		runtime.GC()
		if err := lw.open(); err != nil {
			return err
		}
	}
	if err := sw.Commit(); err != nil {
		return err
	}
	if o.Report {
		return o.printReport(d, d.counts, "the published rows")
	}
	return nil
}

// publisher writes A′'s published rows one input batch at a time: the
// non-sensitive columns are the input's own arrays when they are text and
// no row of the batch is left out (the usual case), else copied; the
// sensitive columns are the published codes over the codebook's labels.
type publisher struct {
	g      *globalRun
	schema *arrow.Schema
	w      table.Writer
	meter  *progress.Meter
	rows   []int      // the input batch's published rows
	labels [][]uint32 // per sensitive column, their published values
	dicts  []*table.Labels
	coders []*nsaCoder  // per input column: the non-sensitive columns published as codes
	in     table.Reader // the pass's input, for messages
}

// flush writes the published rows of input batch rec (globalRun.batchDone).
func (p *publisher) flush(rec arrow.RecordBatch) error {
	if len(p.rows) == 0 {
		return nil
	}
	n := len(p.rows)
	defer func() {
		p.rows = p.rows[:0]
		for k := range p.labels {
			p.labels[k] = p.labels[k][:0]
		}
	}()
	whole := n == int(rec.NumRows())
	cols := make([]arrow.Array, len(p.g.which))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for j, k := range p.g.which {
		if k >= 0 {
			// A copy: the batch waits in the writer's queue while
			// p.labels fills with the next batch's codes.
			cols[j] = p.dicts[k].Column(slices.Clone(p.labels[k]))
			continue
		}
		if c := p.coders[j]; c != nil {
			// Codes of their own: the batch waits in the writer's queue.
			codes := make([]uint32, n)
			rows := p.rows
			if whole {
				rows = nil
			}
			if err := c.codes(codes, rec.Column(j), rows); err != nil {
				var at *cellError
				if errors.As(err, &at) {
					return &table.DataError{File: p.in.Name(), Row: p.in.RowsRead() - rec.NumRows() + 1 + int64(at.i), Column: c.name, Err: at.err}
				}
				return err
			}
			cols[j] = c.column(codes)
			continue
		}
		if a, ok := rec.Column(j).(*array.String); ok && whole {
			a.Retain()
			cols[j] = a
			continue
		}
		b := array.NewStringBuilder(memory.DefaultAllocator)
		b.Reserve(n)
		for _, i := range p.rows {
			b.Append(p.g.cells[j].String(i))
		}
		cols[j] = b.NewArray()
		b.Release()
	}
	out := array.NewRecordBatch(p.schema, cols, int64(n))
	defer out.Release()
	if err := p.w.Write(out); err != nil {
		return err
	}
	p.meter.Add(int64(n))
	return nil
}

// runAnatomy publishes the Anatomy baseline: the rows with a group id
// instead of the sensitive value, and the sensitive table (group, value,
// count) to --groups, with the groups of --grouping.
//
// It streams like A′ (runDiverted): pass 1 counts and schedules; the
// sensitive table is the schedule written out (the groups of set type t
// are numbered consecutively, each listing its ℓ values with count 1);
// pass 2 deals each row a set type. The row's group within its type must
// be a uniformly random one of the type's groups, independently for each
// value (SPEC §4: a value's rows fill its groups in the order of random
// ids). So the dealt rows go through a first uniform shuffle and are
// numbered on the way out: the j-th row of value v and type t to come out
// goes to the type's j-th group. A uniform shuffle puts each (type,
// value)'s rows in a uniformly random order, independently of the others,
// which makes that numbering a uniformly random bijection, as in §4. The
// numbered rows then go through a second, independent shuffle: coming out
// in the first shuffle's order, the group ids of each value would be
// increasing along the output, telling which rows hold different values.
// Memory: two shuffles' budgets and the plan's Dealer, whose (value, type)
// pairs count the rows numbered once pass 2 has emptied them
// (Plan.Number); the sensitive table is written from a temporary file
// once the plan and the codebook are gone (numberer.done, setSpill).
//
// --keep-order cannot number through a shuffle and keep the input's order
// in bounded memory: it keeps the in-memory version (runAnatomyInMemory,
// Anatomy's grouping only).
func (o *Options) runAnatomy(in table.Reader, cb *codebook.Codebook) error {
	if len(in.Schema().FieldIndices(o.GroupCol)) > 0 {
		return fmt.Errorf("%s already has a column %q: name the group id column otherwise with --group-column NAME", in.Name(), o.GroupCol)
	}
	if o.Order.Keep {
		return o.runAnatomyInMemory(in, cb)
	}
	// Two shuffles (the rows, then the numbered groups) and two writers.
	cli.LowerMemoryLimit(anatomyMemoryLimit)
	r := o.Seed.Rand(o.cmd)
	numberRand, shuffleRand := splitRand(r), splitRand(r)
	// Pass 2 and the numbering need the sets alone, flat, and the groups'
	// numbering: the plan never makes the schedule's SetTypes (a third of
	// the run's memory per set type on a high-cardinality column: 174k
	// types at 80k values).
	g, plan, d, err := o.countPass(in, cb, r, func(p *anonymize.Plan) {
		p.DivertOnly()
		p.KeepGroupBase()
		if !o.Report {
			p.DropCounts()
		}
	})
	if err != nil {
		return err
	}
	defer g.closeSpool()
	sv := g.sens[0]
	n := plan.Rows() - int64(len(plan.Dropped))
	o.notes(d, len(plan.Dropped), n)
	groups := n / int64(o.L)
	a := &release.Anonymized{Mechanism: anatomy, Grouping: o.Grouping, Rows: n, Dropped: int64(len(plan.Dropped)), MissingDropped: d.missing, L: o.L,
		Groups: int(groups)}
	o.anatomyIDs(a)
	// Both tables are created late (createLateAt; their destinations are
	// checked now): each one's metadata holds the codebook (10 MB of JSON
	// at 1M values, and as much again while it is encoded), which had
	// been held twice beside pass 2's Dealer. Both are created once the
	// rows are numbered (numberer.done), the sensitive table first.
	late := &anatomyLate{cb: cb, a: a, label: sv.col.Label}
	stSchema := GroupsSchema(o.GroupCol, sv.name)
	gw, err := o.createLateAt(o.groupsOutput(), stSchema, func() (table.Meta, error) { return late.groupsMeta(o) }, in.Format(), o.groupsInputs())
	if err != nil {
		return err
	}
	defer gw.Abort()
	nb := &numberer{plan: plan}

	// The rows: pass 2 → shuffle → numbering → shuffle → -o.
	var nsa []int // input columns published as they are
	var fields, hidden []arrow.Field
	for j, k := range g.which {
		if k < 0 {
			nsa = append(nsa, j)
			fields = append(fields, arrow.Field{Name: g.names[j], Type: arrow.BinaryTypes.String})
		}
	}
	hidden = append(append(hidden, fields...),
		arrow.Field{Name: "type", Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: "value", Type: arrow.PrimitiveTypes.Int64})
	fields = append(fields, arrow.Field{Name: o.GroupCol, Type: arrow.PrimitiveTypes.Int64})
	schema := arrow.NewSchema(fields, nil)
	hiddenSchema := arrow.NewSchema(hidden, nil)
	fw, err := o.createLateAt(o.Output, schema, func() (table.Meta, error) { return late.rowsMeta(o) }, in.Format(), o.rowsInputs())
	if err != nil {
		return err
	}
	defer fw.Abort()
	// The chain's commit only makes the row table complete (prepareOnly):
	// it is published with the sensitive table at the end (CommitAll).
	w := newAsyncWriter(prepareOnly{fw})
	defer w.Abort()
	budget := int64(shuffleBudget)
	ow, err := o.shuffled(w, schema, shuffleRand, budget, nil)
	if err != nil {
		return err
	}
	defer ow.Abort()
	// Quarter-size batches as pass 2's below: the numbering runs beside
	// the plan's Dealer, the codebook and both shuffles.
	nb.w, nb.rw, nb.nsa = ow, table.NewRowWriter(ow, schema, table.DefaultBatchSize/4), len(nsa)
	defer nb.rw.Release()
	shw, err := shuffle.NewWriter(nb, hiddenSchema, numberRand, shuffle.Options{Budget: budget})
	if err != nil {
		return err
	}
	defer shw.Abort()
	sw := newAsyncWriter(shw)
	defer sw.Abort()
	in2, err := o.open()
	if err != nil {
		return err
	}
	close2 := closeOnce(in2) // once pass 2 ends
	defer close2()
	// Quarter-size batches: the batch being built, the one in sw's queue
	// and the one the shuffle encodes held 17 MB of the run's 56 MB live
	// heap at the default size (6 string columns at 10M rows). The
	// shuffle's output does not depend on the batches.
	rw := table.NewRowWriter(sw, hiddenSchema, table.DefaultBatchSize/4)
	defer rw.Release()
	meter := o.Streams.Progress("anonymize: publish")
	rw.OnBatch = func(rows int) { meter.Add(int64(rows)) }
	bb := rw.BatchBuilder
	types := make([]int, 1)
	err = g.pass(in2, func(rec arrow.RecordBatch, i int, vals []uint32) error {
		ok, err := plan.Deal(vals, types, r)
		if err != nil {
			return fmt.Errorf("%s: %w", in2.Name(), err)
		}
		if !ok {
			return nil
		}
		for c, j := range nsa {
			bb.String(c, g.cells[j].String(i))
		}
		bb.Int64(len(nsa), int64(types[0]))
		bb.Int64(len(nsa)+1, int64(vals[0]))
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
	close2()
	// Once every row is numbered, the sets go to a temporary file with
	// their labels (setSpill), the plan goes, the two tables' metadata
	// are made (sharing the codebook's JSON) and the codebook goes; the
	// sensitive table is then written from the file and made complete
	// (table.Prepare: what its writer held goes) before the row table is
	// created, so that no two of the plan, the codebook and the metadata
	// being encoded are held together. Both are published once the row
	// table is complete too (table.CommitAll): a failure before leaves
	// the previous run's pair as it was — the sensitive table had been
	// published first and removed again, the previous one gone with it.
	nb.done = func() error {
		sets, err := spillSets(nb.plan, o.L, late.label)
		if err != nil {
			return err
		}
		defer sets.remove()
		nb.plan, plan, late.label, o.readLabels = nil, nil, nil, nil
		runtime.GC()
		if err := late.make(o); err != nil {
			return err
		}
		runtime.GC()
		if err := writeGroupsOf(gw, stSchema, sets.each); err != nil {
			return err
		}
		if err := table.Prepare(gw); err != nil {
			return err
		}
		if lw, ok := fw.(*lateWriter); ok {
			// The sensitive table's metadata goes first.
			runtime.GC()
			return lw.open()
		}
		return nil
	}
	if err := sw.Commit(); err != nil {
		return err
	}
	_, err = table.CommitAll(gw, fw)
	return err
}

// prepareOnly is a table writer whose Commit makes the table complete
// without publishing it (table.Prepare): the caller publishes it, with
// another table, by committing the writer it wraps.
type prepareOnly struct{ table.Writer }

func (p prepareOnly) Commit() error { return table.Prepare(p.Writer) }

// anatomyLate is what Anatomy's two tables need of the codebook once
// pass 2 is over: the sets' labels (label, until they are spilled) and
// the metadata, which make computes once and then lets the codebook go:
// the row table holds no label (the codebook item's labels are held by
// o.codebookItem until the writers make it).
type anatomyLate struct {
	cb           *codebook.Codebook
	a            *release.Anonymized
	label        func(int) string
	made         bool
	rows, groups table.Meta
}

// make makes both tables' metadata, once, and lets the codebook go.
func (l *anatomyLate) make(o *Options) error {
	if l.made {
		return nil
	}
	rows, err := o.meta(l.cb, l.a)
	if err != nil {
		return err
	}
	// The sensitive table's items; both tables' writers make the
	// codebook item (o.codebookItem, which holds the labels only).
	g := l.a.GroupsTableMeta(o.insecure())
	g.Codebook = nil
	groups := table.Meta{}
	if err := g.Encode(groups); err != nil {
		return err
	}
	l.rows, l.groups, l.cb, l.a.Codebook, l.made = rows, groups, nil, nil, true
	return nil
}

// rowsMeta is the row table's metadata.
func (l *anatomyLate) rowsMeta(o *Options) (table.Meta, error) {
	if err := l.make(o); err != nil {
		return nil, err
	}
	m := l.rows
	l.rows = nil
	return m, nil
}

// groupsMeta is the sensitive table's metadata.
func (l *anatomyLate) groupsMeta(o *Options) (table.Meta, error) {
	if err := l.make(o); err != nil {
		return nil, err
	}
	m := l.groups
	l.groups = nil
	return m, nil
}

// numberer receives the dealt rows of Anatomy in a uniformly random order
// and gives each its group: the j-th row of value v in set type t to
// arrive gets the type's j-th group (see runAnatomy; Plan.Number counts
// in the Dealer's pairs), then passes the row on without its type and
// value.
type numberer struct {
	w    table.Writer // the output, behind its own shuffle
	rw   *table.RowWriter
	plan *anonymize.Plan // after pass 2 (Plan.Done), under KeepGroupBase
	nsa  int
	// done, when not nil, is called once every row is numbered, before
	// the output's shuffle emits them.
	done func() error
}

func (nb *numberer) Write(rec arrow.RecordBatch) error {
	cells := make([]table.Values, nb.nsa)
	for c := range cells {
		cells[c] = table.ValuesOf(rec.Column(c))
	}
	types, ok1 := rec.Column(nb.nsa).(*array.Int64)
	vals, ok2 := rec.Column(nb.nsa + 1).(*array.Int64)
	if !ok1 || !ok2 {
		return errors.New("internal error: the shuffle changed the type and value columns' type")
	}
	bb := nb.rw.BatchBuilder
	for i := range int(rec.NumRows()) {
		g, err := nb.plan.Number(0, uint32(vals.Value(i)), int(types.Value(i)))
		if err != nil {
			return fmt.Errorf("internal error: %w", err)
		}
		for c, v := range cells {
			bb.String(c, v.String(i))
		}
		bb.Int64(nb.nsa, g)
		if err := nb.rw.EndRow(); err != nil {
			return err
		}
	}
	return nil
}

func (nb *numberer) Commit() error {
	if err := nb.rw.Flush(); err != nil {
		return err
	}
	if nb.done != nil {
		if err := nb.done(); err != nil {
			return err
		}
	}
	return nb.w.Commit()
}

func (nb *numberer) Abort() { nb.w.Abort() }

func (nb *numberer) Format() table.Format { return nb.w.Format() }

// closeOnce returns a function that closes r the first time it is called
// and does nothing after: a pass closes its reader as soon as it ends, and
// a deferred call covers the paths that return early (a reader's Close
// may not be called twice).
func closeOnce(r table.Reader) func() {
	open := true
	return func() {
		if open {
			open = false
			r.Close()
		}
	}
}
