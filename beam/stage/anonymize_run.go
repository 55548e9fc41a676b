package stage

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
	anonymizecmd "github.com/pramkit/pramkit/pkg/cmd/anonymize"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
	"github.com/pramkit/pramkit/pkg/version"
)

// Anonymize publishes the input's shards with mechanism A′ (the default),
// global randomization or Anatomy on the runner (see anonymize.go,
// anonymize_global.go and anonymize_anatomy.go for the designs and the
// proofs that the laws are the CLI's): c.Args are anonymize's own flags
// (--mechanism, --sensitive, --l, --p, --grouping, --groups,
// --group-column, --codebook, --unknown, --missing, --seed
// --insecure-seed), parsed and checked by the anonymize command itself. The
// release is PREFIX-00000.EXT, PREFIX-00001.EXT …, in the input's format,
// rows in a uniformly random order, each shard with the metadata anonymize
// writes (N and dropped of the whole release), and for Anatomy the
// sensitive table at --groups.
func Anonymize(ctx context.Context, c Config) error {
	streams := c.Streams
	if streams == nil {
		streams = cli.StdStreams()
	}
	var opts *anonymizecmd.Options
	cmd := anonymizecmd.NewCmd(streams, func(o *anonymizecmd.Options) error { opts = o; return nil })
	if code := cli.Run(cmd, c.Args, streams); code != 0 {
		return &ExitError{Tool: "anonymize", Code: code}
	}
	if err := checkAnonymizeFlags(opts, cmd); err != nil {
		return err
	}
	files, err := c.inputs()
	if err != nil {
		return err
	}
	if err := c.localOutput("anonymize"); err != nil {
		return err
	}
	first, err := openTable(files[0], table.ReadOptions{})
	if err != nil {
		return err
	}
	var columns []string
	for _, f := range first.Schema().Fields() {
		columns = append(columns, f.Name)
	}
	insecureIn := cli.CarryInsecureSeed(streams, "anonymize", first.Name(), first.Meta(), nil)
	first.Close()
	for _, name := range opts.Sensitive {
		if !slices.Contains(columns, name) {
			return fmt.Errorf("%s has no column %q to treat as sensitive (columns: %s)", files[0], name, strings.Join(columns, ", "))
		}
	}
	cb, err := opts.Codebook.Load(streams, files[0], opts.Sensitive)
	if err != nil {
		return err
	}
	for _, name := range opts.Sensitive {
		col, _ := cb.Column(name)
		if opts.L > col.K() {
			return fmt.Errorf("ℓ′ = %d is larger than the %d values in the codebook of %s: a decoy group needs ℓ′ distinct values; choose a smaller --l", opts.L, col.K(), name)
		}
	}
	ext := "." + table.FormatFromPath(files[0]).String()
	if table.FormatFromPath(files[0]) == table.Unknown {
		ext = ".csv"
	}
	outs, _ := filepath.Glob(c.Output + "-[0-9][0-9][0-9][0-9][0-9]" + ext)
	for _, in := range files {
		for _, o := range outs {
			if sameFile(in, o) {
				return cli.Usagef("--output %s would write over the input %s: choose another prefix", c.Output, in)
			}
		}
	}

	key := rng.RunKey(opts.Seed.Value, cmd.Flags().Changed("seed") && opts.Seed.Insecure, "pramkit-beam/anonymize")
	shardRows := c.ShardRows
	if shardRows <= 0 {
		shardRows = DefaultShardRows
	}
	run := anonRun{c: c, opts: opts, streams: streams, files: files, columns: columns, cb: cb, insecureIn: insecureIn,
		key: key[:], shardRows: shardRows, ext: ext}
	switch opts.Mechanism {
	case release.MechanismGlobal:
		return run.global(ctx)
	case release.MechanismAnatomy:
		return run.anatomy(ctx)
	}
	// The metadata as anonymize writes it; the writers fill in N, dropped
	// and missing_dropped from the plan.
	meta, err := opts.ReleaseMeta(cb, &release.Anonymized{Mechanism: release.MechanismDiverted, Grouping: opts.Grouping, L: opts.L}, insecureIn)
	if err != nil {
		return err
	}
	release.Stamp(meta, version.String())

	tmp, err := os.MkdirTemp(filepath.Dir(c.Output+"x"), ".pramkit-beam-anonymize-*")
	if err != nil {
		return fmt.Errorf("cannot make a temporary folder next to --output %s: %w", c.Output, err)
	}
	defer os.RemoveAll(tmp)
	summaryTxt := filepath.Join(tmp, "summary.txt")
	p, s := beam.NewPipelineWithRoot()
	sum := AnonymizePipeline(s, files, AnonymizeParams{Key: key[:], Meta: meta, Columns: columns, L: opts.L,
		Grouping: opts.Grouping, ShardRows: shardRows, Input: c.Input, Dir: tmp, Ext: ext, Report: opts.Report})
	textio.Write(s, summaryTxt, sum)
	if _, err := beam.Run(ctx, c.Runner, p); err != nil {
		return pipelineError(c.Runner, err)
	}
	b, err := os.ReadFile(summaryTxt)
	if err != nil {
		return fmt.Errorf("the pipeline wrote no summary: %w", err)
	}
	var got anonSummary
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(b))), &got); err != nil {
		return fmt.Errorf("the pipeline's summary %q: %v", b, err)
	}
	// Every shard was written: move them into place (a failed run leaves
	// none behind).
	var names []string
	for i := range got.Shards {
		src := filepath.Join(tmp, shardName("part", i, ext))
		if _, err := os.Stat(src); err != nil {
			// A shard no row went to (possible when shards are small): an
			// empty table with the release's metadata.
			if err := writeAnonShard(tmp, ext, i, nil, meta, columns, &got); err != nil {
				return err
			}
		}
		names = append(names, shardName(c.Output, i, ext))
	}
	for i, dst := range names {
		src := filepath.Join(tmp, shardName("part", i, ext))
		if err := os.Rename(src, dst); err != nil {
			return err
		}
		if _, err := os.Stat(src + ".meta.json"); err == nil {
			if err := os.Rename(src+".meta.json", dst+".meta.json"); err != nil {
				return err
			}
		}
	}
	out := fmt.Sprintf("%s-*%s", c.Output, ext)
	if got.Missing > 0 {
		fmt.Fprintf(streams.Err, "anonymize: %s: left out %s with a missing sensitive value (--missing drop)\n", out, rowCount(got.Missing))
	}
	if got.Dropped > 0 {
		fmt.Fprintf(streams.Err, "anonymize: %s: left out %s chosen at random so that N = %d is a multiple of ℓ′ = %d\n", out, rowCount(got.Dropped), got.Rows, opts.L)
	}
	if opts.Report {
		// The tool's report after publishing: from the plan's counts of
		// the published rows.
		return opts.PublishedReport(cb, got.Counts)
	}
	return nil
}

// rowCount is "1 row" or "N rows".
func rowCount(n int64) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}

// checkAnonymizeFlags refuses what the CLI's own checks refuse (they run
// in its run function, which pramkit-beam replaces) and what the pipeline
// does not do.
func checkAnonymizeFlags(o *anonymizecmd.Options, cmd *cobra.Command) error {
	switch {
	case o.Input != "":
		return cli.Usagef("unexpected %q: give the input as --input GLOB", o.Input)
	case o.Output.Path != "":
		return cli.Usagef("give no -o after --: pramkit-beam anonymize writes PREFIX-NNNNN files (--output PREFIX)")
	case len(o.Sensitive) == 0:
		return cli.Usagef("name the sensitive column(s): --sensitive COL[,COL…]")
	case o.Check:
		return cli.Usagef("--check is the anonymize tool's (it reads the counts once): pramkit-beam anonymize publishes")
	case o.Report && o.Mechanism != release.MechanismDiverted:
		return cli.Usagef("--report gives the guarantees of mechanism A′: it needs --mechanism diverted")
	case o.Order.Keep:
		return cli.Usagef("--keep-order: shards on a cluster have no input order to keep; the release is written in a random order")
	case o.Codebook.Infer || o.Codebook.Path == "":
		return cli.Usagef("the sensitive columns need a codebook: give --codebook FILE")
	case o.Mechanism == release.MechanismAnatomy && o.Groups != "" && table.IsStdio(o.Groups):
		return cli.Usagef("--groups -: pramkit-beam anonymize writes the sensitive table to a file; name it")
	}
	// The rest as the tool checks it: the mechanism and its flags (--l or
	// --p, --groups, one sensitive column for anatomy), --grouping.
	return o.Validate()
}

// AnonymizeParams are the anonymize pipeline's parameters.
type AnonymizeParams struct {
	Key       []byte     // the run key (rng.KeySize bytes)
	Meta      table.Meta // the release metadata, N and dropped left to the plan
	Columns   []string   // the input's columns, in order
	L         int
	Grouping  string
	ShardRows int64
	Input     string // the input glob, for messages
	Dir       string // where the shards are written (part-NNNNN.EXT)
	Ext       string
	Report    bool // the summary carries the published rows' counts (--report)
}

// AnonymizePipeline adds A′ over the files to s: it writes the shards under
// p.Dir and returns the plan's summary (one JSON line).
func AnonymizePipeline(s beam.Scope, files []string, p AnonymizeParams) beam.PCollection {
	s = s.Scope("anonymize")
	splits := fileSplits(s, files)
	meta := map[string]string(p.Meta)
	counts := beam.ParDo(s, &countSplitFn{Key: p.Key, Meta: meta, Columns: p.Columns, L: p.L}, splits)
	acc := beam.Combine(s, &mergePlanFn{L: p.L}, counts)
	plans, summary := beam.ParDo2(s, &planFn{Key: p.Key, Meta: meta, Columns: p.Columns, L: p.L, Grouping: p.Grouping,
		ShardRows: p.ShardRows, Input: p.Input, Report: p.Report}, acc)
	rows := beam.ParDo(s, &dealSplitFn{Key: p.Key, Meta: meta, Columns: p.Columns}, beam.Reshuffle(s, plans))
	beam.ParDo0(s, &writeShardFn{Dir: p.Dir, Ext: p.Ext, Meta: meta, Columns: p.Columns}, beam.GroupByKey(s, rows),
		beam.SideInput{Input: summary})
	return summary
}

// fileSplits is the splits of the files (each file, a Parquet file's row
// groups), spread over the workers by a Reshuffle: the per-row stages'
// first step.
func fileSplits(s beam.Scope, files []string) beam.PCollection {
	list := make([]anonFile, len(files))
	for i, f := range files {
		list[i] = anonFile{Index: i, Path: f}
	}
	return beam.Reshuffle(s, beam.ParDo(s, splitAnonFile, beam.CreateList(s, list)))
}
