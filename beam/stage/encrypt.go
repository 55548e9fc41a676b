package stage

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"

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

// Encrypt is a per-row ParDo: each split of the sample is coded with the
// codebook and padded where it is read, row i of the sample (its index,
// see rowjoin.go) and column j getting the pad pad.Deriver computes for
// (i, j) under k_run = release.DeriveRunKey(--prf-key, nonce) — what
// "encrypt --prf-key" computes for that row. The pads are a function of
// the key and the row, so a retried bundle recomputes the same ones. The
// nonce is drawn once, on the driver (from --seed under --insecure-seed,
// as the tool draws it), and the driver writes the key file, which holds
// no rows for PRF pads. The key file has no sample_digest (a keyed hash of
// all the sample's codes in row order, a sequential pass that a cluster
// does not make): the tools decrypt with it, but encrypt --nonce-from
// refuses it.
//
// Only PRF pads (--prf-key): one-time pads would be m rows of key written
// in shards, and a retried bundle could not redraw them.

func init() {
	beam.RegisterType(reflect.TypeOf((*encryptFn)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*encryptShardFn)(nil)).Elem())
	register.DoFn3x1[context.Context, fileSplit, func(int64, piece), error](&encryptFn{})
	register.DoFn4x1[context.Context, int64, func(*piece) bool, func(string), error](&encryptShardFn{})
	register.Emitter1[string]()
}

// encryptFlags are encrypt's flags that pramkit-beam encrypt takes.
type encryptFlags struct {
	codebook, keyOut, prfKey string
	columns                  []string
	force                    bool
	policy                   codebook.Policy
	seed                     cli.Seed
}

func parseEncryptFlags(c Config) (encryptFlags, *cobra.Command, int64, error) {
	var f encryptFlags
	cmd, shardRows, err := stageFlags("encrypt", c, func(cmd *cobra.Command) {
		fs := cmd.Flags()
		fs.StringVar(&f.codebook, "codebook", "", "")
		fs.StringSliceVar(&f.columns, "columns", nil, "")
		fs.StringVar(&f.keyOut, "key-out", "", "")
		fs.BoolVar(&f.force, "force", false, "")
		fs.StringVar(&f.prfKey, "prf-key", "", "")
		fs.Var(&f.policy.Unknown, "unknown", "")
		fs.Var(&f.policy.Missing, "missing", "")
		cli.AddSeedFlag(cmd, &f.seed)
		cli.AddInsecureSeedFlag(cmd, &f.seed)
	})
	if err != nil {
		return f, nil, 0, err
	}
	switch {
	case f.keyOut == "":
		return f, nil, 0, cli.Usagef("--key-out FILE is required: the key is the only way to decrypt")
	case f.prfKey == "":
		return f, nil, 0, cli.Usagef("--prf-key FILE is required: pramkit-beam encrypt computes PRF pads, which a retried bundle recomputes (one-time pads would be drawn twice)")
	case f.policy.Missing == codebook.MissingDrop:
		return f, nil, 0, cli.Usagef("--missing drop is refused: dropping rows at one curator misaligns its rows with the other curators'; keep missing values as a category (--missing keep)")
	}
	return f, cmd, shardRows, nil
}

// Encrypt encrypts a sample's shards on the runner into PREFIX-*-of-*.EXT
// and writes the key file --key-out, as "encrypt --prf-key K --key-out KEY"
// does for the whole sample.
func Encrypt(ctx context.Context, c Config) error {
	ef, cmd, shardRows, err := parseEncryptFlags(c)
	if err != nil {
		return err
	}
	streams := c.streams()
	files, err := c.inputs()
	if err != nil {
		return err
	}
	if err := checkShardOutput(c.Output, append(slices.Clone(files), ef.keyOut)); err != nil {
		return cli.Usagef("%v", err)
	}
	b, err := os.ReadFile(ef.prfKey)
	if err != nil {
		return fmt.Errorf("cannot read the PRF key %s: %v; create a key with: head -c 32 /dev/urandom > %s && chmod 600 %s", ef.prfKey, errors.Unwrap(err), ef.prfKey, ef.prfKey)
	}
	master, err := release.ParsePRFKey(b)
	if err != nil {
		return fmt.Errorf("%s: %v; create a key with: head -c 32 /dev/urandom > FILE", ef.prfKey, err)
	}
	if _, err := os.Lstat(ef.keyOut); err == nil && !ef.force {
		return fmt.Errorf("%s exists: a key file is never replaced without --force (it may be the only key of a release)", ef.keyOut)
	}
	ins, err := openMeta(files)
	if err != nil {
		return err
	}
	first := ins[0]
	meta := first.meta
	switch stage := meta[release.KeyStage]; stage {
	case release.StageEncrypt, release.StagePerturb, release.StageKey:
		return fmt.Errorf("%s is already encrypted (stage %s): encrypt reads a curator's sample", first.path, stage)
	}
	smp, err := release.ReadSample(meta, first.path, "encrypt works on the output of sample; sample the table first")
	if err != nil {
		return err
	}
	hist, err := release.ReadHistory(meta, first.path)
	if err != nil {
		return err
	}
	base := withoutPart(meta)
	for _, in := range ins[1:] {
		if !maps.Equal(withoutPart(in.meta), base) {
			return fmt.Errorf("%s: its metadata differs from %s's (besides first_row and rows): every input must be a part of one sample", in.path, first.path)
		}
	}
	have, err := readParts(ins, smp.M, "the sample")
	if err != nil {
		return err
	}
	if !have.IsWhole(smp.M) {
		return fmt.Errorf("the inputs hold %s of the sample's m = %d: pramkit-beam encrypt encrypts a whole sample; give every part", have, smp.M)
	}

	// The codebook and columns, as encrypt chooses them.
	var cb *codebook.Codebook
	if ef.codebook != "" {
		if cb, err = codebook.Load(ef.codebook); err != nil {
			return err
		}
	} else if s, ok := meta[release.KeyCodebook]; ok {
		if cb, err = codebook.Parse([]byte(s)); err != nil {
			return fmt.Errorf("%s: the codebook in the metadata is not valid: %v; pass --codebook FILE", first.path, err)
		}
	} else {
		return cli.Usagef("no codebook: pass --codebook FILE; every curator must use the same one")
	}
	names := ef.columns
	if len(names) == 0 {
		for _, fl := range first.schema.Fields() {
			names = append(names, fl.Name)
		}
	}
	for j, name := range names {
		if slices.Contains(names[:j], name) {
			return cli.Usagef("--columns names %q twice", name)
		}
		if len(first.schema.FieldIndices(name)) == 0 {
			return fmt.Errorf("%s has no column %q; check --columns", first.path, name)
		}
		if _, ok := cb.Column(name); !ok {
			return fmt.Errorf("the codebook has no column %q (codebook columns: %v); add it, or choose the columns with --columns", name, cb.Names())
		}
	}
	sel, err := cb.Select(names)
	if err != nil {
		return err
	}
	if _, err := sel.Encoders(ef.policy); err != nil {
		return err
	}
	cbJSON, err := sel.MarshalJSON()
	if err != nil {
		return err
	}

	// The run's key: the tool's nonce from its generator, the key id from
	// crypto/rand (public, never from a seed).
	var id [8]byte
	crand.Read(id[:])
	keyID := hex.EncodeToString(id[:])
	r := ef.seed.Rand(cmd)
	var nb [16]byte
	for i := range nb {
		nb[i] = byte(r.Uint32())
	}
	nonce := hex.EncodeToString(nb[:])
	runKey := release.DeriveRunKey(master, nonce)
	cols := make([]release.Column, len(sel.Columns))
	ks := make([]uint32, len(sel.Columns))
	for j := range sel.Columns {
		col := &sel.Columns[j]
		one, _ := sel.Select([]string{col.Name()})
		ks[j] = uint32(col.K())
		cols[j] = release.Column{Name: col.Name(), K: ks[j], CodebookHash: one.Hash(), KeyID: keyID, Pad: release.PadPRF}
	}

	outMeta := table.Meta{}
	cli.CarryInsecureSeed(streams, "encrypt", first.path, meta, outMeta)
	ef.seed.Mark(outMeta)
	enc := release.Encrypted{Sample: smp, SampleID: meta[release.KeySampleID], Pad: release.PadPRF, Columns: cols, History: hist}
	if err := enc.Encode(outMeta); err != nil {
		return err
	}
	release.Stamp(outMeta, version.String())
	keyMeta := table.Meta{release.KeyPad: release.PadPRF}
	if outMeta[cli.InsecureSeedKey] == "true" {
		keyMeta[cli.InsecureSeedKey] = "true"
	}
	if err := (release.Key{Sample: smp, Columns: cols}).Encode(keyMeta); err != nil {
		return err
	}
	keyMeta[release.KeyCodebook] = string(cbJSON)
	keyMeta[release.KeyPRFKey] = hex.EncodeToString(runKey[:])
	keyMeta[release.KeyPRFNonce] = nonce

	// The key file holds no rows: it is created now (refusing to replace
	// one without --force before any work) and committed once every shard
	// is written, so that a failed run leaves neither.
	schema := table.Int32Schema(names)
	kw, err := streams.CreateKey(ef.keyOut, schema, keyMeta, table.Parquet, append(slices.Clone(files), ef.codebook, ef.prfKey), ef.force)
	if err != nil {
		return err
	}
	defer kw.Abort()

	l := layout{M: smp.M, First: 0, End: smp.M, ShardRows: shardRows, Tables: []string{c.Input}, Widths: []int{len(names)}}
	ext := outputExt(first.format)
	p, s := beam.NewPipelineWithRoot()
	pieces := beam.ParDo(s, &encryptFn{Codebook: cbJSON, Policy: ef.policy, Names: names, RunKey: runKey[:], Meta: base, L: l}, readSplits(s, files))
	beam.ParDo(s, &encryptShardFn{L: l, Prefix: c.Output, Ext: ext, Names: names, Meta: outMeta}, beam.GroupByKey(s, pieces))
	if _, err := beam.Run(ctx, c.Runner, p); err != nil {
		removeShards(l, c.Output, ext)
		return pipelineError(c.Runner, err)
	}
	if err := kw.Commit(); err != nil {
		removeShards(l, c.Output, ext)
		return err
	}
	return nil
}

// encryptFn codes and pads one split of the sample (a file, or a Parquet
// row group) and emits its ciphertexts keyed by output shard.
type encryptFn struct {
	Codebook []byte            `json:"codebook"` // of the encrypted columns
	Policy   codebook.Policy   `json:"policy"`
	Names    []string          `json:"names"`
	RunKey   []byte            `json:"run_key"`
	Meta     map[string]string `json:"meta"` // the sample's, without its part
	L        layout            `json:"layout"`

	encs []*codebook.Encoder
	ks   []uint32
	d    *pad.Deriver
}

func (f *encryptFn) Setup() error {
	cb, err := codebook.Parse(f.Codebook)
	if err != nil {
		return err
	}
	if f.encs, err = cb.Encoders(f.Policy); err != nil {
		return err
	}
	f.ks = make([]uint32, len(f.encs))
	for j, e := range f.encs {
		f.ks[j] = uint32(e.Column().K())
	}
	var k pad.Key
	copy(k[:], f.RunKey)
	f.d, err = pad.NewDeriver(k)
	return err
}

func (f *encryptFn) ProcessElement(ctx context.Context, sp fileSplit, emit func(int64, piece)) error {
	opt := table.ReadOptions{DictColumns: f.Names}
	if sp.Group >= 0 {
		opt.RowGroups = []int{sp.Group}
	}
	r, err := openTable(sp.Path, opt)
	if err != nil {
		return err
	}
	defer r.Close()
	if !maps.Equal(withoutPart(r.Meta()), f.Meta) {
		return fmt.Errorf("%s: its metadata differs from the first shard's (besides first_row and rows): every input must be a part of one sample", sp)
	}
	part, err := release.ReadPart(r.Meta(), sp.Path, f.L.M)
	if err != nil {
		return err
	}
	idx := make([]int, len(f.Names))
	coders := make([]*table.Coder, len(f.Names))
	for j, name := range f.Names {
		ix := r.Schema().FieldIndices(name)
		if len(ix) == 0 {
			return fmt.Errorf("%s has no column %q", sp.Path, name)
		}
		idx[j] = ix[0]
		coders[j] = table.NewCoder(f.encs[j].Index)
	}
	var x, ct, v [][]uint32
	read := int64(0) // rows of the split read so far
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		n := int(rec.NumRows())
		if x == nil || len(x[0]) < n {
			x, ct, v = table.Block(len(idx), n), table.Block(len(idx), n), table.Block(len(idx), n)
		}
		row0 := part.First + sp.FirstRow + read // the sample index of the batch's first row
		if row0+int64(n) > part.End() {
			return fmt.Errorf("%s has more rows than its metadata's %s: the file was edited; sample again", sp.Path, part)
		}
		for j, c := range idx {
			if bad, err := coders[j].Codes(x[j][:n], rec.Column(c), 0); bad >= 0 {
				return &table.DataError{File: sp.Path, Row: sp.FirstRow + read + int64(bad) + 1, Column: f.Names[j], Err: err}
			}
			if err := f.d.Pads(v[j][:n], uint64(row0), uint32(j), f.ks[j]); err != nil {
				return err
			}
			if err := pad.EncryptColumn(ct[j][:n], x[j][:n], v[j][:n], f.ks[j]); err != nil {
				return err
			}
		}
		f.L.emitRows(0, row0, ct, n, emit)
		read += int64(n)
	}
	if sp.Group < 0 && read != part.Rows {
		return fmt.Errorf("%s has %d rows but its metadata says it holds %s of the sample: the sample was truncated or edited; sample again", sp.Path, read, part)
	}
	return nil
}

// encryptShardFn writes one shard of ciphertexts.
type encryptShardFn struct {
	L      layout            `json:"layout"`
	Prefix string            `json:"prefix"`
	Ext    string            `json:"ext"`
	Names  []string          `json:"names"`
	Meta   map[string]string `json:"meta"`
}

func (f *encryptShardFn) ProcessElement(ctx context.Context, s int64, iter func(*piece) bool, emit func(string)) error {
	blocks, p, err := f.L.assemble(s, iter)
	if err != nil {
		return err
	}
	path := f.L.path(f.Prefix, f.Ext, s)
	schema := table.Int32Schema(f.Names)
	err = writeShard(path, schema, f.Meta, p, f.L.M, func(write func(rec arrowBatch) error) error {
		return writeInt32(schema, blocks[0], int(p.Rows), write)
	})
	if err != nil {
		return err
	}
	emit(path)
	return nil
}
