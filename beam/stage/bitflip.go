package stage

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/pramkit/pramkit/pkg/bitflip"
	"github.com/pramkit/pramkit/pkg/cli"
	perturbcmd "github.com/pramkit/pramkit/pkg/cmd/perturb"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
	"github.com/pramkit/pramkit/pkg/version"
)

// Bitflip (K-randomization, Zhilyaev–Zeber) on Beam: "pramkit-beam perturb
// -- --mechanism bitflip …". It is a local mechanism: every row is
// randomized on its own, so the pipeline is one ParDo per split (a file,
// or a Parquet row group: split.go) and a write per output shard.
//
// Row identity is anonymize's (file index in the sorted --input glob, row
// number in the file): row = file·2^40 + row number (rowID). Row r's flips
// come from its own stream (tag "BFLP", r) of the run's key K, drawn with
// the CLI's own bitflip.Mechanism.RandomizeKeyed, so each bit flips with
// probability q independently, exactly as in the tool; K is drawn once on
// the driver (crypto/rand), or derived from --seed under --insecure-seed.
// A retried bundle re-reads the same split and redraws the same flips.
//
// The published rows are shuffled as anonymize's are: row r gets the order
// key PRF_K("BORD", r), goes to shard key mod S and is written in key order
// within its shard — i.i.d. uniform keys in any fixed order are a uniform
// permutation, unrelated to the input order (the tool shuffles too).
//
// The metadata is the tool's (perturbcmd.Options.BitflipRelease builds it
// from the same flags): a bitflip release records no row count, so each
// shard is a part of the release and "estimate SHARDS…" reads them all
// as one release (estimate's "Parts"), as pramkit-beam estimate does.
// Same key, input and split → the same shards, byte for byte; the flips
// are not the tool's (its rows are numbered across one file, not by
// (file, row)), but they have the same law.

var (
	tagBitflip      = rng.Tag("BFLP") // the tool's tag for the flips
	tagBitflipOrder = rng.Tag("BORD")
)

func init() {
	for _, t := range []any{bitBatch{}, bitflipSplitFn{}, writeBitShardFn{}} {
		beam.RegisterType(reflect.TypeOf(t))
	}
	register.DoFn3x1[context.Context, anonSplit, func(int, bitBatch), error](&bitflipSplitFn{})
	register.Emitter2[int, bitBatch]()
	register.DoFn3x1[context.Context, int, func(*bitBatch) bool, error](&writeBitShardFn{})
	register.Iter1[bitBatch]()
}

// LocalMechanism returns the --mechanism named in a perturb stage's flags
// when it is one of the local ones (bitflip, ddps), else "".
func LocalMechanism(args []string) string {
	for i, a := range args {
		var m string
		switch {
		case a == "--":
			return ""
		case a == "--mechanism" && i+1 < len(args):
			m = args[i+1]
		case strings.HasPrefix(a, "--mechanism="):
			m = strings.TrimPrefix(a, "--mechanism=")
		}
		if m == release.MechanismBitflip || m == release.MechanismDDPS {
			return m
		}
	}
	return ""
}

// PerturbLocal runs perturb's local mechanism bitflip or ddps (ddps.go)
// over the input's shards: c.Args are perturb's own flags (--mechanism
// bitflip --columns --codebook --lie|--epsilon, or --mechanism ddps
// --column --codebook --pi-s|--epsilon …, and --seed --insecure-seed),
// parsed by the perturb command itself. The release is PREFIX-00000.EXT, PREFIX-00001.EXT
// …, in the input's format, rows in a uniformly random order, every shard
// with the tool's metadata.
func PerturbLocal(ctx context.Context, c Config) error {
	streams := c.Streams
	if streams == nil {
		streams = cli.StdStreams()
	}
	var opts *perturbcmd.Options
	cmd := perturbcmd.NewCmd(streams, func(o *perturbcmd.Options) error { opts = o; return nil })
	if code := cli.Run(cmd, c.Args, streams); code != 0 {
		return &ExitError{Tool: "perturb", Code: code}
	}
	switch {
	case opts.Mechanism != release.MechanismBitflip && opts.Mechanism != release.MechanismDDPS:
		return cli.Usagef("internal error: PerturbLocal on --mechanism %s", opts.Mechanism)
	case len(opts.Inputs) != 1 || opts.Inputs[0] != "-":
		return cli.Usagef("unexpected %q: give the input as --input GLOB", opts.Inputs[0])
	case opts.Output.Path != "":
		return cli.Usagef("give no -o after --: pramkit-beam perturb writes PREFIX-NNNNN files (--output PREFIX)")
	case opts.Order.Keep:
		return cli.Usagef("--keep-order: shards on a cluster have no input order to keep; the release is written in a random order")
	}
	if err := c.localOutput("perturb"); err != nil {
		return err
	}
	files, err := c.inputs()
	if err != nil {
		return err
	}
	first, err := openTable(files[0], table.ReadOptions{})
	if err != nil {
		return err
	}
	release := opts.BitflipRelease
	if opts.Mechanism == releaseDDPS {
		release = opts.DDPSRelease
	}
	meta, names, err := release(first)
	first.Close()
	if err != nil {
		return err
	}
	stampRelease(meta)
	if len(names) > 64 {
		return cli.Usagef("--columns make L = %d bits: pramkit-beam perturb randomizes at most 64 bits a row; run the perturb tool, or release fewer columns", len(names))
	}
	ext := "." + table.FormatFromPath(files[0]).String()
	if table.FormatFromPath(files[0]) == table.Unknown {
		ext = ".csv"
	}
	if err := refuseOverwrite(c.Output, ext, files); err != nil {
		return err
	}
	key := rng.RunKey(opts.Seed.Value, cmd.Flags().Changed("seed") && opts.Seed.Insecure, "pramkit-beam/perturb-"+opts.Mechanism)
	shardRows := c.ShardRows
	if shardRows <= 0 {
		shardRows = DefaultShardRows
	}
	rows, err := estimateRows(files)
	if err != nil {
		return err
	}
	shards := int(max(1, (rows+shardRows-1)/shardRows))

	tmp, err := os.MkdirTemp(filepath.Dir(c.Output+"x"), ".pramkit-beam-bitflip-*")
	if err != nil {
		return fmt.Errorf("cannot make a temporary folder next to --output %s: %w", c.Output, err)
	}
	defer os.RemoveAll(tmp)
	p, s := beam.NewPipelineWithRoot()
	BitflipPipeline(s, files, BitflipParams{Key: key[:], Meta: meta, Names: names, Shards: shards, Dir: tmp, Ext: ext})
	if _, err := beam.Run(ctx, c.Runner, p); err != nil {
		return pipelineError(c.Runner, err)
	}
	return moveShards(tmp, c.Output, ext, shards, func(i int) error {
		return writeBitShard(tmp, ext, i, nil, meta, names)
	})
}

// releaseDDPS names ddps where a local variable hides package release.
const releaseDDPS = release.MechanismDDPS

// stampRelease stamps the version as the tools' writers do.
func stampRelease(meta table.Meta) { release.Stamp(meta, version.String()) }

// refuseOverwrite refuses an --output prefix whose shards would be inputs.
func refuseOverwrite(prefix, ext string, files []string) error {
	outs, _ := filepath.Glob(prefix + "-[0-9][0-9][0-9][0-9][0-9]" + ext)
	for _, in := range files {
		for _, o := range outs {
			if sameFile(in, o) {
				return cli.Usagef("--output %s would write over the input %s: choose another prefix", prefix, in)
			}
		}
	}
	return nil
}

// moveShards moves the n shards written under tmp into place as
// PREFIX-NNNNN.EXT (with a CSV's sidecar), writing the missing ones (no
// row went there) with empty; a failed run leaves none behind.
func moveShards(tmp, prefix, ext string, n int, empty func(i int) error) error {
	for i := range n {
		if _, err := os.Stat(filepath.Join(tmp, shardName("part", i, ext))); err != nil {
			if err := empty(i); err != nil {
				return err
			}
		}
	}
	for i := range n {
		src, dst := filepath.Join(tmp, shardName("part", i, ext)), shardName(prefix, i, ext)
		if err := os.Rename(src, dst); err != nil {
			return err
		}
		if _, err := os.Stat(src + ".meta.json"); err == nil {
			if err := os.Rename(src+".meta.json", dst+".meta.json"); err != nil {
				return err
			}
		}
	}
	return nil
}

// estimateRows is the input's row count, to choose the number of shards
// before reading: exact for Parquet (its footers), and for CSV the file's
// size over the mean length of its first lines.
func estimateRows(files []string) (int64, error) {
	var total int64
	for _, f := range files {
		if table.FormatFromPath(f) == table.Parquet {
			r, err := openTable(f, table.ReadOptions{})
			if err != nil {
				return 0, err
			}
			for _, n := range rowGroups(r) {
				total += n
			}
			r.Close()
			continue
		}
		fh, size, err := openSized(f)
		if err != nil {
			return 0, err
		}
		br := bufio.NewReader(io.LimitReader(fh, 1<<20))
		var lines, bytes int64
		for {
			l, err := br.ReadSlice('\n')
			if len(l) > 0 && err == nil {
				lines++
				bytes += int64(len(l))
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		fh.Close()
		if lines > 0 {
			total += size * lines / bytes
		}
	}
	return total, nil
}

// BitflipParams are the bitflip pipeline's parameters.
type BitflipParams struct {
	Key    []byte     // the run key (rng.KeySize bytes)
	Meta   table.Meta // the release's metadata (BitflipRelease)
	Names  []string   // the release's bit columns
	Shards int        // output shards
	Dir    string     // where the shards are written (part-NNNNN.EXT)
	Ext    string
}

// BitflipPipeline adds bitflip over the files to s, writing the shards
// under p.Dir.
func BitflipPipeline(s beam.Scope, files []string, p BitflipParams) {
	s = s.Scope("bitflip")
	splits := fileSplits(s, files)
	meta := map[string]string(p.Meta)
	rows := beam.ParDo(s, &bitflipSplitFn{Key: p.Key, Meta: meta, Shards: p.Shards}, splits)
	beam.ParDo0(s, &writeBitShardFn{Dir: p.Dir, Ext: p.Ext, Meta: meta, Names: p.Names}, beam.GroupByKey(s, rows))
}

// bitBatch is up to pubBatchRows randomized rows of one split bound for
// one shard: their order keys and bits (a word a row, L ≤ 64).
type bitBatch struct {
	Hi, Lo, Bits []uint64
}

// bitflipSplitFn randomizes one split's rows.
type bitflipSplitFn struct {
	Key    []byte            `json:"key"`
	Meta   map[string]string `json:"meta"`
	Shards int               `json:"shards"`
}

// bitSource is how one layout group reads its input column.
type bitSource struct {
	name string
	enc  *codebook.Encoder // nil: a 0/1 column without a codebook
}

func (f *bitflipSplitFn) ProcessElement(ctx context.Context, sp anonSplit, emit func(int, bitBatch)) error {
	if f.Meta[release.KeyMechanism] == release.MechanismDDPS {
		return ddpsSplit(f.Key, f.Meta, f.Shards, sp, emit)
	}
	var md release.Bitflip
	if err := md.Decode(table.Meta(f.Meta), "the release metadata"); err != nil {
		return err
	}
	mech, err := bitflip.New(bitflip.Options{LieProbability: md.Lie, Bits: md.Bits})
	if err != nil {
		return err
	}
	var cb *codebook.Codebook
	if s, ok := f.Meta[release.KeyCodebook]; ok {
		if cb, err = codebook.Parse([]byte(s)); err != nil {
			return err
		}
	}
	layout := md.Layout
	srcs := make([]bitSource, layout.NumGroups())
	names := make([]string, len(srcs))
	for j := range srcs {
		g := layout.Group(j)
		srcs[j].name, names[j] = g.Name, g.Name
		if cb != nil {
			if col, ok := cb.Column(g.Name); ok {
				if srcs[j].enc, err = col.Encoder(codebook.Policy{}); err != nil {
					return err
				}
			}
		}
	}
	keyed := rng.NewKeyed(rng.Key(f.Key))
	values := make([]int, len(srcs))
	word := make([]uint64, layout.Words())
	var ws []uint64
	var blocks []byte
	keys := newRowKeys(keyed)
	batches := make([]bitBatch, f.Shards)
	err = eachSplitBatch(sp, names, func(cols []table.Values, m int, n int64) error {
		ws = slices.Grow(ws[:0], m)[:m]
		for i := range m {
			for j, s := range srcs {
				x, err := srcValue(s, cols[j], i)
				if err != nil {
					return &table.DataError{File: sp.Split.Path, Row: n + int64(i) + 1, Column: s.name, Err: err}
				}
				values[j] = x
			}
			if err := layout.Encode(values, word); err != nil {
				return &table.DataError{File: sp.Split.Path, Row: n + int64(i) + 1, Err: err}
			}
			ws[i] = word[0]
		}
		// Rows n … n+m−1 of the file are consecutive row identities.
		var err error
		if blocks, err = mech.RandomizeKeyed(ws, keyed, tagBitflip, rowID(sp.File, n), blocks); err != nil {
			return err
		}
		for i, w := range ws {
			hi, lo, shard := keys.order(tagBitflipOrder, rowID(sp.File, n+int64(i)), f.Shards)
			b := &batches[shard]
			b.Hi, b.Lo, b.Bits = append(b.Hi, hi), append(b.Lo, lo), append(b.Bits, w)
			handFull(batches, shard, emit)
		}
		return nil
	})
	if err != nil {
		return err
	}
	handRest(batches, emit)
	return nil
}

// eachSplitBatch reads columns cols of split sp batch by batch: fn gets
// each batch's columns, its number of rows and its first row's number in
// its file. A file of more than 2^rowBits rows is refused: its rows would
// have no identity (rowID).
func eachSplitBatch(sp anonSplit, cols []string, fn func(vals []table.Values, rows int, first int64) error) error {
	opt := table.ReadOptions{Columns: cols}
	if sp.Split.Group >= 0 {
		opt.RowGroups = []int{sp.Split.Group}
	}
	rd, err := openTable(sp.Split.Path, opt)
	if err != nil {
		return err
	}
	defer rd.Close()
	idx := make([]int, len(cols))
	for j, name := range cols {
		ix := rd.Schema().FieldIndices(name)
		if len(ix) == 0 {
			return fmt.Errorf("%s has no column %q: every input must be a shard of one table", sp.Split, name)
		}
		idx[j] = ix[0]
	}
	n := sp.Split.FirstRow
	return eachValuesBatch(rd, idx, func(vals []table.Values, m int) error {
		if n+int64(m) > 1<<rowBits {
			return fmt.Errorf("%s has more than 2^%d rows: split it into several files", sp.Split.Path, rowBits)
		}
		first := n
		n += int64(m)
		return fn(vals, m, first)
	})
}

// srcValue is row i's value index in a group: its codebook index, or the
// 0/1 of a column without a codebook (the tool's bitValue).
func srcValue(s bitSource, v table.Values, i int) (int, error) {
	if s.enc != nil {
		x, err := s.enc.Index(v.String(i))
		return int(x), err
	}
	if x, ok := v.Int(i); ok && (x == 0 || x == 1) {
		return int(x), nil
	}
	return 0, fmt.Errorf("value %s is not 0 or 1: a bit column without a codebook must hold 0/1; list the column's categories in the --codebook to one-hot encode it", table.QuoteCell(v.String(i)))
}

// writeBitShardFn writes one output shard.
type writeBitShardFn struct {
	Dir   string            `json:"dir"`
	Ext   string            `json:"ext"`
	Meta  map[string]string `json:"meta"`
	Names []string          `json:"names"`
}

func (f *writeBitShardFn) ProcessElement(ctx context.Context, shard int, batches func(*bitBatch) bool) error {
	var all []bitRow
	var b bitBatch
	for batches(&b) {
		if len(b.Lo) != len(b.Hi) || len(b.Bits) != len(b.Hi) {
			return fmt.Errorf("internal error: a batch of %d rows has %d keys and %d rows of bits", len(b.Hi), len(b.Lo), len(b.Bits))
		}
		for i := range b.Hi {
			all = append(all, bitRow{b.Hi[i], b.Lo[i], b.Bits[i]})
		}
		b = bitBatch{}
	}
	return writeBitShard(f.Dir, f.Ext, shard, all, f.Meta, f.Names)
}

// bitRow is a randomized row and its order key.
type bitRow struct{ Hi, Lo, Bits uint64 }

// writeBitShard writes rows (any order) in order-key order as shard i
// under dir: int32 0/1 columns named as the tool names them.
func writeBitShard(dir, ext string, i int, rows []bitRow, meta map[string]string, names []string) error {
	slices.SortFunc(rows, func(a, b bitRow) int { return cmp.Or(cmp.Compare(a.Hi, b.Hi), cmp.Compare(a.Lo, b.Lo)) })
	if meta[release.KeyMechanism] == release.MechanismDDPS {
		return writeDDPSShard(dir, ext, i, rows, meta, names)
	}
	schema := table.Int32Schema(names)
	return writeBitRows(dir, ext, i, rows, schema, meta, func(part []bitRow) arrow.RecordBatch {
		block := table.Block(len(names), len(part))
		for b, col := range block {
			for r, row := range part {
				col[r] = uint32(row.Bits >> uint(b) & 1)
			}
		}
		return table.Int32Batch(schema, block, len(part))
	})
}

// writeBitRows writes rows (sorted by order key) as shard i under dir, of
// schema and metadata meta, 2^16 rows a batch, each batch made by batch.
func writeBitRows(dir, ext string, i int, rows []bitRow, schema *arrow.Schema, meta map[string]string, batch func(part []bitRow) arrow.RecordBatch) error {
	w, err := table.Create(filepath.Join(dir, shardName("part", i, ext)), schema, table.Meta(meta).Clone(), table.WriteOptions{})
	if err != nil {
		return err
	}
	defer w.Abort()
	const batchRows = 1 << 16
	for len(rows) > 0 {
		part := rows[:min(batchRows, len(rows))]
		rows = rows[len(part):]
		rec := batch(part)
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return w.Commit()
}
