package encrypt

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

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

	Codebook string   // --codebook FILE; "" takes the input's "codebook" item
	Columns  []string // --columns; nil encrypts every column
	KeyOut   string   // --key-out FILE (required)
	Force    bool     // --force: replace an existing key file
	PRFKey   string   // --prf-key FILE: PRF pads (computational secrecy)
	// --first-row A, --rows R: encrypt rows [A, A+R) of the sample only
	// (a part; R = 0 means to the end); --nonce-from KEY: take the
	// release's nonce (and key id) from a key file of its first part.
	FirstRow  int64
	Rows      int64
	NonceFrom string
	Unknown   codebook.UnknownPolicy
	Missing   codebook.MissingPolicy

	Output cli.Output
	Seed   cli.Seed
	cmd    *cobra.Command
}

// NewCmd builds the command; runF replaces the run function in tests.
func NewCmd(s *cli.Streams, runF func(*Options) error) *cobra.Command {
	opts := &Options{Streams: s}
	cmd := &cobra.Command{
		Use:   "encrypt [<file>] --codebook FILE --key-out KEY [--columns a,b] [flags]",
		Short: "Encrypt sampled columns with a one-time pad, keeping the pads as the key",
		Long: `Encrypt hides a curator's sampled columns from the server that will perturb
them: the second stage of the release pipeline.

Every cell becomes its value index in the codebook plus a random pad,
  c = (x + v) mod k,   v uniform on 0..k−1, drawn afresh for every cell,
where k is the number of categories of the column. Whatever x is, c is then
uniform on 0..k−1: with truly uniform pads the encrypted table says
nothing about the data (the one-time pad's perfect secrecy). The pads come
from AES-256 in counter mode under a fresh key from crypto/rand that is
used once and discarded, the pad of row i and column j being a function of
(i, j) alone, so that chunks are encrypted on all cores and the output does
not depend on their number. Like every cryptographic generator (crypto/rand
included), that makes the secrecy computational: it holds against anyone
who cannot tell AES-256 from random. The discarded key leaves nothing to
steal but the key file of pads. The output has one integer column per
encrypted column, named like it, and metadata that a server needs and
nothing that depends on the values: column names, k, codebook hash, and the
sample's n, m and fingerprint. Columns not encrypted are left out: the
server never sees a plaintext.

The pads are the key. They go to --key-out (Parquet unless the name ends in
.csv or .arrow), created owner-only (mode 0600) and never overwritten
without --force. Keep it; give it only to the researcher who will decrypt
the release. The key file also records the codebook of its columns, so
decrypt can turn indices back into labels.

With --prf-key FILE the pads are computed instead by a pseudo-random
function (AES-256) of a key, the row and the column, and the key file holds
one 32-byte key per run instead of m pads per column. This is COMPUTATIONAL
secrecy only (it rests on AES being a pseudo-random permutation), and the
metadata says pad=prf. FILE holds 32 bytes or 64 hex digits; create it with
  head -c 32 /dev/urandom > alice.prf && chmod 600 alice.prf
Each run derives its own pad key from FILE and a fresh nonce, so runs never
share pads. The pads are the same function of (row, column) as one-time
pads, under that key instead of a discarded one.

Parts (--prf-key only): --first-row A [--rows R] encrypts rows A..A+R−1 of
the sample (the rest are read, not written), recording first_row and rows.
The first part (or a whole run) draws the release's nonce and writes it to
its key file, with a digest of the sample's rows; --nonce-from KEY gives
every other part, and every retry, that nonce and key id, so the parts'
ciphertexts concatenate to exactly the whole run's. It refuses a key file of
another sample, columns, codebook or --prf-key, and a sample whose rows
differ from the digest (an edited sample under the same fingerprint): the
same pads on two plaintexts would reveal their difference, so a changed
sample is a new release, encrypted without --nonce-from.

Values outside the codebook stop the run with the file, row, column and
value, unless --unknown missing maps them to the missing category. Missing
values are a category of their own (--missing keep) or an error (--missing
fail); rows are never dropped, since that would misalign this curator's rows
with the other curators'.`,
		Example: `  # Alice and Bob sample the same people, then encrypt their own columns
  $ sample --secret shared.secret -m 2057 --columns education adult.csv \
      | encrypt --codebook codebook.json --key-out alice.key -o alice.enc.parquet
  $ sample --secret shared.secret -m 2057 --columns income adult.csv \
      | encrypt --codebook codebook.json --key-out bob.key -o bob.enc.parquet

  # the server perturbs the joined ciphertexts; the researcher decrypts
  $ perturb --epsilon 1 alice.enc.parquet bob.enc.parquet -o release.parquet
  $ decrypt --key alice.key --key bob.key release.parquet -o sanitized.csv

  # compact keys with PRF pads (computational secrecy) from a 32-byte secret
  $ head -c 32 /dev/urandom > alice.prf && chmod 600 alice.prf
  $ encrypt --codebook codebook.json --prf-key alice.prf --key-out alice.prf.key alice.sample.csv -o alice.prf.enc.parquet

  # the same release in parts (distributed or retried jobs): each part takes
  # the nonce of the run above from its key file; the parts concatenate to it
  $ encrypt --codebook codebook.json --prf-key alice.prf --nonce-from alice.prf.key \
      --first-row 0 --rows 1000 --key-out alice.p1.key alice.sample.csv -o alice.p1.enc.parquet
  $ encrypt --codebook codebook.json --prf-key alice.prf --nonce-from alice.prf.key \
      --first-row 1000 --key-out alice.p2.key alice.sample.csv -o alice.p2.enc.parquet`,
		Args: cobra.MaximumNArgs(1),
		RunE: cli.RunE(opts, func(c *cobra.Command, args []string) {
			opts.cmd, opts.Input = c, cli.FirstArg(args)
		}, runF, run),
	}
	f := cmd.Flags()
	f.StringVar(&opts.Codebook, "codebook", "", "codebook `FILE` of the columns (default: the codebook in the input's metadata)")
	f.StringSliceVar(&opts.Columns, "columns", nil, "`COLUMNS` to encrypt, in this order, comma-separated (default: all)")
	f.StringVar(&opts.KeyOut, "key-out", "", "write the pads to the key `FILE` (mode 0600; .parquet, .csv or .arrow; default Parquet)")
	f.BoolVar(&opts.Force, "force", false, "replace an existing key file")
	f.StringVar(&opts.PRFKey, "prf-key", "", "derive the pads from the 256-bit key in `FILE` by AES-256: compact keys, COMPUTATIONAL secrecy only")
	f.Int64Var(&opts.FirstRow, "first-row", 0, "encrypt a part of the sample: rows `A`.. (0-based; needs --prf-key)")
	f.Int64Var(&opts.Rows, "rows", 0, "with --first-row: the part's number of rows `R` (default: to the end of the sample)")
	f.StringVar(&opts.NonceFrom, "nonce-from", "", "take the release's nonce and key id from the key `FILE` of another part of the same sample (needs --prf-key)")
	f.Var(&opts.Unknown, "unknown", "what to do with a value outside the codebook: fail, or treat it as missing")
	f.Var(&opts.Missing, "missing", "what to do with a missing value: keep it as its category, or fail (drop is refused: it would misalign the curators' rows)")
	cli.AddOutputFlags(cmd, &opts.Output)
	cli.AddSeedFlag(cmd, &opts.Seed)
	cli.AddInsecureSeedFlag(cmd, &opts.Seed)
	return cli.Root(cmd)
}

// Main runs the command on the process's arguments and returns the exit code.
func Main() int { return cli.Run(NewCmd(cli.StdStreams(), nil), os.Args[1:], cli.StdStreams()) }

// padSource produces the pads of one block of rows as a function of the
// rows' indices, so that chunks can be padded in any order on any core.
type padSource interface {
	pads(dst []uint32, row0 uint64, column uint32, k uint32) error
}

// prfPads computes pads as AES-256 of (row, column) under a key: the run's
// PRF key (--prf-key, stored in the key file), or for one-time pads a fresh
// key never stored, whose pads are (stored in the key file instead).
type prfPads struct{ d *pad.Deriver }

func (p prfPads) pads(dst []uint32, row0 uint64, column uint32, k uint32) error {
	return p.d.Pads(dst, row0, column, k)
}

func run(o *Options) error {
	if err := o.checkFlags(); err != nil {
		return err
	}
	cli.LowerMemoryBudget(cli.CodebookBudget)
	var master []byte
	if o.PRFKey != "" {
		var err error
		if master, err = readPRFKey(o); err != nil {
			return err
		}
	}

	// Categorical columns stored as Parquet dictionaries are read as
	// dictionaries, coded once per batch (table.Coder); in a CSV file,
	// those of at most table.MaxReadLabels labels are coded as they are
	// parsed, on the parsing goroutines (ReadOptions.Labels), and come as
	// dictionaries too. The Coder still maps every dictionary entry
	// through the codebook, so a cell codes exactly as before: this only
	// spares a hash lookup of a string per cell (labelCache) in the
	// workers, 18 % of encrypt's time on one core.
	// --codebook is loaded once, here; an error in it is reported after
	// the input's own checks (o.codebook), as before.
	dict := o.Columns
	var readLabels map[string]*table.Labels
	var fileCB *codebook.Codebook
	var fileCBErr error
	if o.Codebook != "" {
		if fileCB, fileCBErr = codebook.Load(o.Codebook); fileCBErr == nil {
			if len(dict) == 0 {
				dict = fileCB.Names()
			}
			readLabels = fileCB.ReadLabels(dict)
		}
	}
	// ReuseBuffers: a chunk retains its batch until emitted, and cells
	// are only coded (table.Coder and codebook errors copy what they keep).
	// Batches of a quarter of a chunk: a CSV reader parses 64 batches'
	// worth of bytes at a time and holds a few such pieces in flight,
	// ~20 MB at 16 Ki-row batches when a column of 1M labels is parsed as
	// text; at 4 Ki rows the live heap is ~14 MB smaller (41–44 MB
	// instead of 55–60, issue 11), and the collector runs less often.
	in, err := o.Streams.OpenWith(o.Input, table.ReadOptions{BatchSize: pipeline.ChunkRows / 4, DictColumns: dict, Labels: readLabels, ReuseBuffers: true})
	if err != nil {
		return err
	}
	defer in.Close()
	meta := in.Meta()
	switch stage := meta[release.KeyStage]; stage {
	case release.StageEncrypt, release.StagePerturb, release.StageKey:
		return fmt.Errorf("%s is already encrypted (stage %s): encrypt reads a curator's sample, or a decrypted release", in.Name(), stage)
	}
	smp, err := release.ReadSample(meta, in.Name(), "encrypt works on the output of sample; pipe the table through `sample --secret FILE -m N` first (--fraction 1 keeps every row)")
	if err != nil {
		return err
	}
	hist, err := release.ReadHistory(meta, in.Name())
	if err != nil {
		return err
	}
	if n := in.NumRows(); n >= 0 && n != smp.M {
		return fmt.Errorf("%s has %d rows but its metadata says m = %d: the sample was truncated or edited; sample again", in.Name(), n, smp.M)
	}
	cb, err := o.codebook(in, fileCB, fileCBErr)
	if err != nil {
		return err
	}
	names, srcIdx, err := o.layout(in, cb)
	if err != nil {
		return err
	}
	sel, err := cb.Select(names)
	if err != nil {
		return fmt.Errorf("%s: %w", o.codebookName(), err)
	}
	encs, err := sel.Encoders(codebook.Policy{Unknown: o.Unknown, Missing: o.Missing})
	if err != nil {
		return err
	}

	part, err := o.part(in.Name(), smp.M)
	if err != nil {
		return err
	}
	var from *nonceSource
	if o.NonceFrom != "" {
		if from, err = o.readNonce(master, smp); err != nil {
			return err
		}
	}
	keyID, src, runKey, nonce := o.pads(master, from)
	kind := release.PadOTP
	if master != nil {
		kind = release.PadPRF
	}
	cols, ks := encryptedColumns(sel, keyID, kind)
	if from != nil {
		if err := from.match(cols); err != nil {
			return err
		}
	}

	// Only what the server needs, and nothing that depends on the values:
	// the input's other items (a codebook, say) are not carried over.
	outMeta := table.Meta{}
	cli.CarryInsecureSeed(o.Streams, "encrypt", in.Name(), meta, outMeta)
	o.Seed.Mark(outMeta)
	if from != nil && from.insecure {
		outMeta[cli.InsecureSeedKey] = "true" // its nonce came from a seed
	}
	enc := release.Encrypted{Sample: smp, SampleID: meta[release.KeySampleID], Pad: kind, Columns: cols, History: hist}
	if err := enc.Encode(outMeta); err != nil {
		return err
	}
	part.Encode(outMeta, smp.M)
	keyMeta := table.Meta{release.KeyPad: kind}
	if outMeta[cli.InsecureSeedKey] == "true" {
		keyMeta[cli.InsecureSeedKey] = "true"
	}
	if err := (release.Key{Sample: smp, Columns: cols}).Encode(keyMeta); err != nil {
		return err
	}
	part.Encode(keyMeta, smp.M)
	var digest *release.SampleDigest
	if runKey != nil {
		keyMeta[release.KeyPRFKey] = hex.EncodeToString(runKey[:])
		keyMeta[release.KeyPRFNonce] = nonce
		digest = release.NewSampleDigest(*runKey, smp.M)
	}

	return o.writeEncrypted(in, smp.M, names, outMeta, keyMeta, release.CodebookFileItem(sel), digest, from, func(w, kw table.Writer, schema *arrow.Schema) error {
		return encryptRows(o, in, srcIdx, encs, ks, src, schema, w, kw, runKey == nil, part, digest)
	})
}

// part is the range of the sample this run encrypts: --first-row and
// --rows, or the whole sample.
func (o *Options) part(name string, m int64) (release.Part, error) {
	f := o.cmd.Flags()
	if !f.Changed("first-row") && !f.Changed("rows") {
		return release.Whole(m), nil
	}
	switch {
	case o.FirstRow < 0 || o.FirstRow >= m:
		return release.Part{}, cli.Usagef("--first-row %d is outside the sample's rows 0..%d (m = %d in %s)", o.FirstRow, m-1, m, name)
	case o.Rows < 0:
		return release.Part{}, cli.Usagef("--rows %d: a part has at least one row", o.Rows)
	case o.Rows > m-o.FirstRow:
		return release.Part{}, cli.Usagef("--first-row %d --rows %d ends after the sample's m = %d rows (%s); give at most --rows %d", o.FirstRow, o.Rows, m, name, m-o.FirstRow)
	}
	r := o.Rows
	if r == 0 {
		r = m - o.FirstRow
	}
	return release.Part{First: o.FirstRow, Rows: r}, nil
}

// writeEncrypted creates the key file and the ciphertext, lets rows fill
// both, checks that all m rows of the sample came through, and commits the
// key first: a ciphertext without its key could never be opened.
//
// A PRF key file holds no rows, and its metadata ends with the sample's
// digest, known only when every row has been read: it is created last.
func (o *Options) writeEncrypted(in table.Reader, m int64, names []string, outMeta, keyMeta table.Meta, keyCodebook table.Deferred, digest *release.SampleDigest, from *nonceSource, rows func(w, kw table.Writer, schema *arrow.Schema) error) error {
	schema := table.Int32Schema(names)
	inputs := []string{o.Input, o.Codebook, o.PRFKey}
	if o.NonceFrom != "" {
		inputs = append(inputs, o.NonceFrom)
	}
	var kw table.Writer
	if digest == nil {
		var err error
		if kw, err = o.Streams.CreateKey(o.KeyOut, schema, keyMeta, table.Parquet, inputs, o.Force, keyCodebook); err != nil {
			return err
		}
		defer kw.Abort()
	} else if _, err := os.Lstat(o.KeyOut); err == nil && !o.Force {
		// Refused now rather than after reading every row.
		return fmt.Errorf("%s exists: a key file is never replaced without --force (it may be the only key of a release)", o.KeyOut)
	}
	w, err := o.Streams.Create(o.Output, schema, outMeta, in.Format(), append(inputs, o.KeyOut))
	if err != nil {
		return err
	}
	defer w.Abort()

	if err := rows(w, kw, schema); err != nil {
		return err
	}
	if in.RowsRead() != m {
		return fmt.Errorf("%s has %d rows but its metadata says m = %d: the sample was truncated or edited; sample again", in.Name(), in.RowsRead(), m)
	}
	if digest != nil {
		sum := digest.Sum()
		if from != nil && sum != from.digest {
			return fmt.Errorf("%s is not the sample whose nonce %s holds (same fingerprint, different rows): reusing its pads on other plaintexts would reveal their difference; a changed sample is a new release: encrypt it without --nonce-from, which draws a fresh nonce", in.Name(), o.NonceFrom)
		}
		keyMeta[release.KeySampleDigest] = sum
		if kw, err = o.Streams.CreateKey(o.KeyOut, schema, keyMeta, table.Parquet, inputs, o.Force, keyCodebook); err != nil {
			return err
		}
		defer kw.Abort()
	}
	// Both complete before either is published (a full disk leaves a
	// key that --force would replace as it was), then the key first: a
	// ciphertext without its key could never be opened.
	if n, err := table.CommitAll(kw, w); err != nil {
		if n == 1 && !errors.Is(err, table.ErrDataPublished) {
			removeKey(o.KeyOut) // (the ciphertext out, its key stays)
		}
		return err
	}
	return nil
}

// checkFlags refuses a key that would travel with, or overwrite, the
// ciphertext, and --missing drop.
func (o *Options) checkFlags() error {
	if o.KeyOut == "" {
		return cli.Usagef("--key-out FILE is required: the pads are the only way to decrypt")
	}
	if table.IsStdio(o.KeyOut) {
		return cli.Usagef("--key-out must be a file, not standard output: the key must not travel with the ciphertext")
	}
	if !table.IsStdio(o.Output.Path) && sameFile(o.Output.Path, o.KeyOut) {
		return cli.Usagef("-o and --key-out name the same file %s: the ciphertext and its key must be kept apart", o.KeyOut)
	}
	f := o.cmd.Flags()
	if o.PRFKey == "" {
		for _, flag := range []string{"first-row", "rows", "nonce-from"} {
			if f.Changed(flag) {
				return cli.Usagef("--%s needs --prf-key: the parts of a sample share their pads' key, and one-time pads could not be recomputed for a retried part", flag)
			}
		}
	}
	if f.Changed("rows") && !f.Changed("first-row") {
		return cli.Usagef("--rows needs --first-row: say where the part starts")
	}
	if o.NonceFrom != "" && sameFile(o.NonceFrom, o.Output.Path) {
		return cli.Usagef("--nonce-from and -o name the same file %s", o.NonceFrom)
	}
	if o.Missing == codebook.MissingDrop {
		return cli.Usagef("--missing drop is refused: dropping rows at one curator misaligns its rows with the other curators' (rows are joined by position); keep missing values as a category (--missing keep, with a \"missing\" token in the codebook) or remove such rows from every curator's table before sampling")
	}
	return nil
}

// encryptedColumns describes each output column: its name, its number of
// categories k, the hash of its codebook entry, and the key and kind of
// its pads.
func encryptedColumns(sel *codebook.Codebook, keyID string, kind string) ([]release.Column, []uint32) {
	cols := make([]release.Column, len(sel.Columns))
	ks := make([]uint32, len(sel.Columns))
	for j := range sel.Columns {
		c := &sel.Columns[j]
		one, _ := sel.Select([]string{c.Name()})
		ks[j] = uint32(c.K())
		cols[j] = release.Column{Name: c.Name(), K: ks[j], CodebookHash: one.Hash(), KeyID: keyID, Pad: kind}
	}
	return cols, ks
}

// encChunk is one chunk of rows on its way through the pipeline: rows
// [off, off+n) of a retained input batch, which are rows row0… of the
// sample, and the ciphertext and pad blocks they fill.
type encChunk struct {
	rec      arrow.RecordBatch
	off, n   int
	row0     int64
	ct, pads [][]uint32
	// plain holds the codes when they are digested (PRF pads), else it
	// is ct, encrypted in place.
	plain [][]uint32
	// lo, hi: the chunk's rows [lo, hi) are in the part (lo = hi: none).
	lo, hi int
}

// encryptRows reads the input batch by batch, cuts the batches into chunks,
// encodes and pads the chunks on all cores (pipeline.Run) and writes the
// ciphertext blocks and (for one-time pads) the pad blocks in input order.
// Memory is a fixed number of chunks in flight, each holding a reference
// to its input batch and two blocks of 4 bytes per cell.
//
// Rows outside the part are coded (and digested) but neither padded nor
// written: the digest covers the whole sample whatever the part.
func encryptRows(o *Options, in table.Reader, srcIdx []int, encs []*codebook.Encoder, ks []uint32, src padSource, schema *arrow.Schema, w, kw table.Writer, storePads bool, part release.Part, digest *release.SampleDigest) error {
	d := len(encs)
	opts := pipeline.Options{}.Resolve()
	free := make(chan *encChunk, opts.InFlight)
	for range opts.InFlight {
		c := &encChunk{ct: table.Block(d, pipeline.ChunkRows), pads: table.Block(d, pipeline.ChunkRows)}
		c.plain = c.ct
		if digest != nil {
			c.plain = table.Block(d, pipeline.ChunkRows)
		}
		free <- c
	}
	// Coders are not safe for concurrent use: one set per worker at a time.
	coders := sync.Pool{New: func() any {
		cs := make([]*table.Coder, d)
		for j, enc := range encs {
			cs[j] = table.NewCoder(enc.Index).Batch(enc.IndexAll)
		}
		return cs
	}}
	meter := o.Streams.Progress("encrypt: rows")
	defer meter.Done()

	var (
		rec      arrow.RecordBatch // the batch being cut into chunks
		off      int
		next0    int64 // the sample index of the next chunk's first row
		readDone bool
	)
	defer func() {
		for range len(free) {
			if c := <-free; c.rec != nil {
				c.rec.Release()
			}
		}
	}()
	next := func() (*encChunk, bool, error) {
		for rec == nil || off == int(rec.NumRows()) {
			if readDone {
				return nil, false, nil
			}
			r, err := in.Next()
			if errors.Is(err, io.EOF) {
				readDone = true
				return nil, false, nil
			}
			if err != nil {
				return nil, false, err
			}
			rec, off = r, 0
		}
		c := <-free // never blocks: at most InFlight chunks are out
		c.n = min(pipeline.ChunkRows, int(rec.NumRows())-off)
		c.off, c.row0 = off, next0
		rec.Retain()
		c.rec = rec
		off += c.n
		next0 += int64(c.n)
		return c, true, nil
	}
	work := func(c *encChunk) (*encChunk, error) {
		cs := coders.Get().([]*table.Coder)
		defer coders.Put(cs)
		c.lo = int(min(max(part.First-c.row0, 0), int64(c.n)))
		c.hi = int(max(min(part.End()-c.row0, int64(c.n)), int64(c.lo)))
		for j, enc := range encs {
			x := c.plain[j][:c.n]
			if bad, err := cs[j].Codes(x, c.rec.Column(srcIdx[j]), c.off); bad >= 0 {
				return nil, &table.DataError{File: in.Name(), Row: c.row0 + int64(bad) + 1, Column: enc.Column().Name(), Err: err}
			}
			if c.lo == c.hi {
				continue
			}
			v := c.pads[j][c.lo:c.hi]
			if err := src.pads(v, uint64(c.row0+int64(c.lo)), uint32(j), ks[j]); err != nil {
				return nil, err
			}
			if err := pad.EncryptColumn(c.ct[j][c.lo:c.hi], x[c.lo:c.hi], v, ks[j]); err != nil {
				return nil, err
			}
		}
		return c, nil
	}
	// Output batches of a fixed size, so the files' bytes do not depend
	// on the chunk size.
	int32s := func(cols [][]uint32, n int) arrow.RecordBatch { return table.Int32Batch(schema, cols, n) }
	wb := pipeline.NewBlocks(w, d, table.DefaultBatchSize, int32s)
	var kb *pipeline.Blocks
	if storePads {
		kb = pipeline.NewBlocks(kw, d, table.DefaultBatchSize, int32s)
	}
	emit := func(c *encChunk) error {
		// The ciphertext and the key are separate files: their writers
		// encode in parallel (together half of encrypt's work).
		var keyErr, err error
		var wg sync.WaitGroup
		if digest != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				digest.Add(c.plain, c.n)
			}()
		}
		if storePads && c.hi > c.lo {
			wg.Add(1)
			go func() {
				defer wg.Done()
				keyErr = kb.Write(c.pads, c.lo, c.hi)
			}()
		}
		if c.hi > c.lo {
			err = wb.Write(c.ct, c.lo, c.hi)
		}
		wg.Wait()
		if err == nil {
			err = keyErr
		}
		c.rec.Release()
		c.rec = nil
		free <- c
		meter.Add(int64(c.n))
		return err
	}
	if err := pipeline.Run(context.Background(), opts, next, work, emit); err != nil {
		return err
	}
	if err := wb.Flush(); err != nil {
		return err
	}
	if kb == nil {
		return nil
	}
	return kb.Flush()
}

// codebook is --codebook (loaded already: cb and err, what Load gave), or
// the codebook the input's metadata carries (a decrypted release does).
func (o *Options) codebook(in table.Reader, cb *codebook.Codebook, err error) (*codebook.Codebook, error) {
	if o.Codebook != "" {
		return cb, err
	}
	s, ok := in.Meta()[release.KeyCodebook]
	if !ok {
		return nil, cli.Usagef("no codebook: pass --codebook FILE (for UCI Adult, testdata/adult/codebook.json); every curator must use the same one")
	}
	cb, err = codebook.ParseString(s)
	if err != nil {
		return nil, fmt.Errorf("%s: the codebook in the metadata is not valid: %v; pass --codebook FILE", in.Name(), err)
	}
	return cb, nil
}

func (o *Options) codebookName() string {
	if o.Codebook != "" {
		return o.Codebook
	}
	return "the input's codebook"
}

// layout returns the names of the columns to encrypt, in output order, and
// their indices in the input.
func (o *Options) layout(in table.Reader, cb *codebook.Codebook) ([]string, []int, error) {
	schema := in.Schema()
	have := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		have[i] = f.Name
	}
	names := o.Columns
	if len(names) == 0 {
		names = have
	}
	idx := make([]int, len(names))
	for j, name := range names {
		if slices.Contains(names[:j], name) {
			return nil, nil, cli.Usagef("--columns names %q twice", name)
		}
		ix := schema.FieldIndices(name)
		if len(ix) == 0 {
			return nil, nil, fmt.Errorf("%s has no column %q (columns: %s); check --columns", in.Name(), name, strings.Join(have, ", "))
		}
		if _, ok := cb.Column(name); !ok {
			hint := "add it to the codebook"
			if len(o.Columns) == 0 {
				hint = "add it to the codebook, or choose the columns to encrypt with --columns"
			}
			return nil, nil, fmt.Errorf("%s has no column %q (codebook columns: %s); %s", o.codebookName(), name, strings.Join(cb.Names(), ", "), hint)
		}
		idx[j] = ix[0]
	}
	return names, idx, nil
}

// pads returns the run's key id, its pad source and, for PRF pads, the
// run's pad key. The key id is public, so it always comes from crypto/rand,
// even with --insecure-seed: derived from the seed it would let anyone
// confirm a guess of the seed, and with it the pads.
//
// Both kinds of pads are the row-keyed streams of pad.Deriver (row i,
// column j → AES-256 block (j, 0, i)), so a row's pad does not depend on
// the chunk it is encrypted in nor on the number of cores. One-time pads
// use a fresh key that is never stored (crypto/rand; SeededKey of --seed
// only under --insecure-seed), and the pads themselves go to the key file;
// PRF pads use the run key derived from --prf-key and a nonce from the
// run's generator, and only that key is stored.
//
// The nonce is drawn once per release: the parts of a sample and their
// retries take it, and the key id, from a key file of the release
// (--nonce-from, from), so that they share k_run and so their pads; any
// other run draws a fresh one, so a new release (an edited sample under the
// same fingerprint, say) never reuses pads.
func (o *Options) pads(master []byte, from *nonceSource) (keyID string, src padSource, runKey *pad.Key, nonce string) {
	var id [8]byte
	crand.Read(id[:])
	keyID = hex.EncodeToString(id[:])
	if master == nil {
		d, _ := pad.NewDeriver(o.Seed.Key(o.cmd, "encrypt/one-time-pads"))
		return keyID, prfPads{d}, nil, ""
	}
	if from != nil {
		keyID, nonce = from.keyID, from.nonce
	} else {
		r := o.Seed.Rand(o.cmd)
		var b [16]byte
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		nonce = hex.EncodeToString(b[:])
	}
	k := release.DeriveRunKey(master, nonce)
	d, _ := pad.NewDeriver(k) // NewDeriver fails only for a bad AES key size
	return keyID, prfPads{d}, &k, nonce
}

// readPRFKey reads --prf-key; errors never quote the file's content.
func readPRFKey(o *Options) ([]byte, error) {
	b, err := os.ReadFile(o.PRFKey)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cannot read the PRF key %s: %v; check the path, or create a key with: head -c 32 /dev/urandom > %s && chmod 600 %s", o.PRFKey, err, o.PRFKey, o.PRFKey)
	}
	k, err := release.ParsePRFKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %v; create a key with: head -c 32 /dev/urandom > FILE", o.PRFKey, err)
	}
	if st, err := os.Stat(o.PRFKey); err == nil && st.Mode().Perm()&0o077 != 0 {
		o.Streams.Warnf("encrypt", "the PRF key %s can be read by other users (mode %s): chmod 600 %s", o.PRFKey, st.Mode().Perm(), o.PRFKey)
	}
	return k, nil
}

// sameFile reports whether two paths name the same file, whether or not it
// exists yet.
func sameFile(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// removeKey deletes a key file whose ciphertext could not be written.
func removeKey(path string) {
	os.Remove(path)
	if table.ResolveFormat(path, table.WriteOptions{Fallback: table.Parquet}) == table.CSV {
		os.Remove(path + ".meta.json")
	}
}
