package stage

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"

	"github.com/pramkit/pramkit/pkg/cli"
	estimatecmd "github.com/pramkit/pramkit/pkg/cmd/estimate"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// Config is one pramkit-beam run.
type Config struct {
	Input   string   // --input GLOB: the shards (CSV with sidecars, or Parquet)
	Output  string   // --output PREFIX
	Runner  string   // Beam runner: prism, flink, spark, dataflow…
	Args    []string // the stage's CLI flags (after --)
	Streams *cli.Streams
	// ShardRows is the rows per output shard of the stages that write
	// shards (0: DefaultShardRows; a keyed stage's --shard-rows after --
	// overrides it).
	ShardRows int64
}

// inputs expands the glob on the driver, sorted, and refuses an empty one.
func (c Config) inputs() ([]string, error) {
	if c.Input == "" {
		return nil, cli.Usagef("--input GLOB is required: the release's shards, e.g. --input 'release-*.parquet'")
	}
	if c.Output == "" {
		return nil, cli.Usagef("--output PREFIX is required")
	}
	files, err := listFiles(context.Background(), c.Input)
	if err != nil {
		return nil, cli.Usagef("--input %q: %v", c.Input, err)
	}
	if len(files) == 0 {
		return nil, cli.Usagef("--input %q matches no file", c.Input)
	}
	slices.Sort(files)
	for _, in := range files {
		for _, ext := range []string{".csv", ".counts.csv", ".counts.txt", ".sample.txt"} {
			if sameFile(in, c.Output+ext) {
				return nil, cli.Usagef("--output %s would write over the input %s: choose another prefix", c.Output, in)
			}
		}
	}
	return files, nil
}

// sameFile reports whether the existing file a is b.
func sameFile(a, b string) bool {
	if isRemote(a) || isRemote(b) {
		return a == b
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// Estimate counts the release's joint values on the runner, writes them as
// the count table PREFIX.counts.csv and estimates from it with the CLI's
// estimate (c.Args are its flags) into PREFIX.csv.
func Estimate(ctx context.Context, c Config) error {
	for _, a := range c.Args {
		if a == "-o" || strings.HasPrefix(a, "--output") || a == "--tabulate" {
			return cli.Usagef("give no %s after --: pramkit-beam estimate writes PREFIX.csv (the estimate) and PREFIX.counts.csv (the count table)", a)
		}
	}
	files, err := c.inputs()
	if err != nil {
		return err
	}
	first, err := openTable(files[0], table.ReadOptions{})
	if err != nil {
		return err
	}
	meta := first.Meta().Clone()
	cols, err := releaseColumns(first)
	first.Close()
	if err != nil {
		return err
	}
	if release.IsCountTable(meta) {
		return fmt.Errorf("%s is a count table: estimate it with the estimate tool, which takes count tables directly", files[0])
	}
	if meta, err = wholeRelease(files, meta); err != nil {
		return err
	}
	countsTxt := c.Output + ".counts.txt"
	defer removeFile(context.Background(), countsTxt)
	p, s := beam.NewPipelineWithRoot()
	textio.Write(s, countsTxt, CountPipeline(s, files, cols, meta))
	if _, err := beam.Run(ctx, c.Runner, p); err != nil {
		return pipelineError(c.Runner, err)
	}
	txt, done, err := fetchLocal(countsTxt)
	if err != nil {
		return err
	}
	defer done()
	// A remote --output: the count table and the estimate are written in a
	// local folder and copied to PREFIX.counts.csv and PREFIX.csv once the
	// estimate succeeded.
	out := c.Output
	if isRemote(c.Output) {
		dir, err := os.MkdirTemp("", "pramkit-beam-out-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		out = filepath.Join(dir, remoteBase(c.Output))
	}
	countsCSV := out + ".counts.csv"
	if err := writeCountTable(txt, countsCSV, cols, meta); err != nil {
		return err
	}
	args := append(slices.Clone(c.Args), countsCSV, "-o", out+".csv")
	streams := c.Streams
	if streams == nil {
		streams = cli.StdStreams()
	}
	if out != c.Output {
		streams = renamedStreams(streams, out, c.Output)
	}
	if code := cli.Run(estimatecmd.NewCmd(streams, nil), args, streams); code != 0 {
		return &ExitError{Tool: "estimate", Code: code}
	}
	if out != c.Output {
		for _, ext := range []string{".counts.csv", ".counts.csv.meta.json", ".csv", ".csv.meta.json"} {
			if _, err := os.Stat(out + ext); err != nil {
				continue
			}
			if err := upload(ctx, out+ext, c.Output+ext); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeCountTable turns the pipeline's counts file into a count table (the
// format of estimate --tabulate): the release's columns and a count column,
// rows sorted by label, with the release's metadata marked as a count table.
func writeCountTable(txt, out string, cols []string, meta table.Meta) error {
	f, err := os.Open(txt)
	if err != nil {
		return err
	}
	defer f.Close()
	type row struct {
		labels []string
		n      int64
	}
	var rows []row
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		key, num, ok := strings.Cut(sc.Text(), "\t")
		var r row
		if !ok || json.Unmarshal([]byte(key), &r.labels) != nil || len(r.labels) != len(cols) {
			return fmt.Errorf("%s: line %q is not a count line", txt, sc.Text())
		}
		if r.n, err = strconv.ParseInt(num, 10, 64); err != nil {
			return fmt.Errorf("%s: line %q: %v", txt, sc.Text(), err)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	slices.SortFunc(rows, func(a, b row) int { return slices.Compare(a.labels, b.labels) })
	var fields []arrow.Field
	for _, name := range cols {
		if name == release.CountColumn {
			return fmt.Errorf("column %q has the name of the count table's count column; rename it before estimating", name)
		}
		fields = append(fields, arrow.Field{Name: name, Type: arrow.BinaryTypes.String})
	}
	fields = append(fields, arrow.Field{Name: release.CountColumn, Type: arrow.PrimitiveTypes.Int64})
	schema := arrow.NewSchema(fields, nil)
	m := meta.Clone()
	m[release.KeyCountTable] = release.CountTableTrue
	w, err := table.Create(out, schema, m, table.WriteOptions{})
	if err != nil {
		return err
	}
	defer w.Abort()
	bb := table.NewRowWriter(w, schema, 0)
	defer bb.Release()
	for _, r := range rows {
		for j, l := range r.labels {
			bb.String(j, l)
		}
		bb.Int64(len(cols), r.n)
		if err := bb.EndRow(); err != nil {
			return err
		}
	}
	if err := bb.Flush(); err != nil {
		return err
	}
	return w.Commit()
}

// ExitError is a CLI stage that failed after printing its message; Code is
// its exit code (1 data, 2 usage).
type ExitError struct {
	Tool string
	Code int
}

func (e *ExitError) Error() string { return fmt.Sprintf("%s failed (exit code %d)", e.Tool, e.Code) }

// pipelineError shortens a failed pipeline's error to its cause, the
// DoFn's own one-line message (the runner wraps it in the bundle's plan,
// over many lines).
func pipelineError(runner string, err error) error {
	msg := strings.TrimSpace(err.Error())
	if i := strings.LastIndex(msg, "\n"); i >= 0 {
		msg = strings.TrimSpace(msg[i+1:])
	}
	msg = strings.TrimRight(msg, `"`)
	return fmt.Errorf("%s (beam runner %s)", msg, runner)
}
