package perturb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"os"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/mechanism"
	"github.com/pramkit/pramkit/pkg/pipeline"
	"github.com/pramkit/pramkit/pkg/pram"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// gammaOptions are the flags of --mechanism gamma-diagonal (with the
// shared --epsilon).
type gammaOptions struct {
	Gamma          float64 // --gamma
	AllowRecompose bool    // --allow-recompose
	Ledger         string  // --ledger; default ledger.DefaultPath()
	NoLedger       bool    // --no-ledger
	NoiseKey       string  // --noise-key FILE: offsets by keyed PRF (computational)
	// --first-row A, --rows R: perturb rows [A, A+R) of the sample only,
	// a part of what the inputs hold (R = 0: to the end of the inputs).
	FirstRow, Rows int64
}

const (
	gammaHelp = `

gamma-diagonal (the default) is the server's step of the release pipeline
(Lin–Wang–Rane §III-A). It joins the curators' encrypted tables by position,
after checking that they come from the same sampling (same row count m and
sample fingerprint), and replaces each joint row x by x + o, component-wise
mod k_j, with a random offset o of the joint alphabet
  G = Z_{k_1} × … × Z_{k_d},  K = k_1·…·k_d values:
  P(o = 0) = γ/q,  P(o = g) = 1/q for every g ≠ 0,  q = γ + K − 1.
This is PRAM with the matrix A[x̄, x̌] = γ/q if x̄ = x̌, else 1/q. Adding o
commutes with the curators' pads, so the researcher's decrypted rows are the
sampled rows perturbed by A (Lemma III.1), and the server never sees a value.
It needs only the k_j from the metadata, no codebook; the work per row is
O(d) whatever K is (K up to 2^62).

With --epsilon E, γ = 1 + (n/m)(e^E − 1) using n and m from the metadata,
the γ for which sampling m of n rows and then PRAM is E-differentially
private (Theorem III.2); with --gamma G, ε = ln((n + m(G − 1))/n) is
computed and recorded. The output records mechanism, γ, ε, K, n, m and the
fingerprint, a release counter and the list of γ's (gammas). Releasing
the same sample again, by perturbing a perturbed table or by perturbing
the same encrypted files in another run, composes to
  ε_r = ln((n + m(Γ − 1))/n),  Γ = γ_1·…·γ_r,
more than r·ε when m < n: perturb refuses it unless --allow-recompose, and
prints the composed ε either way.

Release ledger: every release is recorded as one JSON line (fingerprint,
γ, ε, composed ε, time, output) in $XDG_STATE_HOME/pramkit/releases.jsonl,
else ~/.local/state/pramkit/releases.jsonl, or in --ledger FILE (a ledger
shared by the cron jobs of one server). A sample whose fingerprint is in
the ledger is refused as above. perturb holds a lock on the ledger from
the look-up until the release is recorded, so of two runs releasing the
same sample at once the second waits and is refused; the line is written
just before the output is committed and removed if the commit fails. A
run killed in between leaves a record without an output: it over-counts,
never under-counts. --no-ledger skips the ledger, with a warning.

With --noise-key FILE the offsets are computed instead by a pseudo-random
function: row i's offset is AES-256 of i under a key derived from FILE's
256-bit key, the sample fingerprint, γ and the inputs' key ids (one per
encrypt run), with the same distribution. A
retried run, or a part of the sample perturbed on its own, then gives
exactly the same rows. Secrecy of the noise is COMPUTATIONAL only (whoever
holds FILE can remove the offsets: keep it on the server), and the output
metadata says noise=prf. FILE holds 32 bytes or 64 hex digits (like
encrypt --prf-key); create it once with
  head -c 32 /dev/urandom > server.noise && chmod 600 server.noise
Without --noise-key the offsets are the same function of the row under
a fresh key from crypto/rand that is never stored (from --seed only with
--insecure-seed), so the output does not depend on the number of cores,
but a rerun draws new offsets. --noise-key refuses --allow-recompose: a second release of the sample would
reuse the same offsets. The ledger records the release's public noise_id,
so a retry (same key, sample and γ: the same rows) is not counted again.

Parts: inputs that are parts (encrypt --first-row) are perturbed as such,
and --first-row A [--rows R] perturbs rows A..A+R−1 of what the inputs
hold; the output records first_row and rows. A part needs --noise-key: row
i's offset is then the same in every part and retry, the parts concatenate
to exactly the whole run's release, and they share its noise_id, so the
ledger counts all parts of the release once.`

	gammaExample = `  # the server joins Alice's and Bob's ciphertexts and perturbs them for ε = 1
  $ perturb --epsilon 1 alice.enc.parquet bob.enc.parquet -o release.parquet

  # releasing the same sample again is refused (the ledger remembers it),
  # unless asked for: ε composes; --gamma chooses γ directly
  $ perturb --allow-recompose --gamma 20 alice.enc.parquet bob.enc.parquet -o release2.parquet

  # a new sample (another secret), Alice's side straight from her pipe
  # (- is standard input)
  $ sample --new-secret new.secret
  $ sample --secret new.secret -m 2057 bob.csv \
      | encrypt --codebook codebook.json --key-out bob.new.key -o bob.new.enc.parquet
  $ sample --secret new.secret -m 2057 alice.csv \
      | encrypt --codebook codebook.json --key-out alice.new.key \
      | perturb --epsilon 1 - bob.new.enc.parquet -o release.new.parquet

  # one release in parts with a noise key (parts of another sample, m = 1000)
  $ head -c 32 /dev/urandom > server.noise && chmod 600 server.noise
  $ sample --secret new.secret -m 1000 alice.csv \
      | encrypt --codebook codebook.json --key-out alice.1000.key -o alice.1000.enc.parquet
  $ sample --secret new.secret -m 1000 bob.csv \
      | encrypt --codebook codebook.json --key-out bob.1000.key -o bob.1000.enc.parquet
  $ perturb --epsilon 1 --noise-key server.noise --first-row 0 --rows 600 \
      alice.1000.enc.parquet bob.1000.enc.parquet -o release.p1.parquet
  $ perturb --epsilon 1 --noise-key server.noise --first-row 600 \
      alice.1000.enc.parquet bob.1000.enc.parquet -o release.p2.parquet`
)

// gammaStep is gamma-diagonal's line of perturb's mechanisms.
var gammaStep = step{release.MechanismGamma, addGammaFlags, runGamma, gammaHelp, gammaExample}

// gammaOpts are the run's gammaOptions.
func (o *Options) gammaOpts() *gammaOptions {
	return mechanism.OptionsOf[gammaOptions](&o.mech, release.MechanismGamma)
}

func addGammaFlags(cmd *cobra.Command, opts *Options) {
	o := opts.gammaOpts()
	f := cmd.Flags()
	f.Float64Var(&o.Gamma, "gamma", 0, "gamma-diagonal PRAM parameter `G` > 1 (instead of --epsilon)")
	f.BoolVar(&o.AllowRecompose, "allow-recompose", false, "allow a further release of a sample already released (ε composes)")
	f.StringVar(&o.Ledger, "ledger", "", "release ledger `FILE` (default $XDG_STATE_HOME/pramkit/releases.jsonl, else ~/.local/state/pramkit/releases.jsonl)")
	f.StringVar(&o.NoiseKey, "noise-key", "", "derive the offsets from the 256-bit key in `FILE` by AES-256 (re-computable by part): COMPUTATIONAL secrecy only")
	f.Int64Var(&o.FirstRow, "first-row", 0, "perturb a part: rows `A`.. of the sample (0-based; needs --noise-key; default: the rows the inputs hold)")
	f.Int64Var(&o.Rows, "rows", 0, "with --first-row: the part's number of rows `R` (default: to the end of the inputs)")
	f.BoolVar(&o.NoLedger, "no-ledger", false, "do not record the release in the ledger, nor check it (releases of the sample are then not counted)")
}

// gammaInput is one curator's encrypted table.
type gammaInput struct {
	r    table.Reader
	smp  release.Sample
	cols []release.Column
	hist release.History
	part release.Part // the rows the file holds (all m, or a part)
}

// gammaPlan is what runGamma decided before reading rows.
type gammaPlan struct {
	gamma, epsilon float64
	hist           release.History // the file's perturbations, this one included
	// releases counts the releases of the sample known from the inputs'
	// history and the ledger, this one included; epsComposed is their ε
	// (when releases > 1).
	releases    int
	epsComposed float64
	// noiseID is release.NoiseID of the --noise-key release key, else "".
	noiseID string
	// retry: the ledger holds a release with the same noiseID, which
	// this run repeats; it is not recorded again.
	retry bool
}

// runGamma is γ-diagonal PRAM at the untrusted server (Lin–Wang–Rane
// §III-A): the curators' encrypted tables, joined by position, form rows of
//
//	G = Z_{k_1} × … × Z_{k_d},  K = k_1·…·k_d,
//
// and each row c becomes c + o (component-wise mod k_j) with an offset o
// drawn by pram.Mechanism: P(o = 0) = γ/q, P(o = g) = 1/q for g ≠ 0,
// q = γ + K − 1. Since c = x + v for the plaintext x and pads v, decryption
// gives x + o: x perturbed by A (Lemma III.1). γ and ε are tied by
// Theorem III.2, ε = ln((n + m(γ − 1))/n).
func runGamma(o *Options) error {
	if err := o.checkGammaFlags(); err != nil {
		return err
	}
	var noiseMaster []byte
	if o.gammaOpts().NoiseKey != "" {
		var err error
		if noiseMaster, err = o.readNoiseKey(); err != nil {
			return err
		}
	}
	ins, all, err := o.openGammaInputs()
	defer func() {
		for _, in := range ins {
			in.r.Close()
		}
	}()
	if err != nil {
		return err
	}
	first := ins[0]
	part, err := o.selectPart(ins)
	if err != nil {
		return err
	}
	dom, err := jointDomain(all)
	if err != nil {
		return err
	}
	plan, err := o.gammaPlan(ins)
	if err != nil {
		return err
	}
	led, err := o.openLedger()
	if err != nil {
		return err
	}
	if led != nil {
		defer led.Close() // held until the release is recorded and committed
	}
	var relKey [32]byte
	if noiseMaster != nil {
		ids := make([]string, len(all))
		for j, c := range all {
			ids[j] = c.KeyID
		}
		relKey = release.DeriveNoiseKey(noiseMaster, first.smp.Fingerprint, plan.gamma, ids)
		plan.noiseID = release.NoiseID(relKey)
	}
	if err := o.composeReleases(led, ins, &plan); err != nil {
		return err
	}
	mech, err := pram.NewMechanism(plan.gamma, dom)
	if err != nil {
		return err
	}
	var keyed *pram.KeyedOffsets
	if noiseMaster != nil {
		if keyed, err = pram.NewKeyedOffsets(mech, relKey[:]); err != nil {
			return err
		}
	}

	rel := release.GammaDiagonal{Stage: release.StagePerturb, Sample: first.smp, K: dom.Size(), // K ≤ 2^62
		Gamma: plan.gamma, Epsilon: plan.epsilon, Releases: plan.hist.Releases}
	if plan.hist.Releases > 1 {
		rel.GammaComposed = plan.hist.GammaProduct
	}
	if plan.releases > 1 {
		rel.EpsilonComposed, rel.SampleReleases = plan.epsComposed, plan.releases
	}
	meta := table.Meta{release.KeyPad: release.PadKind(all)}
	for _, in := range ins {
		o.markInsecureSeed(meta, in.r)
	}
	rel.Encode(meta)
	if id, ok := first.r.Meta()[release.KeySampleID]; ok {
		meta[release.KeySampleID] = id
	}
	if keyed != nil {
		meta[release.KeyNoise] = release.NoisePRF
		// Public: tells the parts of this release from those of another.
		meta[release.KeyNoiseID] = plan.noiseID
	}
	part.Encode(meta, first.smp.M)
	plan.hist.Set(meta) // the list of γ's ("gammas")
	if err := release.SetColumns(meta, all); err != nil {
		return err
	}
	schema := table.Int32Schema(release.Names(all))
	protect := o.Inputs
	if noiseMaster != nil {
		protect = append(slices.Clip(o.Inputs), o.gammaOpts().NoiseKey) // never overwritten by -o
	}
	w, err := o.Streams.Create(o.Output, schema, meta, first.r.Format(), protect)
	if err != nil {
		return err
	}
	defer w.Abort()
	if err := o.recordStream(led, first, plan); err != nil {
		return err
	}
	if err := perturbRows(o, ins, mech, keyed, schema, w, part); err != nil {
		return err
	}
	return o.recordAndCommit(led, first, plan, w)
}

// checkGammaFlags refuses a privacy level given twice or not at all, and
// the flags that do not apply to gamma-diagonal.
func (o *Options) checkGammaFlags() error {
	f := o.cmd.Flags()
	epsGiven, gammaGiven := f.Changed("epsilon"), f.Changed("gamma")
	switch {
	case epsGiven == gammaGiven:
		return cli.Usagef("give the privacy level: either --epsilon E or --gamma G")
	case epsGiven && !cli.Positive.Contains(o.Epsilon):
		return cli.CheckEpsilon("epsilon", o.Epsilon)
	case gammaGiven && !cli.Above(1).Contains(o.gammaOpts().Gamma):
		return cli.CheckGamma("gamma", o.gammaOpts().Gamma)
	case o.gammaOpts().NoiseKey != "" && o.gammaOpts().AllowRecompose:
		return cli.Usagef("--noise-key cannot make a further release (--allow-recompose): its offsets are a function of the key and the sample, so they would repeat; release a new sample")
	case f.Changed("keep-order"):
		// decrypt joins the curators' files by row position, so
		// gamma-diagonal never reorders; its order is the sample's, which
		// sample draws at random.
		return cli.Usagef("--keep-order does not apply to gamma-diagonal: it always keeps the row order, which decrypt needs to match each row with its pads")
	}
	stdin := 0
	for _, p := range o.Inputs {
		if table.IsStdio(p) {
			stdin++
		}
	}
	if stdin > 1 {
		return cli.Usagef("standard input (-) can be only one of the inputs")
	}
	return nil
}

// reuse opens the curators' encrypted files: they are read through
// table.Cursor alone (perturbRows), which copies each batch's codes out and
// keeps nothing of a batch past the next Next, so a Parquet reader may hand
// a released batch's buffers to a later one (table.ReadOptions.
// ReuseBuffers), as decrypt's do. Fresh, zeroed buffers for every row group
// were most of what made a 10M-row perturb spend ~10% more CPU on 2 cores
// than on 1 (runtime.memclrNoHeapPointers tripled).
var reuse = table.ReadOptions{ReuseBuffers: true}

// openGammaInputs opens the curators' encrypted files, checks that they
// come from one sampling and that no column is in two of them, and
// returns their columns in input order. The caller closes the inputs
// returned, also with an error.
func (o *Options) openGammaInputs() ([]*gammaInput, []release.Column, error) {
	ins := make([]*gammaInput, 0, len(o.Inputs))
	for _, p := range o.Inputs {
		r, err := o.Streams.OpenWith(p, reuse)
		if err != nil {
			return ins, nil, err
		}
		in := &gammaInput{r: r}
		ins = append(ins, in)
		if err := in.load(); err != nil {
			return ins, nil, err
		}
	}
	var all []release.Column
	seen := map[string]string{}
	first := ins[0]
	for _, in := range ins {
		if err := sameSampling(first, in); err != nil {
			return ins, nil, err
		}
		for _, c := range in.cols {
			if other, ok := seen[c.Name]; ok {
				return ins, nil, fmt.Errorf("column %q is in both %s and %s: each column must come from one curator; give each encrypted file once", c.Name, other, in.r.Name())
			}
			seen[c.Name] = in.r.Name()
		}
		all = append(all, in.cols...)
	}
	return ins, all, nil
}

// load reads and checks one input's metadata.
func (in *gammaInput) load() error {
	name, meta := in.r.Name(), in.r.Meta()
	switch stage := meta[release.KeyStage]; stage {
	case release.StageEncrypt, release.StagePerturb:
	case release.StageKey:
		return fmt.Errorf("%s is a key file, not an encrypted table: give the server the file encrypt wrote with -o, and keep the key for the researcher", name)
	default:
		if stage == "" {
			stage = "none"
		}
		return fmt.Errorf("%s is not encrypted (stage: %s): the server perturbs only encrypt's output; run encrypt --codebook FILE --key-out KEY on it first", name, stage)
	}
	if meta[release.KeyStage] == release.StagePerturb {
		// A further release composes with this one's γ: typed and
		// checked, so that an edited history cannot understate ε.
		var g release.GammaDiagonal
		if err := g.Decode(meta, name); err != nil {
			return err
		}
	}
	var enc release.Encrypted
	if err := enc.Decode(meta, name); err != nil {
		return err
	}
	in.smp, in.cols, in.hist = enc.Sample, enc.Columns, enc.History
	if meta[release.KeyStage] == release.StagePerturb && in.hist.Releases == 0 {
		return fmt.Errorf("%s: a perturbed table without a release counter; the file was damaged: re-create it", name)
	}
	var err error
	if in.part, err = release.ReadPart(meta, name, in.smp.M); err != nil {
		return err
	}
	if n := in.r.NumRows(); n >= 0 && n != in.part.Rows {
		if in.part.IsWhole(in.smp.M) {
			return fmt.Errorf("%s has %d rows but its metadata says m = %d: the file is truncated or was edited; re-create it with encrypt", name, n, in.smp.M)
		}
		return fmt.Errorf("%s has %d rows but its metadata says it holds %s: the file is truncated or was edited; re-create it with encrypt", name, n, in.part)
	}
	return nil
}

// selectPart is the part of the sample this run perturbs: what the inputs
// hold (they must hold the same rows), or --first-row/--rows within it, in
// which case the inputs are read from there. A part needs --noise-key: the
// offsets of its rows must be those of the one release that all parts
// and their retries make up (a fresh key would make each part a release of
// its own).
func (o *Options) selectPart(ins []*gammaInput) (release.Part, error) {
	g := o.gammaOpts()
	f := o.cmd.Flags()
	first := ins[0]
	have := first.part
	for _, in := range ins[1:] {
		if in.part != have {
			return have, fmt.Errorf("%s holds %s and %s holds %s of the sample: the curators' parts are joined by position, so give the same part of every curator's file", first.r.Name(), have, in.r.Name(), in.part)
		}
	}
	want := have
	if f.Changed("rows") && !f.Changed("first-row") {
		return want, cli.Usagef("--rows needs --first-row: say where the part starts")
	}
	if f.Changed("first-row") {
		want = release.Part{First: g.FirstRow, Rows: g.Rows}
		if g.Rows == 0 {
			want.Rows = have.End() - g.FirstRow
		}
		if g.FirstRow < have.First || g.Rows < 0 || want.Rows < 1 || want.End() > have.End() {
			return have, cli.Usagef("--first-row %d --rows %d is not within the rows the inputs hold, %s of the sample's m = %d", g.FirstRow, g.Rows, have, first.smp.M)
		}
		for _, in := range ins {
			in.r = pipeline.SelectRows(in.r, want.First-have.First, want.Rows)
		}
	}
	if !want.IsWhole(first.smp.M) && g.NoiseKey == "" {
		return want, cli.Usagef("%s of the sample is a part: perturb it with --noise-key FILE, so that all parts (and their retries) make one release with offsets re-computable by row; without it each part would draw its own noise", want)
	}
	return want, nil
}

// sameSampling checks that b comes from the same sampling as a.
func sameSampling(a, b *gammaInput) error {
	an, bn := a.r.Name(), b.r.Name()
	switch {
	case a.smp.M != b.smp.M:
		return fmt.Errorf("%s has m = %d rows and %s has m = %d: the curators' files come from different samplings; every curator must sample with the same --secret and -m", an, a.smp.M, bn, b.smp.M)
	case a.smp.N != b.smp.N:
		return fmt.Errorf("%s was sampled from n = %d rows and %s from n = %d: the curators' tables differ; every curator must sample the same people with the same --secret and -m", an, a.smp.N, bn, b.smp.N)
	case a.smp.Fingerprint != b.smp.Fingerprint:
		return fmt.Errorf("%s and %s come from different samplings (their sample fingerprints differ): every curator must sample with the same --secret and -m", an, bn)
	}
	return nil
}

// jointDomain is G = Z_{k_1} × … × Z_{k_d} of all inputs' columns, with a
// clear message when K exceeds pram.MaxJointSize.
func jointDomain(cols []release.Column) (pram.Domain, error) {
	var (
		k        uint64 = 1
		overflow bool
		parts    = make([]string, len(cols))
	)
	for i, c := range cols {
		hi, lo := bits.Mul64(k, uint64(c.K))
		overflow = overflow || hi != 0 || lo > pram.MaxJointSize
		k = lo
		parts[i] = fmt.Sprintf("%s (%d)", c.Name, c.K)
	}
	if overflow {
		return pram.Domain{}, fmt.Errorf("the joint domain %s has more than 2^62 values: γ-diagonal PRAM needs K ≤ 2^62; release fewer columns, or bucket them more coarsely in the codebook", strings.Join(parts, " × "))
	}
	return pram.NewDomain(release.Alphabets(cols))
}

// gammaPlan chooses γ and accounts for ε, including earlier releases of
// the same sample.
func (o *Options) gammaPlan(ins []*gammaInput) (gammaPlan, error) {
	n, m := int(ins[0].smp.N), int(ins[0].smp.M)
	var p gammaPlan
	var err error
	if o.cmd.Flags().Changed("epsilon") {
		if p.gamma, err = pram.GammaFromEpsilon(n, m, o.Epsilon); err != nil {
			return p, cli.Usagef("--epsilon %v with n = %d, m = %d: %v", o.Epsilon, n, m, err)
		}
	} else {
		p.gamma = o.gammaOpts().Gamma
	}
	if p.epsilon, err = pram.EpsilonFromGamma(n, m, p.gamma); err != nil {
		return p, err
	}
	// Earlier releases: the most perturbed input bounds the history (a
	// conservative choice when inputs differ).
	prior := release.History{GammaProduct: 1}
	for _, in := range ins {
		if in.hist.Releases > prior.Releases || in.hist.Releases == prior.Releases && in.hist.GammaProduct > prior.GammaProduct {
			prior = in.hist
		}
	}
	p.hist = prior.Then(p.gamma)
	return p, nil
}

// gammaChunk is one chunk of joint rows, rows row0… of the sample.
type gammaChunk struct {
	block [][]uint32 // one column per joint component, pipeline.BatchChunkRows long
	n     int
	row0  int64
	// pend[i] is input i's rows, still to be copied into block by the
	// worker (table.Cursor.Defer): off the reading goroutine.
	pend []table.Pending
}

// perturbRows reads the inputs in lockstep, one chunk of rows at a time,
// perturbs the chunks on all cores (pipeline.Run) with offsets keyed by
// the row's index in the sample, and writes them in input order. Memory: a
// fixed number of chunks in flight plus one batch per input, whatever m is.
//
// The offsets are pram.KeyedOffsets under the --noise-key release key, or
// else under a run key from crypto/rand (from --seed only under
// --insecure-seed) that is never stored: either way row i's offset is a
// function of the key and i alone, with the exact γ-diagonal law, so the
// output does not depend on the chunking or the number of cores.
func perturbRows(o *Options, ins []*gammaInput, mech *pram.Mechanism, keyed *pram.KeyedOffsets, schema *arrow.Schema, w table.Writer, part release.Part) error {
	d := schema.NumFields()
	if keyed == nil {
		key := o.Seed.Key(o.cmd, "perturb/gamma-diagonal/offsets")
		var err error
		if keyed, err = pram.NewKeyedOffsets(mech, key[:]); err != nil {
			return err
		}
	}
	curs := make([]*table.Cursor, len(ins))
	for i, in := range ins {
		c, err := table.NewCursor(in.r, release.Names(in.cols), release.Alphabets(in.cols), false)
		if err != nil {
			return err
		}
		curs[i] = c
	}
	opts := pipeline.Options{}.Resolve()
	free := make(chan *gammaChunk, opts.InFlight)
	for range opts.InFlight {
		free <- &gammaChunk{block: table.Block(d, pipeline.BatchChunkRows()), pend: make([]table.Pending, len(ins))}
	}
	m := part.Rows // rows this run reads from each input
	meter := o.Streams.Progress("perturb: rows")
	defer meter.Done()
	parts := make([][][]uint32, len(ins))
	// back returns a chunk to the free list, its pending rows released.
	back := func(c *gammaChunk) {
		for i := range c.pend {
			c.pend[i].Release()
		}
		free <- c
	}
	next := func() (*gammaChunk, bool, error) {
		c := <-free // never blocks: at most InFlight chunks are out
		off, n := 0, -1
		for i, cur := range curs {
			parts[i] = c.block[off : off+len(ins[i].cols)]
			off += len(ins[i].cols)
			got, err := cur.Defer(parts[i], &c.pend[i])
			if err != nil {
				back(c)
				return nil, false, err
			}
			if n >= 0 && got != n {
				back(c)
				return nil, false, rowCountError(ins, curs, m)
			}
			n = got
		}
		if n == 0 || curs[0].Rows() > m {
			back(c)
			if curs[0].Rows() != m {
				return nil, false, rowCountError(ins, curs, m)
			}
			return nil, false, nil
		}
		c.n, c.row0 = n, part.First+curs[0].Rows()-int64(n)
		return c, true, nil
	}
	work := func(c *gammaChunk) (*gammaChunk, error) {
		off := 0
		for i := range ins {
			err := c.pend[i].Fill(c.block[off : off+len(ins[i].cols)])
			off += len(ins[i].cols)
			if err != nil {
				back(c)
				return nil, err
			}
		}
		views := make([][]uint32, d)
		for j := range views {
			views[j] = c.block[j][:c.n]
		}
		// row identity: the row's index in the sample
		return c, keyed.PerturbColumns(uint64(c.row0), views)
	}
	// Output batches of a fixed size, so the file's bytes do not depend
	// on the chunk size.
	wb := pipeline.NewBlocks(w, d, table.DefaultBatchSize, func(cols [][]uint32, n int) arrow.RecordBatch {
		return table.Int32Batch(schema, cols, n)
	})
	emit := func(c *gammaChunk) error {
		err := wb.Write(c.block, 0, c.n)
		back(c)
		meter.Add(int64(c.n))
		return err
	}
	if err := pipeline.Run(context.Background(), opts, next, work, emit); err != nil {
		return err
	}
	return wb.Flush()
}

// rowCountError names the input whose row count disagrees with m or with
// the others.
func rowCountError(ins []*gammaInput, curs []*table.Cursor, m int64) error {
	short, long := 0, 0
	for i, c := range curs {
		if c.Rows() < curs[short].Rows() {
			short = i
		}
		if c.Rows() > curs[long].Rows() {
			long = i
		}
	}
	switch {
	case curs[long].Rows() > m:
		return fmt.Errorf("%s has more rows than its metadata's m = %d: the file was edited; re-create it with encrypt", ins[long].r.Name(), m)
	case short != long:
		return fmt.Errorf("%s ended after %d rows but %s goes on (m = %d in the metadata): %s is truncated; re-create it with encrypt", ins[short].r.Name(), curs[short].Rows(), ins[long].r.Name(), m, ins[short].r.Name())
	}
	return fmt.Errorf("%s ended after %d rows but its metadata says m = %d: the file is truncated; re-create it with encrypt", ins[short].r.Name(), curs[short].Rows(), m)
}

// readNoiseKey reads --noise-key; errors never quote the file's content.
func (o *Options) readNoiseKey() ([]byte, error) {
	path := o.gammaOpts().NoiseKey
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cannot read the noise key %s: %v; check the path, or create a key with: head -c 32 /dev/urandom > %s && chmod 600 %s", path, err, path, path)
	}
	k, err := release.ParsePRFKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %v; create a noise key with: head -c 32 /dev/urandom > FILE", path, strings.Replace(err.Error(), "a PRF key", "a noise key", 1))
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		o.Streams.Warnf("perturb", "the noise key %s can be read by other users (mode %s): chmod 600 %s", path, st.Mode().Perm(), path)
	}
	return k, nil
}
