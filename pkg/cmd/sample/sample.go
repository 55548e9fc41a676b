// Package sample is the `sample` command: coordinated bottom-m sampling of
// a table's rows, the first stage of the release pipeline (SPEC §3.1), and
// the planning of the sample size m for a privacy target (SPEC §3.5).
package sample

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/estimate"
	"github.com/pramkit/pramkit/pkg/pram"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/sample"
	"github.com/pramkit/pramkit/pkg/table"
)

// Options are the parsed flags of one run.
type Options struct {
	Streams *cli.Streams
	Input   string   // the first input file
	Inputs  []string // every input file, read in order as one table

	Size      string  // -m: a row count or "optimal"
	Fraction  float64 // --fraction; 0 when not given
	ID        string  // --id column; "" samples by row position
	Secret    string  // --secret FILE
	NewSecret string  // --new-secret FILE
	KeepID    bool
	Columns   []string

	// WithPriority adds the priority column (release.PriorityColumn) so
	// that samples of disjoint shards can be merged; Merge merges such
	// samples (the inputs) into the sample of their union.
	WithPriority bool
	Merge        bool

	Plan       bool
	Epsilon    float64
	N          int64
	DomainSize string
	Codebook   string

	Output cli.Output
	Seed   cli.Seed
	cmd    *cobra.Command

	// insecureSecret: the --secret file carries sample.InsecureMark.
	insecureSecret bool
}

// NewCmd builds the command; runF replaces the run function in tests.
func NewCmd(s *cli.Streams, runF func(*Options) error) *cobra.Command {
	opts := &Options{Streams: s}
	cmd := &cobra.Command{
		Use:   "sample [<file>...] (-m N | -m optimal --epsilon E | --fraction F) [flags]",
		Short: "Draw the same uniform sample of rows at every curator",
		Long: `Sample keeps m rows of a table, chosen uniformly without replacement, and
writes them in an order that every curator holding other columns of the same
people reproduces exactly: the first stage of the release pipeline.

Each row's id (its position, or the --id column) gets a priority from a keyed
pseudo-random function (AES-128) under a secret the curators share; the rows
of the m smallest priorities are the sample (bottom-m), written in priority
order, so that curators' samples line up row by row. Memory does not grow
with m or the input: kept rows past 16 MiB go to sorted temporary files in
$TMPDIR (unlinked once open), merged when the sample is written. Ids must
be unique: two rows with one id get the same priority and would be kept or
dropped together, so sample stops with an error naming the id when a
repeated id is among the sampled rows (or ties with the last of them);
a repeated id that is not sampled is not detected, and does not change
the sample. Sampling by position needs every curator's file in the same
row order. Several input files are read in order as one
table (the same columns in each; positions number on across files).

With --id and --with-priority, the output gets a last column _priority
(each row's priority, 32 hex digits) and the secret's public id in its
metadata; samples of disjoint shards drawn so under one secret merge with
sample --merge --secret FILE -m M S1 S2 … into exactly what one run on
the union of the shards writes (with or without --with-priority, as
given to --merge), so long as each shard sample kept at least the rows
of the union's sample that fall in its shard (-m M per shard suffices). The id column is dropped unless --keep-id: the server need
not know who was sampled.

The output's metadata records n, m and a fingerprint of (secret, n, m) that
does not reveal the secret; later stages use it to check that the curators'
files come from the same sampling.

Without --secret a fresh random secret is used, which no other curator can
reproduce. Create a shared one with --new-secret and give it to the other
curators over a secure channel.

With --plan, sample prints the sample size m* that minimises the error bound
of the estimate for a privacy level ε (Lin–Wang–Rane Theorem III.4):
  m* = n(e^ε − 1)(√K + 1)/K^{3/2}, γ = 1 + (n/m*)(e^ε − 1),
  bound = (c√K + 1)/√m*, c = 1 + K/(γ − 1),
where K is the size of the joint domain of ALL curators' released columns.`,
		Example: `  # create a secret once and share it with the other curators
  $ sample --new-secret shared.secret

  # how many rows to sample for ε = 1 when the joint domain has 32 values
  $ sample --plan --epsilon 1 --domain-size 32 adult.csv
  {"n":32561,"K":32,"epsilon":1,"m_opt":2057,"gamma":28.19930705710013,"bound":0.29351543260398094}

  # each curator samples the same 2057 rows of its own columns
  $ sample --secret shared.secret -m 2057 --columns education alice.csv -o alice.sample.csv
  $ sample --secret shared.secret -m 2057 --columns income bob.csv -o bob.sample.csv

  # or let sample choose m* itself, and pipe into encryption
  $ sample --secret shared.secret -m optimal --epsilon 1 --domain-size 32 --columns education alice.csv \
      | encrypt --codebook codebook.json --key-out alice.key -o alice.enc.parquet

  # a table held in shards, with a row id column (pid): sample each shard
  # where it is, keeping priorities, then merge into the sample of the union
  $ awk 'NR == 1 { print "pid," $0; next } { print NR - 1 "," $0 }' adult.csv > adult-pid.csv
  $ head -n 16001 adult-pid.csv > part1.csv
  $ { head -n 1 adult-pid.csv; tail -n +16002 adult-pid.csv; } > part2.csv
  $ sample --secret shared.secret --id pid --with-priority -m 2057 part1.csv -o part1.sample.csv
  $ sample --secret shared.secret --id pid --with-priority -m 2057 part2.csv -o part2.sample.csv
  $ sample --merge --secret shared.secret -m 2057 part1.sample.csv part2.sample.csv -o union.sample.csv
  $ sample --secret shared.secret --id pid -m 2057 adult-pid.csv -o one.sample.csv
  $ cmp one.sample.csv union.sample.csv     # the same rows, byte for byte`,
		Args: cobra.ArbitraryArgs,
		RunE: cli.RunE(opts, func(c *cobra.Command, args []string) {
			opts.cmd, opts.Input = c, cli.FirstArg(args)
			if len(args) > 0 {
				opts.Inputs = args
			}
		}, runF, run),
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Size, "sample-size", "m", "", "sample `N` rows, or 'optimal' for m* at --epsilon")
	f.Float64Var(&opts.Fraction, "fraction", 0, "sample the fraction `F` of the rows, 0 < F ≤ 1 (m = round(F·n))")
	f.StringVar(&opts.ID, "id", "", "row-id `COLUMN` (default: the row's position in the file)")
	f.StringVar(&opts.Secret, "secret", "", "shared secret `FILE` that fixes which rows are sampled")
	f.StringVar(&opts.NewSecret, "new-secret", "", "create a new secret `FILE` (mode 0600, never overwritten) and use it")
	f.BoolVar(&opts.KeepID, "keep-id", false, "keep the --id column in the output")
	f.StringSliceVar(&opts.Columns, "columns", nil, "columns to keep, in this order (default: all but the id)")
	f.BoolVar(&opts.WithPriority, "with-priority", false, "add the column _priority (each row's priority) so that shards' samples can be merged")
	f.BoolVar(&opts.Merge, "merge", false, "merge the --with-priority --id samples given as inputs into the sample of their union (-m M, --secret)")
	f.BoolVar(&opts.Plan, "plan", false, "print the optimal sample size as JSON and exit")
	f.Float64Var(&opts.Epsilon, "epsilon", 0, "privacy level `E` > 0 for --plan and -m optimal")
	f.Int64VarP(&opts.N, "rows", "n", 0, "the table's row count `N` for --plan (default: count the input)")
	f.StringVar(&opts.DomainSize, "domain-size", "", "joint domain size `K` of all curators' columns, for --plan and -m optimal")
	f.StringVar(&opts.Codebook, "codebook", "", "codebook `FILE`: K is the product of the --columns' category counts")
	cli.AddOutputFlags(cmd, &opts.Output)
	cli.AddSeedFlag(cmd, &opts.Seed)
	cli.AddInsecureSeedFlag(cmd, &opts.Seed)
	return cli.Root(cmd)
}

// Main runs the command on the process's arguments and returns the exit code.
func Main() int { return cli.Run(NewCmd(cli.StdStreams(), nil), os.Args[1:], cli.StdStreams()) }

func run(o *Options) error {
	if o.Plan {
		return runPlan(o)
	}
	if o.Merge {
		return runMerge(o)
	}
	secret, err := o.secret()
	if err != nil {
		return err
	}
	if secret == nil { // --new-secret alone
		return nil
	}
	return runSample(o, secret)
}

// secret reads, creates or draws the sampling secret. It returns nil, nil
// when the run only creates a secret.
func (o *Options) secret() ([]byte, error) {
	sizeGiven := o.Size != "" || o.cmd.Flags().Changed("fraction")
	switch {
	case o.Secret != "" && o.NewSecret != "":
		return nil, cli.Usagef("give either --secret or --new-secret, not both")
	case o.Secret != "":
		b, err := os.ReadFile(o.Secret)
		if err != nil {
			return nil, fmt.Errorf("cannot read the secret %s: %w; check the path, or create one with --new-secret", o.Secret, unwrap(err))
		}
		s, insecure, err := sample.ParseSecretFile(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Secret, err)
		}
		if insecure {
			o.Streams.Warnf("sample", "%s was made with --insecure-seed: anyone who knows the seed can recompute it and the sample; never publish what it samples", o.Secret)
			o.insecureSecret = true
		}
		return s, nil
	}
	s := o.drawSecret()
	if o.NewSecret != "" {
		if _, err := os.Lstat(o.NewSecret); err == nil {
			return nil, fmt.Errorf("%s already exists; a secret is never overwritten: use it with --secret, or remove it first", o.NewSecret)
		}
		// Written whole or not at all (an interrupted run leaves no half
		// secret), owner-only, and never over an existing file.
		content := sample.FormatSecret(s)
		if o.Seed.Insecure {
			content = sample.FormatInsecureSecret(s)
		}
		err := table.WriteFile(o.NewSecret, content, table.WriteOptions{Perm: 0o600, NoClobber: true, Flag: "--new-secret", Inputs: []string{o.Input}})
		if err != nil {
			return nil, fmt.Errorf("cannot create the secret: %w", err)
		}
		if !sizeGiven && o.Input == "" {
			fmt.Fprintf(o.Streams.Err, "sample: created %s (share it with the other curators over a secure channel)\n", o.NewSecret)
			return nil, nil
		}
		return s, nil
	}
	o.Streams.Warnf("sample", "no --secret: using a fresh random secret, so no other curator can draw the same rows")
	return s, nil
}

// drawSecret returns 32 random bytes: from crypto/rand, or from the --seed
// generator in tests (--insecure-seed only: a seeded secret is a guessable
// one).
func (o *Options) drawSecret() []byte {
	s := make([]byte, 32)
	if o.Seed.Insecure {
		r := o.Seed.Rand(o.cmd)
		for i := range s {
			s[i] = byte(r.Uint32())
		}
		return s
	}
	rand.Read(s)
	return s
}

func unwrap(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// sizer decides m once n is known.
type sizer struct {
	m        int64   // fixed -m N
	fraction float64 // --fraction F, or m*/n for -m optimal
	optimal  bool
	epsilon  float64
	k        uint64
}

func (o *Options) sizer() (*sizer, error) {
	f := o.cmd.Flags()
	switch {
	case o.Size != "" && f.Changed("fraction"):
		return nil, cli.Usagef("give either -m or --fraction, not both")
	case o.Size == "optimal":
		k, err := o.domainSize()
		if err != nil {
			return nil, err
		}
		if err := checkEpsilon(o.Epsilon, f.Changed("epsilon")); err != nil {
			return nil, err
		}
		// m* is linear in n: m* = n·r with r = (e^ε−1)(√K+1)/K^{3/2}, the
		// unrounded optimum at n = 1; sample that fraction, then cut to m*.
		p, err := estimate.NewPlan(1, k, o.Epsilon)
		if err != nil {
			return nil, err
		}
		return &sizer{fraction: min(p.MStar, 1), optimal: true, epsilon: o.Epsilon, k: k}, nil
	case o.Size != "":
		m, err := strconv.ParseInt(o.Size, 10, 64)
		if err != nil {
			return nil, cli.Usagef("-m %q is not a row count; give a whole number or 'optimal'", o.Size)
		}
		if m <= 0 {
			return nil, cli.Usagef("-m must be at least 1, got %d", m)
		}
		return &sizer{m: m}, nil
	case f.Changed("fraction"):
		if err := cli.CheckNumber("fraction", o.Fraction, cli.OpenClosedUnit); err != nil {
			return nil, err
		}
		return &sizer{fraction: o.Fraction}, nil
	}
	return nil, cli.Usagef("say how many rows to sample: -m N, -m optimal --epsilon E, or --fraction F")
}

func checkEpsilon(eps float64, given bool) error {
	if !given {
		return cli.Usagef("--epsilon is required with --plan and -m optimal")
	}
	// e^ε overflows past ε ≈ 709; 700 keeps m* = f(e^ε) finite.
	return cli.CheckNumber("epsilon", eps, cli.Interval{Lo: 0, Hi: 700, LoOpen: true})
}

// domainSize is K from --domain-size or from the codebook's --columns.
func (o *Options) domainSize() (uint64, error) {
	switch {
	case o.DomainSize != "" && o.Codebook != "":
		return 0, cli.Usagef("give either --domain-size or --codebook, not both")
	case o.DomainSize != "":
		k, err := strconv.ParseUint(o.DomainSize, 10, 64)
		if err != nil || k < 1 {
			return 0, cli.Usagef("--domain-size %q is not a positive whole number", o.DomainSize)
		}
		return k, nil
	case o.Codebook != "":
		cb, err := codebook.Load(o.Codebook)
		if err != nil {
			return 0, err
		}
		names := o.Columns
		if len(names) == 0 {
			names = cb.Names()
		}
		sel, err := cb.Select(names)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", o.Codebook, err)
		}
		ks := make([]uint32, len(sel.Columns))
		for i := range sel.Columns {
			ks[i] = uint32(sel.Columns[i].K())
		}
		d, err := pram.NewDomain(ks)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", o.Codebook, err)
		}
		return d.Size(), nil
	}
	return 0, cli.Usagef("K is needed: give --domain-size K (all curators' columns together) or --codebook FILE --columns a,b")
}

// planJSON is what --plan prints.
type planJSON struct {
	N       int64   `json:"n"`
	K       uint64  `json:"K"`
	Epsilon float64 `json:"epsilon"`
	MOpt    int64   `json:"m_opt"`
	Gamma   float64 `json:"gamma"`
	Bound   float64 `json:"bound"`
}

func runPlan(o *Options) error {
	if err := checkEpsilon(o.Epsilon, o.cmd.Flags().Changed("epsilon")); err != nil {
		return err
	}
	k, err := o.domainSize()
	if err != nil {
		return err
	}
	n := o.N
	if !o.cmd.Flags().Changed("rows") {
		if n, err = countRows(o); err != nil {
			return err
		}
	} else if n < 1 {
		return cli.Usagef("-n must be at least 1, got %d", n)
	}
	p, err := estimate.NewPlan(int(n), k, o.Epsilon)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(planJSON{N: n, K: k, Epsilon: o.Epsilon, MOpt: int64(p.M), Gamma: p.Gamma, Bound: p.Bound})
	_, err = fmt.Fprintf(o.Streams.Out, "%s\n", b)
	return err
}

// countRows counts the input's rows (Parquet knows; others are read).
func countRows(o *Options) (int64, error) {
	r, err := openInputs(o.Streams.Open, o.Inputs)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	if n := r.NumRows(); n >= 0 {
		return n, nil
	}
	for {
		if _, err := r.Next(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return 0, err
		}
	}
	if r.RowsRead() == 0 {
		return 0, fmt.Errorf("%s has no data rows; give -n N to plan without it", names(r))
	}
	return r.RowsRead(), nil
}

// keeper is what both samplers offer: BottomM and Fraction.
type keeper interface {
	Wants(sample.Priority) bool
	Offer(sample.Priority, func() []string) error
	Close() error
}

func runSample(o *Options, secret []byte) error {
	sz, err := o.sizer()
	if err != nil {
		return err
	}
	prf, err := sample.NewPRF(secret)
	if err != nil {
		return err
	}
	in, err := openInputs(o.projectedOpen(), o.Inputs)
	if err != nil {
		return err
	}
	defer in.Close()
	idCol, keep, err := o.layout(in)
	if err != nil {
		return err
	}
	sm, err := newSampler(sz)
	if err != nil {
		return err
	}
	defer sm.k.Close()
	n, err := o.offerRows(in, secret, prf, idCol, keep, sm.k)
	if err != nil {
		return err
	}
	m, each, err := o.draw(in, sz, sm, n, len(keep))
	if err != nil {
		return err
	}
	return o.writeSample(in, secret, idCol, keep, n, m, each)
}

// sampler is the sample being drawn: the m rows of smallest priority
// (-m N), or each row with its priority below a fraction (--fraction, and
// -m optimal, whose m* needs n).
type sampler struct {
	bottom *sample.BottomM
	frac   *sample.Fraction
	k      keeper
}

func newSampler(sz *sizer) (*sampler, error) {
	var sm sampler
	var err error
	if sz.m > 0 {
		sm.bottom, err = sample.NewBottomM(int(min(sz.m, 1<<40)))
		sm.k = sm.bottom
	} else {
		sm.frac, err = sample.NewFraction(sz.fraction)
		sm.k = sm.frac
	}
	return &sm, err
}

// offerRows reads in and offers every row to k with its priority (by id
// with --id, else by position), keeping only the columns keep; it returns
// the number of rows n.
func (o *Options) offerRows(in table.Reader, secret []byte, prf *sample.PRF, idCol int, keep []int, k keeper) (int64, error) {
	if !offerSerial {
		return o.offerRowsParallel(in, secret, idCol, keep, k)
	}
	meter := o.Streams.Progress("sample: read")
	var pos uint64
	err := table.EachBatch(in, func(rec arrow.RecordBatch, _ int64) error {
		kc := newKeptCells(rec, keep, idCol)
		rows := int(rec.NumRows())
		for i := 0; i < rows; i++ {
			var p sample.Priority
			if idCol >= 0 {
				id := kc.ids.String(i)
				if id == "" {
					return &table.DataError{File: in.Name(), Row: rowOf(in, int64(pos)), Column: o.ID, Err: errors.New("the row id is empty; every row needs an id, or omit --id to sample by position")}
				}
				p = prf.ID(id)
			} else {
				p = prf.Position(pos)
			}
			pos++
			row := i
			if err := k.Offer(p, func() []string { return kc.row(row) }); err != nil {
				return err
			}
		}
		meter.Add(int64(rows))
		return nil
	})
	meter.Done()
	if err != nil {
		return 0, err
	}
	return int64(pos), nil
}

// draw returns the sample's size m, once n is known, and a function that
// passes the sample's rows, in priority order, to emit (the rows are read
// back from the sampler, from temporary files for a large sample).
func (o *Options) draw(in table.Reader, sz *sizer, sm *sampler, n int64, nkeep int) (int64, func(emit func(sample.Item) error) error, error) {
	var m int64
	var sampleOf func(emit func(sample.Item) error) error
	switch {
	case n == 0:
		return 0, nil, fmt.Errorf("%s has no data rows: nothing to sample", names(in))
	case sm.bottom != nil:
		if sz.m > n {
			return 0, nil, fmt.Errorf("cannot sample m = %d rows: %s has n = %d rows; choose -m ≤ %d", sz.m, names(in), n, n)
		}
		m, sampleOf = sz.m, sm.bottom.Sample
	case sz.optimal:
		p, err := estimate.NewPlan(int(n), sz.k, sz.epsilon)
		if err != nil {
			return 0, nil, err
		}
		m = int64(p.M)
	default:
		m = max(int64(sz.fraction*float64(n)+0.5), 1)
	}
	if sampleOf == nil {
		sampleOf = func(emit func(sample.Item) error) error { return sm.frac.Sample(m, emit) }
	}
	each := func(emit func(sample.Item) error) error {
		err := sampleOf(emit)
		var dup *sample.DuplicateError
		if errors.As(err, &dup) {
			return &table.DataError{File: names(in), Column: o.ID, Err: fmt.Errorf("id %s appears more than once (rows %d and %d); ids given with --id must be unique, since rows of one id are kept or dropped together", quoteID(dup.Kept.Row[nkeep]), min(dup.Kept.Index, dup.Row), max(dup.Kept.Index, dup.Row))}
		}
		return err
	}
	return m, each, nil
}

// writeSample writes the sample with its metadata: n, m, the secret's
// fingerprint and how rows were identified.
func (o *Options) writeSample(in table.Reader, secret []byte, idCol int, keep []int, n, m int64, each func(func(sample.Item) error) error) error {
	names := make([]string, len(keep))
	for j, c := range keep {
		names[j] = in.Schema().Field(c).Name
	}
	meta := in.Meta().Clone()
	cli.CarryInsecureSeed(o.Streams, "sample", in.Name(), meta, meta)
	o.Seed.Mark(meta)
	if o.insecureSecret {
		meta[cli.InsecureSeedKey] = "true"
	}
	meta[release.KeyStage] = release.StageSample
	if idCol >= 0 {
		meta[release.KeySampleID] = release.SampleIDColumn
	} else {
		meta[release.KeySampleID] = release.SampleIDPosition
	}
	return o.write(meta, names, in.Format(), secret, n, m, each)
}

// write writes the m rows each gives (rows of the columns names, in
// priority order) as the sample of n rows: meta gets n, m and the
// fingerprint, and with --with-priority the priority column and
// secret-id. A sample run and a merge of shards write through here, so a
// merge's output is the one run on the union would write.
func (o *Options) write(meta table.Meta, names []string, format table.Format, secret []byte, n, m int64, each func(func(sample.Item) error) error) error {
	release.Sample{N: n, M: m, Fingerprint: sample.Fingerprint(secret, n, m)}.Encode(meta)
	cols := names
	if o.WithPriority {
		cols = append(slices.Clone(names), release.PriorityColumn)
		release.Priorities{Column: release.PriorityColumn, SecretID: sample.SecretID(secret)}.Encode(meta)
	} else {
		release.Priorities{}.Remove(meta)
	}
	schema := table.StringSchema(cols)
	inputs := append(slices.Clone(o.Inputs), o.Secret, o.NewSecret)
	w, err := o.Streams.Create(o.Output, schema, meta, format, inputs)
	if err != nil {
		return err
	}
	defer w.Abort()
	rw := table.NewRowWriter(w, schema, 0)
	defer rw.Release()
	row := make([]string, len(cols))
	var wrote int64
	if err := each(func(it sample.Item) error {
		copy(row, it.Row[:len(names)])
		if o.WithPriority {
			row[len(names)] = it.Priority.String()
		}
		wrote++
		return rw.AppendStrings(row)
	}); err != nil {
		return err
	}
	if wrote != m {
		return fmt.Errorf("internal error: %d rows drawn for a sample of m = %d", wrote, m)
	}
	if err := rw.Flush(); err != nil {
		return err
	}
	return w.Commit()
}

// projectedOpen opens the input reading only the columns the sample
// keeps and its id (table.ReadOptions.Columns: the others are never
// built), when --columns names them and there is one input. Several
// inputs are read whole, so that sameTable still compares every column of
// the shards; --keep-id without --id reads whole, so that layout reports
// that usage error rather than a missing column. Batches lend their
// buffers to later ones (ReuseBuffers): the cells a sample keeps are
// cloned (keptCells.row), and each batch is released once offered.
func (o *Options) projectedOpen() func(string) (table.Reader, error) {
	opt := table.ReadOptions{ReuseBuffers: true}
	if len(o.Columns) > 0 && len(o.Inputs) == 1 && (!o.KeepID || o.ID != "") {
		if o.ID != "" {
			opt.Columns = append(opt.Columns, o.ID)
		}
		opt.Columns = append(opt.Columns, o.Columns...)
	}
	return func(path string) (table.Reader, error) {
		return o.Streams.OpenWith(path, opt)
	}
}

// layout finds the id column and the columns to keep, in output order.
func (o *Options) layout(in table.Reader) (idCol int, keep []int, err error) {
	schema := in.Schema()
	index := func(name string) (int, error) {
		idx := schema.FieldIndices(name)
		if len(idx) == 0 {
			known := make([]string, schema.NumFields())
			for i, f := range schema.Fields() {
				known[i] = f.Name
			}
			return 0, fmt.Errorf("%s has no column %q (columns: %s)", in.Name(), name, strings.Join(known, ", "))
		}
		return idx[0], nil
	}
	idCol = -1
	if o.ID != "" {
		if idCol, err = index(o.ID); err != nil {
			return 0, nil, err
		}
	} else if o.KeepID {
		return 0, nil, cli.Usagef("--keep-id needs --id COLUMN")
	}
	if len(o.Columns) > 0 {
		for _, name := range o.Columns {
			c, err := index(name)
			if err != nil {
				return 0, nil, err
			}
			if slices.Contains(keep, c) {
				return 0, nil, cli.Usagef("--columns names %q twice", name)
			}
			keep = append(keep, c)
		}
		if o.KeepID && !slices.Contains(keep, idCol) {
			keep = append([]int{idCol}, keep...)
		}
		if !o.KeepID && slices.Contains(keep, idCol) {
			return 0, nil, cli.Usagef("--columns includes the id column %q: pass --keep-id to keep it", o.ID)
		}
		return idCol, keep, nil
	}
	for c := 0; c < schema.NumFields(); c++ {
		if c != idCol || o.KeepID {
			keep = append(keep, c)
		}
	}
	if len(keep) == 0 {
		return 0, nil, fmt.Errorf("%s: nothing to output once the id column is dropped; pass --keep-id or give other columns", in.Name())
	}
	return idCol, keep, nil
}

// quoteID quotes an id for a message, cut at 80 characters.
func quoteID(id string) string {
	if r := []rune(id); len(r) > 80 {
		return strconv.Quote(string(r[:80])) + "…"
	}
	return strconv.Quote(id)
}

// keptCells are a batch's kept columns and, with --id, its id column.
type keptCells struct {
	cols  []table.Values
	ids   table.Values
	hasID bool // --id given
}

func newKeptCells(rec arrow.RecordBatch, keep []int, idCol int) keptCells {
	kc := keptCells{cols: make([]table.Values, len(keep))}
	for j, c := range keep {
		kc.cols[j] = table.ValuesOf(rec.Column(c))
	}
	if idCol >= 0 {
		kc.ids, kc.hasID = table.ValuesOf(rec.Column(idCol)), true
	}
	return kc
}

// row copies row i's kept cells, which the reservoir keeps past the
// batch. With --id the id rides along after them, to name it if it turns
// out to be repeated.
func (kc keptCells) row(i int) []string {
	out := make([]string, len(kc.cols), len(kc.cols)+1)
	n := 0
	for j, c := range kc.cols {
		out[j] = c.String(i)
		n += len(out[j])
	}
	if kc.hasID {
		out = append(out, kc.ids.String(i))
		n += len(out[len(out)-1])
	}
	// One copy of all the cells, which they share: one allocation a row.
	var b strings.Builder
	b.Grow(n)
	for _, c := range out {
		b.WriteString(c)
	}
	all, off := b.String(), 0
	for j, c := range out {
		out[j] = all[off : off+len(c)]
		off += len(c)
	}
	return out
}
