package stage

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/bits"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
	perturbcmd "github.com/pramkit/pramkit/pkg/cmd/perturb"
	"github.com/pramkit/pramkit/pkg/ledger"
	"github.com/pramkit/pramkit/pkg/pram"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
	"github.com/pramkit/pramkit/pkg/version"
)

// Perturb is γ-diagonal PRAM at the server (Lin–Wang–Rane §III-A) as
// "perturb --mechanism gamma-diagonal" does it: the curators' encrypted
// rows are joined by row index (rowjoin.go), and row i's joint ciphertext
// c becomes c + o with o = pram.KeyedOffsets' offset of row i — under the
// --noise-key release key (release.DeriveNoiseKey of the key, the sample
// fingerprint, γ and the curators' key ids), or else under a run key drawn
// once on the driver (crypto/rand; from --seed only under
// --insecure-seed). Either way the offset is a function of the key and i
// alone, with the exact γ-diagonal law: a retried bundle recomputes the
// same offsets, which it must (a fresh draw on retry would both change the
// release's distribution and pair pads with the wrong ciphertexts), and
// the release equals the tool's on the same inputs and keys.

func init() {
	beam.RegisterType(reflect.TypeOf((*perturbShardFn)(nil)).Elem())
	register.DoFn4x1[context.Context, int64, func(*piece) bool, func(string), error](&perturbShardFn{})
}

// perturbFlags are perturb's gamma-diagonal flags that pramkit-beam
// perturb takes.
type perturbFlags struct {
	mechanism        string
	epsilon, gamma   float64
	noiseKey, ledger string
	noLedger, recomp bool
	seed             cli.Seed
}

func parsePerturbFlags(c Config) (perturbFlags, *cobra.Command, int64, error) {
	var f perturbFlags
	cmd, shardRows, err := stageFlags("perturb", c, func(cmd *cobra.Command) {
		fs := cmd.Flags()
		fs.StringVar(&f.mechanism, "mechanism", release.MechanismGamma, "")
		fs.Float64Var(&f.epsilon, "epsilon", 0, "")
		fs.Float64Var(&f.gamma, "gamma", 0, "")
		fs.StringVar(&f.noiseKey, "noise-key", "", "")
		fs.StringVar(&f.ledger, "ledger", "", "")
		fs.BoolVar(&f.noLedger, "no-ledger", false, "")
		fs.BoolVar(&f.recomp, "allow-recompose", false, "")
		cli.AddSeedFlag(cmd, &f.seed)
		cli.AddInsecureSeedFlag(cmd, &f.seed)
	})
	if err != nil {
		return f, nil, 0, err
	}
	fs := cmd.Flags()
	epsGiven, gammaGiven := fs.Changed("epsilon"), fs.Changed("gamma")
	switch {
	case f.mechanism != release.MechanismGamma:
		return f, nil, 0, cli.Usagef("--mechanism %s: pramkit-beam perturb runs gamma-diagonal, the server's step of the release pipeline (bitflip and ddps are local mechanisms: run perturb on each owner's table)", f.mechanism)
	case epsGiven == gammaGiven:
		return f, nil, 0, cli.Usagef("give the privacy level: either --epsilon E or --gamma G")
	case epsGiven && !cli.Positive.Contains(f.epsilon):
		return f, nil, 0, cli.CheckEpsilon("epsilon", f.epsilon)
	case gammaGiven && !cli.Above(1).Contains(f.gamma):
		return f, nil, 0, cli.CheckGamma("gamma", f.gamma)
	case f.recomp:
		return f, nil, 0, cli.Usagef("--allow-recompose: pramkit-beam perturb makes first releases only; a further release of a sample goes through the perturb tool, which accounts for it in the ledger")
	case f.noLedger && fs.Changed("ledger"):
		return f, nil, 0, cli.Usagef("--ledger and --no-ledger contradict each other: give one")
	}
	return f, cmd, shardRows, nil
}

// curator is one curator's encrypted shards.
type curator struct {
	files []inputFile
	enc   release.Encrypted
	base  map[string]string // metadata without the part
	part  release.Part
}

// name is how messages call the curator: its first shard.
func (c *curator) name() string {
	if len(c.files) == 1 {
		return c.files[0].path
	}
	return c.files[0].path + " and its other shards"
}

// groupCurators sorts the encrypted shards into curators by their columns
// (each curator's encrypt run has its own columns and key id), in the order
// of their first shard's name: the curators' order, which the tool takes
// from its arguments, decides the release's column order.
func groupCurators(ins []inputFile) ([]*curator, error) {
	var out []*curator
	byCols := map[string]*curator{}
	for _, in := range ins {
		switch stage := in.meta[release.KeyStage]; stage {
		case release.StageEncrypt:
		case release.StagePerturb:
			return nil, fmt.Errorf("%s was already perturbed: pramkit-beam perturb makes first releases only; a further release goes through the perturb tool and its ledger", in.path)
		case release.StageKey:
			return nil, fmt.Errorf("%s is a key file, not an encrypted table: give the server the shards encrypt wrote, and keep the key for the researcher", in.path)
		default:
			if stage == "" {
				stage = "none"
			}
			return nil, fmt.Errorf("%s is not encrypted (stage: %s): the server perturbs only encrypt's output", in.path, stage)
		}
		var enc release.Encrypted
		if err := enc.Decode(in.meta, in.path); err != nil {
			return nil, err
		}
		if enc.History.Releases > 0 {
			return nil, fmt.Errorf("%s comes from a release of this sample (%d before): a further release composes; make it with the perturb tool, which accounts for it", in.path, enc.History.Releases)
		}
		key, _ := json.Marshal(enc.Columns)
		c, ok := byCols[string(key)]
		if !ok {
			c = &curator{enc: enc, base: withoutPart(in.meta)}
			byCols[string(key)] = c
			out = append(out, c)
		} else if !maps.Equal(withoutPart(in.meta), c.base) {
			return nil, fmt.Errorf("%s: its metadata differs from %s's (besides first_row and rows): every shard of a curator must be a part of one encrypt run", in.path, c.files[0].path)
		}
		c.files = append(c.files, in)
	}
	return out, nil
}

// Perturb perturbs the curators' encrypted shards (--input matches all of
// them) on the runner into PREFIX-*-of-*.EXT: the release that
// "perturb [--ledger L|--no-ledger] [--noise-key K] --epsilon E CURATORS…"
// writes, recorded in the same ledger.
func Perturb(ctx context.Context, c Config) error {
	pf, cmd, shardRows, err := parsePerturbFlags(c)
	if err != nil {
		return err
	}
	streams := c.streams()
	files, err := c.inputs()
	if err != nil {
		return err
	}
	protect := slices.Clone(files)
	if pf.noiseKey != "" {
		protect = append(protect, pf.noiseKey)
	}
	if err := checkShardOutput(c.Output, protect); err != nil {
		return cli.Usagef("%v", err)
	}
	var noiseMaster []byte
	if pf.noiseKey != "" {
		b, err := os.ReadFile(pf.noiseKey)
		if err != nil {
			return fmt.Errorf("cannot read the noise key %s; check the path, or create a key with: head -c 32 /dev/urandom > %s && chmod 600 %s", pf.noiseKey, pf.noiseKey, pf.noiseKey)
		}
		if noiseMaster, err = release.ParsePRFKey(b); err != nil {
			return fmt.Errorf("%s: %v; create a noise key with: head -c 32 /dev/urandom > FILE", pf.noiseKey, strings.Replace(err.Error(), "a PRF key", "a noise key", 1))
		}
	}
	ins, err := openMeta(files)
	if err != nil {
		return err
	}
	curs, err := groupCurators(ins)
	if err != nil {
		return err
	}
	first := curs[0]
	smp := first.enc.Sample
	var all []release.Column
	seen := map[string]string{}
	for _, cu := range curs {
		s := cu.enc.Sample
		switch {
		case s.M != smp.M || s.N != smp.N || s.Fingerprint != smp.Fingerprint:
			return fmt.Errorf("%s and %s come from different samplings (n, m or fingerprint differ): every curator must sample with the same --secret and -m", first.name(), cu.name())
		}
		for _, col := range cu.enc.Columns {
			if other, ok := seen[col.Name]; ok {
				return fmt.Errorf("column %q is in both %s and %s: each column must come from one curator", col.Name, other, cu.name())
			}
			seen[col.Name] = cu.name()
		}
		all = append(all, cu.enc.Columns...)
		if cu.part, err = readParts(cu.files, smp.M, cu.name()); err != nil {
			return err
		}
		if cu.part != first.part {
			return fmt.Errorf("%s holds %s and %s holds %s of the sample: the curators' rows are joined by row, so give the same rows of every curator", first.name(), first.part, cu.name(), cu.part)
		}
	}
	part := first.part
	if !part.IsWhole(smp.M) && noiseMaster == nil {
		return cli.Usagef("%s of the sample is a part: perturb it with --noise-key FILE, so that all parts make one release", part)
	}
	ks := release.Alphabets(all)
	var k uint64 = 1
	for _, col := range all {
		hi, lo := bits.Mul64(k, uint64(col.K))
		if hi != 0 || lo > pram.MaxJointSize {
			return fmt.Errorf("the joint domain of %v has more than 2^62 values: γ-diagonal PRAM needs K ≤ 2^62; release fewer columns, or bucket them more coarsely", release.Names(all))
		}
		k = lo
	}
	dom, err := pram.NewDomain(ks)
	if err != nil {
		return err
	}
	n, m := int(smp.N), int(smp.M)
	gamma := pf.gamma
	if cmd.Flags().Changed("epsilon") {
		if gamma, err = pram.GammaFromEpsilon(n, m, pf.epsilon); err != nil {
			return cli.Usagef("--epsilon %v with n = %d, m = %d: %v", pf.epsilon, n, m, err)
		}
	}
	eps, err := pram.EpsilonFromGamma(n, m, gamma)
	if err != nil {
		return err
	}
	if _, err := pram.NewMechanism(gamma, dom); err != nil {
		return err
	}
	hist := release.History{GammaProduct: 1}.Then(gamma)
	var key [32]byte
	noiseID := ""
	if noiseMaster != nil {
		ids := make([]string, len(all))
		for j, col := range all {
			ids[j] = col.KeyID
		}
		key = release.DeriveNoiseKey(noiseMaster, smp.Fingerprint, gamma, ids)
		noiseID = release.NoiseID(key)
	} else {
		key = pf.seed.Key(cmd, "perturb/gamma-diagonal/offsets")
	}

	led, err := perturbcmd.OpenLedger(pf.ledger, pf.noLedger, streams)
	if err != nil {
		return err
	}
	if led != nil {
		defer led.Close() // held until the release is recorded and written
	}

	rel := release.GammaDiagonal{Stage: release.StagePerturb, Sample: smp, K: dom.Size(), Gamma: gamma, Epsilon: eps, Releases: hist.Releases}
	meta := table.Meta{release.KeyPad: release.PadKind(all)}
	for _, cu := range curs {
		cli.CarryInsecureSeed(streams, "perturb", cu.name(), cu.base, meta)
	}
	pf.seed.Mark(meta)
	rel.Encode(meta)
	if id, ok := first.base[release.KeySampleID]; ok {
		meta[release.KeySampleID] = id
	}
	if noiseMaster != nil {
		meta[release.KeyNoise] = release.NoisePRF
		meta[release.KeyNoiseID] = noiseID
	}
	hist.Set(meta)
	if err := release.SetColumns(meta, all); err != nil {
		return err
	}
	release.Stamp(meta, version.String())

	l := layout{M: smp.M, First: part.First, End: part.End(), ShardRows: shardRows}
	rf := &readCodesFn{Files: map[string]int{}}
	for t, cu := range curs {
		l.Tables = append(l.Tables, cu.name())
		l.Widths = append(l.Widths, len(cu.enc.Columns))
		for _, in := range cu.files {
			rf.Files[in.path] = t
		}
		rf.Names = append(rf.Names, release.Names(cu.enc.Columns))
		rf.Ks = append(rf.Ks, release.Alphabets(cu.enc.Columns))
		rf.Secret = append(rf.Secret, false)
		rf.Meta = append(rf.Meta, cu.base)
	}
	rf.L = l
	ext := outputExt(first.files[0].format)
	// The ledger: a first release only (a retry of a --noise-key release
	// is its own record), recorded before the shards are written and
	// removed if they could not be, as the tool does: a run killed in
	// between over-counts, never under-counts.
	undo := func() error { return nil }
	if led != nil {
		prev, err := led.Lookup(smp.Fingerprint)
		if err != nil {
			return err
		}
		before := len(prev)
		if noiseID != "" {
			prev = slices.DeleteFunc(prev, func(e ledger.Entry) bool { return e.NoiseID == noiseID })
		}
		if len(prev) > 0 {
			last := prev[len(prev)-1]
			return fmt.Errorf("this sample was already released (%d release(s) in the ledger %s, the last on %s to %s): pramkit-beam perturb makes first releases only; a further release composes (the perturb tool with --allow-recompose accounts for it), or draw a new sample for an independent release", len(prev), led.Path(), last.Time.Format(time.RFC3339), last.Output)
		}
		if before == 0 {
			out, err := filepath.Abs(c.Output)
			if err != nil || isRemote(c.Output) {
				out = c.Output
			}
			undo, err = led.Append(ledger.Entry{Fingerprint: smp.Fingerprint, SampleID: first.base[release.KeySampleID], N: smp.N, M: smp.M,
				Gamma: gamma, Epsilon: eps, EpsilonComposed: eps, Releases: 1, Time: time.Now(),
				Output: fmt.Sprintf("%s-*-of-%05d%s", out, l.Shards(), outputExt(first.files[0].format)), ToolVersion: version.String(), NoiseID: noiseID})
			if err != nil {
				return err
			}
		}
	}
	p, s := beam.NewPipelineWithRoot()
	pieces := beam.ParDo(s, rf, readSplits(s, files))
	beam.ParDo(s, &perturbShardFn{L: l, Prefix: c.Output, Ext: ext, Names: release.Names(all), Ks: ks, Gamma: gamma, Key: key[:], Meta: meta}, beam.GroupByKey(s, pieces))
	if _, err := beam.Run(ctx, c.Runner, p); err != nil {
		removeShards(l, c.Output, ext)
		if uerr := undo(); uerr != nil {
			return fmt.Errorf("%v; and %v", pipelineError(c.Runner, err), uerr)
		}
		return pipelineError(c.Runner, err)
	}
	return nil
}

// perturbShardFn joins one shard's rows of every curator and perturbs them.
type perturbShardFn struct {
	L      layout            `json:"layout"`
	Prefix string            `json:"prefix"`
	Ext    string            `json:"ext"`
	Names  []string          `json:"names"`
	Ks     []uint32          `json:"ks"`
	Gamma  float64           `json:"gamma"`
	Key    []byte            `json:"key"`
	Meta   map[string]string `json:"meta"`

	keyed *pram.KeyedOffsets
}

func (f *perturbShardFn) Setup() error {
	dom, err := pram.NewDomain(f.Ks)
	if err != nil {
		return err
	}
	mech, err := pram.NewMechanism(f.Gamma, dom)
	if err != nil {
		return err
	}
	f.keyed, err = pram.NewKeyedOffsets(mech, f.Key)
	return err
}

func (f *perturbShardFn) ProcessElement(ctx context.Context, s int64, iter func(*piece) bool, emit func(string)) error {
	blocks, p, err := f.L.assemble(s, iter)
	if err != nil {
		return err
	}
	var joint [][]uint32
	for _, b := range blocks {
		joint = append(joint, b...)
	}
	// row identity: the row's index in the sample, as perturb's
	if err := f.keyed.PerturbColumns(uint64(p.First), joint); err != nil {
		return err
	}
	path := f.L.path(f.Prefix, f.Ext, s)
	schema := table.Int32Schema(f.Names)
	if err := writeShard(path, schema, f.Meta, p, f.L.M, func(write func(arrowBatch) error) error {
		return writeInt32(schema, joint, int(p.Rows), write)
	}); err != nil {
		return err
	}
	emit(path)
	return nil
}
