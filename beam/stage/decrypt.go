package stage

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/pad"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
	"github.com/pramkit/pramkit/pkg/version"
)

// Decrypt removes the curators' pads from a release as "decrypt" does:
// x̂ = (c̄ − v) mod k, then the codebook label of x̂. The release's shards
// and the key shards are joined by row index (rowjoin.go): a PRF key file
// (encrypt --prf-key, which pramkit-beam encrypt writes) holds no rows —
// row i's pads are pad.Deriver's under its run key, recomputed where the
// shard is decrypted — and a one-time-pad key file holds its pads as rows,
// whose shards (parts) join the release's by row index like a curator's.

func init() {
	beam.RegisterType(reflect.TypeOf((*decryptShardFn)(nil)).Elem())
	register.DoFn4x1[context.Context, int64, func(*piece) bool, func(string), error](&decryptShardFn{})
}

// slotSpec says where release column j finds its pads: key Key, its
// column Col; Table ≥ 0 is the joined table of a one-time-pad key, else
// RunKey derives them.
type slotSpec struct {
	Table  int
	Col    int
	RunKey []byte
}

// Decrypt decrypts a release's shards on the runner into PREFIX-*-of-*.EXT,
// as "decrypt --key K1 --key K2 … RELEASE" does; each --key is a key file
// or a glob of the shards of one (one-time pads).
func Decrypt(ctx context.Context, c Config) error {
	var keyArgs []string
	var unperturbed bool
	_, shardRows, err := stageFlags("decrypt", c, func(cmd *cobra.Command) {
		cmd.Flags().StringArrayVar(&keyArgs, "key", nil, "")
		cmd.Flags().BoolVar(&unperturbed, "unperturbed", false, "")
	})
	if err != nil {
		return err
	}
	if len(keyArgs) == 0 {
		return cli.Usagef("--key FILE is required: pass the key file of every curator whose columns are in the release")
	}
	streams := c.streams()
	files, err := c.inputs()
	if err != nil {
		return err
	}
	var keyFiles []string
	for _, k := range keyArgs {
		m, err := listFiles(context.Background(), k)
		if err != nil || len(m) == 0 {
			return cli.Usagef("--key %s matches no file", k)
		}
		slices.Sort(m)
		keyFiles = append(keyFiles, m...)
	}
	if err := checkShardOutput(c.Output, append(slices.Clone(files), keyFiles...)); err != nil {
		return cli.Usagef("%v", err)
	}
	rels, err := openMeta(files)
	if err != nil {
		return err
	}
	first := rels[0]
	name, meta := first.path, first.meta
	var smp release.Sample
	var perturbed *release.GammaDiagonal
	switch stage := meta[release.KeyStage]; {
	case stage == release.StagePerturb && !unperturbed:
		perturbed = new(release.GammaDiagonal)
		if err := perturbed.Decode(meta, name); err != nil {
			return err
		}
		smp = perturbed.Sample
	case stage == release.StagePerturb:
		return cli.Usagef("--unperturbed is for encrypted tables that were never perturbed, and %s is a release: drop --unperturbed", name)
	case stage == release.StageEncrypt && unperturbed:
		if smp, err = release.ReadSample(meta, name, "decrypt reads perturb's output"); err != nil {
			return err
		}
		streams.Warnf("decrypt", "%s was never perturbed: the output is the curators' plaintext sample, with no privacy protection; do not publish it", name)
	case stage == release.StageEncrypt:
		return fmt.Errorf("%s was never perturbed (stage encrypt): have the server perturb it, or pass --unperturbed to decrypt it as is, without any privacy protection", name)
	default:
		return fmt.Errorf("%s is not a release (stage %q): decrypt reads the output of perturb", name, stage)
	}
	cols, err := release.ReadColumns(meta, name, "decrypt reads perturb's output")
	if err != nil {
		return err
	}
	base := withoutPart(meta)
	for _, in := range rels[1:] {
		if !maps.Equal(withoutPart(in.meta), base) {
			return fmt.Errorf("%s: its metadata differs from %s's (besides first_row and rows): every input must be a part of one release", in.path, name)
		}
	}
	part, err := readParts(rels, smp.M, "the release")
	if err != nil {
		return err
	}

	// The keys, checked as decrypt checks them; one-time-pad key shards
	// are grouped into one joined table per encrypt run.
	byName := make(map[string]int, len(cols))
	for j, col := range cols {
		byName[col.Name] = j
	}
	slots := make([]*slotSpec, len(cols))
	cbCols := make([]codebook.Column, len(cols))
	l := layout{M: smp.M, First: part.First, End: part.End(), ShardRows: shardRows, Tables: []string{c.Input}, Widths: []int{len(cols)}}
	rf := &readCodesFn{Files: map[string]int{}, Names: [][]string{release.Names(cols)}, Ks: [][]uint32{release.Alphabets(cols)}, Secret: []bool{false}, Meta: []map[string]string{base}}
	for _, p := range files {
		rf.Files[p] = 0
	}
	otp := map[string]int{} // key id → joined table
	var otpFiles []inputFile
	keys, err := openMeta(keyFiles)
	if err != nil {
		return err
	}
	outMeta := meta.Clone()
	cli.CarryInsecureSeed(streams, "decrypt", name, meta, outMeta)
	for _, k := range keys {
		path, km := k.path, k.meta
		if stage := km[release.KeyStage]; stage != release.StageKey {
			return fmt.Errorf("%s is not a key file (stage: %q): pass the file that encrypt wrote with --key-out", path, stage)
		}
		notKey := "the key file is damaged; use the key file encrypt wrote with --key-out"
		var id release.Key
		if err := id.Decode(km, path); err != nil {
			return err
		}
		if err := id.Match(smp, cols, path, name); err != nil {
			return err
		}
		kcols, err := release.ReadColumns(km, path, notKey)
		if err != nil {
			return err
		}
		cb, err := codebook.Parse([]byte(km[release.KeyCodebook]))
		if err != nil {
			return fmt.Errorf("%s: the codebook in the metadata is not valid (%v): %s", path, err, notKey)
		}
		var runKey []byte
		tix := -1
		switch release.PadKind(kcols) {
		case release.PadPRF:
			rk, err := release.RunKeyFromMeta(km, path)
			if err != nil {
				return err
			}
			runKey = rk[:]
		case release.PadOTP:
			id := kcols[0].KeyID
			t, ok := otp[id]
			if !ok {
				t = len(l.Widths)
				otp[id] = t
				l.Tables = append(l.Tables, path)
				l.Widths = append(l.Widths, len(kcols))
				rf.Names = append(rf.Names, release.Names(kcols))
				rf.Ks = append(rf.Ks, release.Alphabets(kcols))
				rf.Secret = append(rf.Secret, true)
				rf.Meta = append(rf.Meta, withoutPart(km))
			} else if !maps.Equal(withoutPart(km), rf.Meta[t]) {
				return fmt.Errorf("%s: its metadata differs from %s's (besides first_row and rows): the shards of a key must come from one encrypt run", path, l.Tables[t])
			}
			rf.Files[path] = t
			otpFiles = append(otpFiles, k)
			tix = t
		default:
			return fmt.Errorf("%s mixes pad kinds: %s", path, notKey)
		}
		cli.CarryInsecureSeed(streams, "decrypt", path, km, outMeta)
		for i, kc := range kcols {
			j, ok := byName[kc.Name]
			if !ok {
				return fmt.Errorf("%s holds the pads of column %q, which %s does not have: it is a key for another release", path, kc.Name, name)
			}
			if s := slots[j]; s != nil {
				if s.Table >= 0 && s.Table == tix {
					continue // another shard of the same key
				}
				return fmt.Errorf("column %q is in two keys (the second: %s): pass each curator's key once", kc.Name, path)
			}
			if kc != cols[j] {
				return fmt.Errorf("%s does not match %s on column %q: pass the key written together with the encrypted file that the server perturbed", path, name, kc.Name)
			}
			one, err := cb.Select([]string{kc.Name})
			if err != nil || one.Hash() != kc.CodebookHash {
				return fmt.Errorf("%s: the codebook of column %q does not match its hash: %s", path, kc.Name, notKey)
			}
			slots[j] = &slotSpec{Table: tix, Col: i, RunKey: runKey}
			cc, _ := cb.Column(kc.Name)
			cbCols[j] = *cc
		}
	}
	var missing []string
	for j, s := range slots {
		if s == nil {
			missing = append(missing, cols[j].Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("no key for column %s of %s: pass --key with the key file of the curator who encrypted it", strings.Join(missing, ", "), name)
	}
	// One-time pads must cover the release's rows (the reader skips the
	// rest of a key's rows).
	for t := 1; t < len(l.Widths); t++ {
		var group []inputFile
		for _, k := range otpFiles {
			if rf.Files[k.path] == t {
				group = append(group, k)
			}
		}
		kp, err := readParts(group, smp.M, l.Tables[t])
		if err != nil {
			return err
		}
		if kp.First > part.First || kp.End() < part.End() {
			return fmt.Errorf("%s holds the one-time pads of %s of the sample, and the release holds %s: pass the key shards of these rows", l.Tables[t], kp, part)
		}
	}
	cb, err := codebook.New(cbCols...)
	if err != nil {
		return err
	}
	if err := (release.Decrypted{Sample: smp, Release: perturbed, Codebook: cb}).Encode(outMeta); err != nil {
		return err
	}
	release.Stamp(outMeta, version.String())
	outMeta = table.Meta(withoutPart(outMeta))
	rf.L = l
	specs := make([]slotSpec, len(slots))
	for j, s := range slots {
		specs[j] = *s
	}
	allFiles := slices.Clone(files) // and the one-time-pad keys (PRF keys hold no rows)
	for _, k := range otpFiles {
		allFiles = append(allFiles, k.path)
	}
	ext := outputExt(first.format)
	p, s := beam.NewPipelineWithRoot()
	pieces := beam.ParDo(s, rf, readSplits(s, allFiles))
	beam.ParDo(s, &decryptShardFn{L: l, Prefix: c.Output, Ext: ext, Names: release.Names(cols), Ks: release.Alphabets(cols), Slots: specs, Codebook: mustJSON(cb), Meta: outMeta}, beam.GroupByKey(s, pieces))
	if _, err := beam.Run(ctx, c.Runner, p); err != nil {
		removeShards(l, c.Output, ext)
		return pipelineError(c.Runner, err)
	}
	return nil
}

// mustJSON is a codebook's JSON (a codebook built by codebook.New always
// marshals).
func mustJSON(cb *codebook.Codebook) []byte {
	b, err := cb.MarshalJSON()
	if err != nil {
		panic(err)
	}
	return b
}

// decryptShardFn decrypts one shard of the release with its pads.
type decryptShardFn struct {
	L        layout            `json:"layout"`
	Prefix   string            `json:"prefix"`
	Ext      string            `json:"ext"`
	Names    []string          `json:"names"`
	Ks       []uint32          `json:"ks"`
	Slots    []slotSpec        `json:"slots"`
	Codebook []byte            `json:"codebook"`
	Meta     map[string]string `json:"meta"`

	derivers []*pad.Deriver
	labs     []*table.Labels
	schema   *arrow.Schema
}

func (f *decryptShardFn) Setup() error {
	cb, err := codebook.Parse(f.Codebook)
	if err != nil {
		return err
	}
	fields := make([]arrow.Field, len(f.Names))
	f.labs = make([]*table.Labels, len(f.Names))
	f.derivers = make([]*pad.Deriver, len(f.Names))
	for j, name := range f.Names {
		fields[j] = table.DictField(name)
		col, ok := cb.Column(name)
		if !ok {
			return fmt.Errorf("the codebook has no column %q", name)
		}
		f.labs[j] = table.NewLabels(col.Labels())
		if f.Slots[j].Table < 0 {
			var k pad.Key
			copy(k[:], f.Slots[j].RunKey)
			if f.derivers[j], err = pad.NewDeriver(k); err != nil {
				return err
			}
		}
	}
	f.schema = arrow.NewSchema(fields, nil)
	return nil
}

func (f *decryptShardFn) ProcessElement(ctx context.Context, s int64, iter func(*piece) bool, emit func(string)) error {
	blocks, p, err := f.L.assemble(s, iter)
	if err != nil {
		return err
	}
	ct := blocks[0]
	v := make([]uint32, p.Rows)
	for j, sl := range f.Slots {
		pads := v
		if sl.Table < 0 {
			// row identity: the row's index in the sample, as decrypt's
			if err := f.derivers[j].Pads(v, uint64(p.First), uint32(sl.Col), f.Ks[j]); err != nil {
				return err
			}
		} else {
			pads = blocks[sl.Table][sl.Col]
		}
		if err := pad.DecryptColumn(ct[j], ct[j], pads, f.Ks[j]); err != nil {
			return err
		}
	}
	path := f.L.path(f.Prefix, f.Ext, s)
	n := int(p.Rows)
	if err := writeShard(path, f.schema, f.Meta, p, f.L.M, func(write func(arrowBatch) error) error {
		for lo := 0; lo < n; lo += table.DefaultBatchSize {
			hi := min(n, lo+table.DefaultBatchSize)
			if err := write(table.CodesBatch(f.schema, columnsOf(ct, lo, hi), f.labs, hi-lo)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	emit(path)
	return nil
}
