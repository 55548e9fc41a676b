package stage

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/cli"
	anonymizecmd "github.com/pramkit/pramkit/pkg/cmd/anonymize"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
	"github.com/pramkit/pramkit/pkg/version"
)

// Mechanism A, global randomization, on Beam (pramkit-beam anonymize --
// --mechanism global). Each row is randomized on its own: every
// sensitive value is kept with probability p, else drawn uniformly from
// its codebook's V values (the paper's §3; anonymize.RandomizeValue, the
// draw the tool's anonymize.Randomize makes per row). So the pipeline is
// one ParDo per split (a file, or a Parquet row group) and a write per
// output shard, as bitflip's (bitflip.go):
//
//   - row r = file·2^40 + row number (rowID) draws its values, column after
//     column, from its own stream (tag "AGLB", r) of the run's key K: a
//     retried bundle redraws the same values, and the rows' draws are
//     independent (AES-256 taken as a random function). The tool draws
//     the same way (tag "AGLB", the row's position in its one input), from
//     a key of its own;
//   - the published rows are shuffled as A′'s are: row r gets the order
//     key PRF_K("AORD", r), goes to shard key mod S and is written in key
//     order within its shard, a uniformly random order unrelated to the
//     input's. S comes from the input's row count (exact for Parquet,
//     estimated for CSV: estimateRows), as the rows are not counted first.
//
// The metadata is the tool's (anonymizecmd.Options.GlobalRelease builds it
// from the same flags): p per column, ℓ′ when p came from it, no N (a
// global release records none, so estimate reads every shard as a part
// and counts the rows itself).

var tagGlobal = rng.Tag("AGLB")

func init() {
	for _, t := range []any{globalCount{}, globalSplitFn{}, writeGlobalShardFn{}} {
		beam.RegisterType(reflect.TypeOf(t))
	}
	register.DoFn4x1[context.Context, anonSplit, func(int, pubBatch), func(globalCount), error](&globalSplitFn{})
	register.Emitter1[globalCount]()
	register.Function2x1(addGlobalCounts)
	register.Function1x1(globalCountJSON)
	register.DoFn3x1[context.Context, int, func(*pubBatch) bool, error](&writeGlobalShardFn{})
}

// globalCount is what a global run reports of a split: the rows read and
// those --missing drop removed.
type globalCount struct {
	Read, Missing int64
}

func addGlobalCounts(a, b globalCount) globalCount {
	return globalCount{Read: a.Read + b.Read, Missing: a.Missing + b.Missing}
}

func globalCountJSON(c globalCount) string {
	b, _ := json.Marshal(c)
	return string(b)
}

// globalSplitFn randomizes one split's rows.
type globalSplitFn struct {
	Key     []byte            `json:"key"`
	Meta    map[string]string `json:"meta"`
	Columns []string          `json:"columns"`
	Keep    []float64         `json:"keep"` // per sensitive column
	Shards  int               `json:"shards"`
}

func (f *globalSplitFn) ProcessElement(ctx context.Context, sp anonSplit, emit func(int, pubBatch), count func(globalCount)) error {
	s, err := newAnonSetup(f.Meta, f.Columns)
	if err != nil {
		return err
	}
	if len(f.Keep) != len(s.cols) {
		return fmt.Errorf("internal error: %d keep probabilities for %d sensitive columns", len(f.Keep), len(s.cols))
	}
	rd, err := s.open(sp)
	if err != nil {
		return err
	}
	defer rd.Close()
	keyed := rng.NewKeyed(rng.Key(f.Key))
	var st rng.Stream
	r := rand.New(&st)
	sensAt := make([]int, len(f.Columns))
	for j := range sensAt {
		sensAt[j] = slices.Index(s.idx, j)
	}
	var c globalCount
	keys := newRowKeys(keyed)
	batches := make([]pubBatch, f.Shards)
	err = s.scan(rd, sp, func(n int64, cells []table.Values, i int, vals []uint32, kept bool) error {
		c.Read++
		if !kept {
			c.Missing++
			return nil
		}
		id := rowID(sp.File, n)
		keyed.Reset(&st, tagGlobal, id)
		for k, x := range vals {
			vals[k] = anonymize.RandomizeValue(x, uint32(s.cols[k].K()), f.Keep[k], r)
		}
		row := pubRow{Cells: make([]string, len(cells))}
		for j, cv := range cells {
			if k := sensAt[j]; k >= 0 {
				row.Cells[j] = s.cols[k].Label(int(vals[k]))
			} else {
				row.Cells[j] = strings.Clone(cv.String(i))
			}
		}
		var shard int
		row.Hi, row.Lo, shard = keys.order(tagOrder, id, f.Shards)
		b := &batches[shard]
		b.add(row)
		handFull(batches, shard, emit)
		return nil
	})
	if err != nil {
		return err
	}
	handRest(batches, emit)
	count(c)
	return nil
}

// writeGlobalShardFn writes one output shard of a global release: its
// rows in order-key order, with the release's metadata as it is.
type writeGlobalShardFn struct {
	Dir     string            `json:"dir"`
	Ext     string            `json:"ext"`
	Meta    map[string]string `json:"meta"`
	Columns []string          `json:"columns"`
}

func (f *writeGlobalShardFn) ProcessElement(ctx context.Context, shard int, batches func(*pubBatch) bool) error {
	var all []pubRow
	var b pubBatch
	for batches(&b) {
		var err error
		if all, err = b.rows(all, len(f.Columns)); err != nil {
			return err
		}
		b = pubBatch{}
	}
	return writeAnonShard(f.Dir, f.Ext, shard, all, f.Meta, f.Columns, nil)
}

// GlobalParams are the global pipeline's parameters.
type GlobalParams struct {
	Key     []byte     // the run key (rng.KeySize bytes)
	Meta    table.Meta // the release's metadata (GlobalRelease)
	Columns []string   // the input's columns, in order
	Keep    []float64  // per sensitive column, its keep probability p
	Shards  int
	Dir     string // where the shards are written (part-NNNNN.EXT)
	Ext     string
}

// GlobalPipeline adds mechanism A over the files to s: it writes the
// shards under p.Dir and returns the rows read and left out (one JSON
// line, a globalCount).
func GlobalPipeline(s beam.Scope, files []string, p GlobalParams) beam.PCollection {
	s = s.Scope("global")
	splits := fileSplits(s, files)
	meta := map[string]string(p.Meta)
	rows, counts := beam.ParDo2(s, &globalSplitFn{Key: p.Key, Meta: meta, Columns: p.Columns, Keep: p.Keep, Shards: p.Shards}, splits)
	beam.ParDo0(s, &writeGlobalShardFn{Dir: p.Dir, Ext: p.Ext, Meta: meta, Columns: p.Columns}, beam.GroupByKey(s, rows))
	return beam.ParDo(s, globalCountJSON, beam.Combine(s, addGlobalCounts, counts))
}

// anonRun is one pramkit-beam anonymize run after its flags and input
// were checked.
type anonRun struct {
	c          Config
	opts       *anonymizecmd.Options
	streams    *cli.Streams
	files      []string
	columns    []string
	cb         *codebook.Codebook
	insecureIn bool
	key        []byte
	shardRows  int64
	ext        string
}

// out names the release in messages.
func (a *anonRun) out() string { return fmt.Sprintf("%s-*%s", a.c.Output, a.ext) }

// global publishes with mechanism A.
func (a *anonRun) global(ctx context.Context) error {
	meta, keep, err := a.opts.GlobalRelease(a.cb, a.insecureIn)
	if err != nil {
		return err
	}
	release.Stamp(meta, version.String())
	rows, err := estimateRows(a.files)
	if err != nil {
		return err
	}
	shards := int(max(1, (rows+a.shardRows-1)/a.shardRows))
	tmp, err := os.MkdirTemp(filepath.Dir(a.c.Output+"x"), ".pramkit-beam-anonymize-*")
	if err != nil {
		return fmt.Errorf("cannot make a temporary folder next to --output %s: %w", a.c.Output, err)
	}
	defer os.RemoveAll(tmp)
	summaryTxt := filepath.Join(tmp, "summary.txt")
	p, s := beam.NewPipelineWithRoot()
	sum := GlobalPipeline(s, a.files, GlobalParams{Key: a.key, Meta: meta, Columns: a.columns, Keep: keep, Shards: shards, Dir: tmp, Ext: a.ext})
	textio.Write(s, summaryTxt, sum)
	if _, err := beam.Run(ctx, a.c.Runner, p); err != nil {
		return pipelineError(a.c.Runner, err)
	}
	var got globalCount
	if err := readSummary(summaryTxt, &got); err != nil {
		return err
	}
	// The tool's messages, in its order.
	if got.Read == 0 {
		return fmt.Errorf("%s has no data rows: nothing to anonymize", a.c.Input)
	}
	if got.Missing > 0 {
		fmt.Fprintf(a.streams.Err, "anonymize: %s: left out %s with a missing sensitive value (--missing drop)\n", a.out(), rowCount(got.Missing))
	}
	if got.Read == got.Missing {
		return fmt.Errorf("%s: every row has a missing sensitive value and --missing drop removed them all: nothing to anonymize", a.c.Input)
	}
	return moveShards(tmp, a.c.Output, a.ext, shards, func(i int) error {
		return writeAnonShard(tmp, a.ext, i, nil, meta, a.columns, nil)
	})
}

// readSummary reads the one JSON line a pipeline wrote to path into v.
func readSummary(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("the pipeline wrote no summary: %w", err)
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(b))), v); err != nil {
		return fmt.Errorf("the pipeline's summary %q: %v", b, err)
	}
	return nil
}
