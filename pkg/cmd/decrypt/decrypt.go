package decrypt

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/pad"
	"github.com/pramkit/pramkit/pkg/pipeline"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// Options are the parsed flags of one run.
type Options struct {
	Streams *cli.Streams
	Input   string

	Keys        []string // --key, one per curator, any order
	Unperturbed bool     // --unperturbed: accept an encrypted table never perturbed
	// --first-row A, --rows R: decrypt rows [A, A+R) of the sample only,
	// a part of what the release holds (R = 0: to its end).
	FirstRow, Rows int64

	Output cli.Output
	cmd    *cobra.Command
}

// NewCmd builds the command; runF replaces the run function in tests.
func NewCmd(s *cli.Streams, runF func(*Options) error) *cobra.Command {
	opts := &Options{Streams: s}
	cmd := &cobra.Command{
		Use:   "decrypt [<release>] --key KEY [--key KEY…] [flags]",
		Short: "Remove the curators' pads from a perturbed release",
		Long: `Decrypt turns a release written by perturb back into codebook labels, with
the key files that the curators' encrypt runs wrote (--key, once per key, in
any order): the fourth stage of the release pipeline.

Each cell becomes x̂ = (c̄ − v) mod k, the perturbed ciphertext c̄ minus the
cell's pad v, and then the label of x̂ in the codebook that the key file
carries. Because the server's perturbation commutes with the pads, the
output is exactly the curators' sample perturbed by γ-diagonal PRAM
(Lin–Wang–Rane Lemma III.1): it is what may be published, and what estimate
reads to recover distributions.

Keys are matched to the release's columns by name and checked: same
sampling (fingerprint), same codebook (hash), and the same encrypt run (key
id), so a key of another release or of another column is refused rather
than producing garbage. The output keeps γ, ε, K, n, m, the fingerprint and
the release counter in its metadata, and adds the codebook, for estimate.

Release and keys are read in lockstep, so memory does not grow with m.

Parts: a release that is a part (perturb on parts) is decrypted as such,
and --first-row A [--rows R] decrypts rows A..A+R−1 of what the release
holds; the output records first_row and rows, and estimate merges the
parts, refusing overlaps and gaps. A PRF key file of any part of a
curator's encrypt run opens every part (the pads are recomputed); a
one-time-pad key file must hold the part's rows.`,
		Example: `  # the researcher decrypts the server's release with both curators' keys
  $ decrypt --key alice.key --key bob.key release.parquet -o sanitized.csv

  # and estimates the joint distribution
  $ decrypt --key bob.key --key alice.key release.parquet | estimate --method mle

  # a curator checks a key against the encrypted file before sending it
  # (CSV: the encrypted file is Parquet, and so would be the output)
  $ decrypt --unperturbed --key alice.key alice.enc.parquet -o alice.check.csv

  # a part of the release (rows 1000 to the end), e.g. one task of a job
  $ decrypt --key alice.key --key bob.key --first-row 1000 release.parquet -o sanitized.p2.csv`,
		Args: cobra.MaximumNArgs(1),
		RunE: cli.RunE(opts, func(c *cobra.Command, args []string) {
			opts.cmd, opts.Input = c, cli.FirstArg(args)
		}, runF, run),
	}
	f := cmd.Flags()
	f.StringArrayVar(&opts.Keys, "key", nil, "key `FILE` written by encrypt --key-out; repeat for each curator")
	f.Int64Var(&opts.FirstRow, "first-row", 0, "decrypt a part: rows `A`.. of the sample (0-based; default: the rows the release holds)")
	f.Int64Var(&opts.Rows, "rows", 0, "with --first-row: the part's number of rows `R` (default: to the end of the release)")
	f.BoolVar(&opts.Unperturbed, "unperturbed", false, "decrypt an encrypted table that was never perturbed (the output has NO privacy protection: for curators checking their keys)")
	cli.AddOutputFlags(cmd, &opts.Output)
	return cli.Root(cmd)
}

// Main runs the command on the process's arguments and returns the exit code.
func Main() int { return cli.Run(NewCmd(cli.StdStreams(), nil), os.Args[1:], cli.StdStreams()) }

// reuse opens the release and the key files: they are read through
// table.Cursor alone, whose Defer retains a batch until the worker has
// copied its codes out (Pending.Fill releases it) and keeps nothing of it
// after, so a Parquet reader may hand a released batch's buffers to a
// later one (table.ReadOptions.ReuseBuffers; the pool takes a buffer back
// only when its last reference goes). Fresh buffers were ~700 MB
// allocated and zeroed per 10M-row release and most of the collector's
// work. Batches of pipeline.ChunkRows rows, four to a chunk
// (pipeline.BatchChunkRows): at 64 Ki rows the readers' batches and
// decode buffers held ~8 MB more (issue 11).
var reuse = table.ReadOptions{ReuseBuffers: true, BatchSize: pipeline.ChunkRows}

// key is one curator's key file.
type key struct {
	r    table.Reader
	cols []release.Column
	cb   *codebook.Codebook
	// deriver computes PRF pads; nil for one-time pads stored in the file.
	deriver *pad.Deriver
	cur     *table.Cursor
}

// slot says where release column j finds its pads.
type slot struct {
	key *key
	col int // index among the key's columns
}

func run(o *Options) error {
	cli.LowerMemoryBudget(cli.CodebookBudget)
	if len(o.Keys) == 0 {
		return cli.Usagef("--key FILE is required: pass the key file of every curator whose columns are in the release")
	}
	for _, k := range o.Keys {
		if table.IsStdio(k) {
			return cli.Usagef("--key must name a file; the release is the one input that may come from standard input")
		}
	}
	rel, err := o.Streams.OpenWith(o.Input, reuse)
	if err != nil {
		return err
	}
	defer rel.Close()
	name, meta := rel.Name(), rel.Meta()
	if err := o.checkStage(rel); err != nil {
		return err
	}
	var smp release.Sample
	var perturbed *release.GammaDiagonal // nil for --unperturbed
	if meta[release.KeyStage] == release.StagePerturb {
		// γ, ε, n, m, K and the release counter, typed and checked
		// against each other, so that an edited release is refused
		// here rather than estimated with the wrong γ.
		perturbed = new(release.GammaDiagonal)
		if err := perturbed.Decode(meta, name); err != nil {
			return err
		}
		smp = perturbed.Sample
	} else if smp, err = release.ReadSample(meta, name, "the release was not written by perturb; decrypt reads perturb's output"); err != nil {
		return err
	}
	cols, err := release.ReadColumns(meta, name, "the release was not written by perturb; decrypt reads perturb's output")
	if err != nil {
		return err
	}
	have, err := release.ReadPart(meta, name, smp.M)
	if err != nil {
		return err
	}
	if n := rel.NumRows(); n >= 0 && n != have.Rows {
		if have.IsWhole(smp.M) {
			return fmt.Errorf("%s has %d rows but its metadata says m = %d: the release is truncated or was edited; get it again from the server", name, n, smp.M)
		}
		return fmt.Errorf("%s has %d rows but its metadata says it holds %s: the release is truncated or was edited; get it again from the server", name, n, have)
	}
	part, err := o.selectPart(name, have, smp.M)
	if err != nil {
		return err
	}
	if part != have {
		rel = pipeline.SelectRows(rel, part.First-have.First, part.Rows)
	}

	keys, slots, err := o.openKeys(smp, cols, name, part)
	defer func() {
		for _, k := range keys {
			k.r.Close()
		}
	}()
	if err != nil {
		return err
	}

	// Labels (the codebook's own, not a copy: 12 MB a column at 1M
	// labels), and the codebook of the release's columns for estimate.
	labels := make([]*table.Labels, len(cols))
	cbCols := make([]codebook.Column, len(cols))
	for j, s := range slots {
		c, _ := s.key.cb.Column(cols[j].Name)
		cbCols[j] = *c
		labels[j] = c.Dictionary()
	}
	cb, err := codebook.New(cbCols...)
	if err != nil {
		return err
	}
	if meta[release.KeyStage] == release.StageEncrypt {
		o.Streams.Warnf("decrypt", "%s was never perturbed: the output is the curators' plaintext sample, with no privacy protection; do not publish it", name)
	}
	outMeta := meta.Clone()
	cli.CarryInsecureSeed(o.Streams, "decrypt", name, meta, outMeta)
	for _, k := range keys {
		cli.CarryInsecureSeed(o.Streams, "decrypt", k.r.Name(), k.r.Meta(), outMeta)
	}
	// The release's items carry over; the stage and codebook are decrypt's.
	if err := (release.Decrypted{Sample: smp, Release: perturbed}).Encode(outMeta); err != nil {
		return err
	}
	part.Encode(outMeta, smp.M)
	// Label columns are dictionaries over the codebook's labels, built
	// from codes: CSV gets labels, Parquet string columns (dictionary
	// pages), Arrow dictionary columns.
	fields := make([]arrow.Field, len(cols))
	for j, c := range cols {
		fields[j] = table.DictField(c.Name)
	}
	schema := arrow.NewSchema(fields, nil)
	w, err := o.Streams.Create(o.Output, schema, outMeta, rel.Format(), append([]string{o.Input}, o.Keys...), release.CodebookFileItem(cb))
	if err != nil {
		return err
	}
	defer w.Abort()
	if err := decryptRows(o, rel, cols, keys, slots, labels, schema, w, part); err != nil {
		return err
	}
	return w.Commit()
}

// openKeys opens every --key file and finds, for each column of the
// release, the key holding its pads (slots[j]); each column needs exactly
// one key. The caller closes the keys returned, also with an error.
func (o *Options) openKeys(smp release.Sample, cols []release.Column, name string, part release.Part) ([]*key, []slot, error) {
	keys := make([]*key, 0, len(o.Keys))
	slots := make([]slot, len(cols))
	byName := make(map[string]int, len(cols))
	for j, c := range cols {
		byName[c.Name] = j
	}
	for _, p := range o.Keys {
		k, err := openKey(o, p, smp, cols, name, part)
		if err != nil {
			return keys, nil, err
		}
		keys = append(keys, k)
		for i, kc := range k.cols {
			j, ok := byName[kc.Name]
			if !ok {
				return keys, nil, fmt.Errorf("%s holds the pads of column %q, which %s does not have (its columns: %s): it is a key for another release; pass the keys of this release's curators", p, kc.Name, name, strings.Join(release.Names(cols), ", "))
			}
			rc := cols[j]
			switch {
			case slots[j].key != nil:
				return keys, nil, fmt.Errorf("column %q is in two keys, %s and %s: pass each curator's key once", kc.Name, slots[j].key.r.Name(), p)
			case rc != kc:
				// openKey's release.Key.Match compared key_id, k, pad
				// and codebook hash already; this guards the slot table.
				return keys, nil, fmt.Errorf("%s does not match %s on column %q: pass the key written together with the encrypted file that the server perturbed", p, name, kc.Name)
			}
			slots[j] = slot{key: k, col: i}
		}
	}
	var missing []string
	for j, s := range slots {
		if s.key == nil {
			missing = append(missing, cols[j].Name)
		}
	}
	if len(missing) > 0 {
		return keys, nil, fmt.Errorf("no key for column %s of %s: pass --key with the key file of the curator who encrypted it", strings.Join(missing, ", "), name)
	}
	return keys, slots, nil
}

// checkStage accepts a release written by perturb (with γ and ε), or with
// --unperturbed an encrypted table.
func (o *Options) checkStage(rel table.Reader) error {
	name, meta := rel.Name(), rel.Meta()
	switch stage := meta[release.KeyStage]; stage {
	case release.StagePerturb:
		for _, item := range []string{release.KeyGamma, release.KeyEpsilon, release.KeyMechanism} {
			if _, ok := meta[item]; !ok {
				return fmt.Errorf("%s: no %q in the metadata: the release is damaged or incomplete, and estimate could not undo the perturbation; get the release again from the server (perturb writes it)", name, item)
			}
		}
		if o.Unperturbed {
			return cli.Usagef("--unperturbed is for encrypted tables that were never perturbed, and %s is a release: drop --unperturbed", name)
		}
		return nil
	case release.StageEncrypt:
		if !o.Unperturbed {
			return fmt.Errorf("%s was never perturbed (stage encrypt, no \"gamma\" in the metadata): have the server perturb it (perturb --epsilon E), or pass --unperturbed to decrypt it as is, without any privacy protection", name)
		}
		return nil
	case release.StageKey:
		return fmt.Errorf("%s is a key file: give the release as the argument and the keys with --key", name)
	case "":
		return fmt.Errorf("%s is not a pramkit release (no stage in the metadata): decrypt reads the output of perturb", name)
	default:
		return fmt.Errorf("%s is not a release (stage %s): decrypt reads the output of perturb", name, stage)
	}
}

// openKey opens and checks one key file against the release's sampling.
// Errors never quote key material.
//
// A PRF key file (of any part of the encrypt run) opens every part of the
// release, its pads being recomputed for the part's rows; a one-time-pad
// key file must hold the part's rows.
func openKey(o *Options, path string, smp release.Sample, relCols []release.Column, relName string, part release.Part) (*key, error) {
	r, err := o.Streams.OpenWith(path, reuse)
	if err != nil {
		return nil, err
	}
	k := &key{r: r}
	fail := func(err error) (*key, error) {
		r.Close()
		return nil, err
	}
	meta := r.Meta()
	if stage := meta[release.KeyStage]; stage != release.StageKey {
		if stage == "" {
			stage = "none"
		}
		return fail(fmt.Errorf("%s is not a key file (stage: %s): pass the file that encrypt wrote with --key-out", path, stage))
	}
	notKey := "the key file is damaged; use the key file encrypt wrote with --key-out"
	var id release.Key
	if err := id.Decode(meta, path); err != nil {
		return fail(err)
	}
	// Same sampling, and the same encrypt run (key_id) for every column
	// the release shares with the key: an error names both values.
	if err := id.Match(smp, relCols, path, relName); err != nil {
		return fail(err)
	}
	if k.cols, err = release.ReadColumns(meta, path, notKey); err != nil {
		return fail(err)
	}
	cbText, ok := meta[release.KeyCodebook]
	if !ok {
		return fail(fmt.Errorf("%s: no codebook in the metadata: %s", path, notKey))
	}
	delete(meta, release.KeyCodebook)
	if k.cb, err = codebook.ParseString(cbText); err != nil {
		return fail(fmt.Errorf("%s: the codebook in the metadata is not valid (%v): %s", path, err, notKey))
	}
	for _, c := range k.cols {
		one, err := k.cb.Select([]string{c.Name})
		if err != nil || one.Hash() != c.CodebookHash || uint32(one.Columns[0].K()) != c.K {
			return fail(fmt.Errorf("%s: the codebook of column %q does not match its hash: %s", path, c.Name, notKey))
		}
	}
	switch release.PadKind(k.cols) {
	case release.PadOTP:
		kp, err := release.ReadPart(meta, path, smp.M)
		if err != nil {
			return fail(err)
		}
		if n := r.NumRows(); n >= 0 && n != kp.Rows {
			return fail(fmt.Errorf("%s has %d rows of pads but the release has m = %d rows: the key file is truncated or belongs to another release; use the key file encrypt wrote", path, n, smp.M))
		}
		if part.First < kp.First || part.End() > kp.End() {
			return fail(fmt.Errorf("%s holds the one-time pads of %s of the sample, and the release part is %s: pass the key file of these rows", path, kp, part))
		}
		if part != kp {
			r = pipeline.SelectRows(r, part.First-kp.First, part.Rows)
			k.r = r
		}
		if k.cur, err = table.NewCursor(r, release.Names(k.cols), release.Alphabets(k.cols), true); err != nil {
			return fail(err)
		}
	case release.PadPRF:
		runKey, err := release.RunKeyFromMeta(meta, path)
		if err != nil {
			return fail(err)
		}
		if k.deriver, err = pad.NewDeriver(runKey); err != nil {
			return fail(fmt.Errorf("%s: %s", path, notKey))
		}
	default:
		return fail(fmt.Errorf("%s mixes pad kinds: %s", path, notKey))
	}
	return k, nil
}

// decChunk is one chunk of rows, rows row0… of the release: its
// ciphertexts and, per key, its pads (read from one-time-pad key files in
// the producer, computed by the PRF in the worker).
type decChunk struct {
	ct   [][]uint32   // one column per release column
	pads [][][]uint32 // pads[key][column of the key]
	n    int
	row0 int64
	// The rows of the release (pend[0]) and of each one-time-pad key
	// (pend[1+key]) still to be copied into ct and pads by the worker
	// (table.Cursor.Defer): off the reading goroutine.
	pend []table.Pending
}

// decryptRows reads the release and the one-time-pad keys in lockstep, one
// chunk of rows at a time, removes the pads and turns codes into labels on
// all cores (pipeline.Run), and writes the chunks in input order. Memory: a
// fixed number of chunks in flight plus one batch per file, whatever m is.
func decryptRows(o *Options, rel table.Reader, cols []release.Column, keys []*key, slots []slot, labs []*table.Labels, schema *arrow.Schema, w table.Writer, part release.Part) error {
	m := part.Rows // rows this run reads from the release and each one-time-pad key
	cur, err := table.NewCursor(rel, release.Names(cols), release.Alphabets(cols), false)
	if err != nil {
		return err
	}
	keyIdx := make(map[*key]int, len(keys))
	for i, k := range keys {
		keyIdx[k] = i
	}
	opts := pipeline.Options{}.Resolve()
	free := make(chan *decChunk, opts.InFlight)
	for range opts.InFlight {
		c := &decChunk{ct: table.Block(len(cols), pipeline.BatchChunkRows()), pads: make([][][]uint32, len(keys)), pend: make([]table.Pending, 1+len(keys))}
		for i, k := range keys {
			c.pads[i] = table.Block(len(k.cols), pipeline.BatchChunkRows())
		}
		free <- c
	}
	meter := o.Streams.Progress("decrypt: rows")
	defer meter.Done()
	// back returns a chunk to the free list, its pending rows released.
	back := func(c *decChunk) {
		for i := range c.pend {
			c.pend[i].Release()
		}
		free <- c
	}
	next := func() (*decChunk, bool, error) {
		c := <-free // never blocks: at most InFlight chunks are out
		n, err := cur.Defer(c.ct, &c.pend[0])
		if err == nil && cur.Rows() > m {
			err = fmt.Errorf("%s has more rows than its metadata's m = %d: the release was edited; get it again from the server", rel.Name(), m)
		}
		if err == nil && n == 0 {
			err = endOfRelease(rel, keys, cur, m)
			if err == nil {
				back(c)
				return nil, false, nil
			}
		}
		if err != nil {
			back(c)
			return nil, false, err
		}
		c.n, c.row0 = n, part.First+cur.Rows()-int64(n)
		for i, k := range keys {
			if k.cur == nil {
				continue // PRF pads: computed by the worker
			}
			if err := k.readPads(c.pads[i], n, m, &c.pend[1+i]); err != nil {
				back(c)
				return nil, false, err
			}
		}
		return c, true, nil
	}
	work := func(c *decChunk) (*decChunk, error) {
		err := c.pend[0].Fill(c.ct)
		for i := range keys {
			if err == nil {
				err = c.pend[1+i].Fill(c.pads[i])
			}
		}
		if err != nil {
			back(c)
			return nil, err
		}
		for i, k := range keys {
			if k.cur != nil {
				continue
			}
			for j, kc := range k.cols {
				if err := k.deriver.Pads(c.pads[i][j][:c.n], uint64(c.row0), uint32(j), kc.K); err != nil {
					return nil, err
				}
			}
		}
		for j, s := range slots {
			x, v := c.ct[j][:c.n], c.pads[keyIdx[s.key]][s.col][:c.n]
			if err := pad.DecryptColumn(x, x, v, cols[j].K); err != nil {
				return nil, err
			}
		}
		return c, nil
	}
	// Output batches of a fixed size, so the file's bytes do not depend
	// on the chunk size. The codes are the dictionary indices of the
	// labels: no string is built per row (table.Labels).
	wb := pipeline.NewBlocks(w, len(cols), table.DefaultBatchSize, func(ct [][]uint32, n int) arrow.RecordBatch {
		return table.CodesBatch(schema, ct, labs, n)
	})
	emit := func(c *decChunk) error {
		err := wb.Write(c.ct, 0, c.n)
		back(c)
		meter.Add(int64(c.n))
		return err
	}
	if err := pipeline.Run(context.Background(), opts, next, work, emit); err != nil {
		return err
	}
	return wb.Flush()
}

// endOfRelease checks, when the release has ended, that it had m rows and
// that no one-time-pad key goes on.
func endOfRelease(rel table.Reader, keys []*key, cur *table.Cursor, m int64) error {
	if cur.Rows() != m {
		return fmt.Errorf("%s ended after %d rows but its metadata says m = %d: the release is truncated; get it again from the server", rel.Name(), cur.Rows(), m)
	}
	for _, k := range keys {
		if k.cur == nil {
			continue
		}
		if got, err := k.cur.Read(table.Block(len(k.cols), 1)); err != nil {
			return err
		} else if got > 0 {
			return fmt.Errorf("%s has more rows of pads than the release's m = %d: it is a key for another release; pass the key written when this release's columns were encrypted", k.r.Name(), m)
		}
	}
	return nil
}

// readPads reads the next n rows of pads of a one-time-pad key file, in
// lockstep with the release, for dst[·][:n]: p.Fill copies them
// (table.Cursor.Defer).
func (k *key) readPads(dst [][]uint32, n int, m int64, p *table.Pending) error {
	views := make([][]uint32, len(dst))
	for i := range views {
		views[i] = dst[i][:n]
	}
	got, err := k.cur.Defer(views, p)
	if err != nil {
		return err
	}
	if got < n {
		return fmt.Errorf("%s ended after %d rows of pads but the release has m = %d rows: the key file is truncated or belongs to another release; use the key file encrypt wrote", k.r.Name(), k.cur.Rows(), m)
	}
	return nil
}

// selectPart is the part of the sample this run decrypts: what the release
// holds, or --first-row/--rows within it.
func (o *Options) selectPart(name string, have release.Part, m int64) (release.Part, error) {
	f := o.cmd.Flags()
	if f.Changed("rows") && !f.Changed("first-row") {
		return have, cli.Usagef("--rows needs --first-row: say where the part starts")
	}
	if !f.Changed("first-row") {
		return have, nil
	}
	want := release.Part{First: o.FirstRow, Rows: o.Rows}
	if o.Rows == 0 {
		want.Rows = have.End() - o.FirstRow
	}
	if o.FirstRow < have.First || o.Rows < 0 || want.Rows < 1 || want.End() > have.End() {
		return have, cli.Usagef("--first-row %d --rows %d is not within the rows %s holds, %s of the sample's m = %d", o.FirstRow, o.Rows, name, have, m)
	}
	return want, nil
}
