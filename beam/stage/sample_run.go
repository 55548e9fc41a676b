package stage

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/sample"
	"github.com/pramkit/pramkit/pkg/table"
)

func init() {
	register.Function2x0(sampleLines)
	register.Emitter1[string]()
}

// sampleLines writes the combined bottom-m for the driver: a first line
// with n and any repeated id, then one JSON keptRow per line (unordered:
// the driver sorts them by priority).
func sampleLines(a bottomAcc, emit func(string)) {
	head, _ := json.Marshal(bottomAcc{N: a.N, Dup: a.Dup, File: a.File})
	emit("#" + string(head))
	for _, r := range a.Rows {
		b, _ := json.Marshal(r)
		emit(string(b))
	}
}

// sampleFlags are the flags of sample that pramkit-beam sample takes
// (after --): the shared secret, m, the id column and the kept columns.
type sampleFlags struct {
	secret, id string
	m          int
	columns    string
}

func parseSampleFlags(args []string) (sampleFlags, error) {
	var f sampleFlags
	fs := flag.NewFlagSet("sample", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.secret, "secret", "", "")
	fs.StringVar(&f.id, "id", "", "")
	fs.IntVar(&f.m, "m", 0, "")
	fs.StringVar(&f.columns, "columns", "", "")
	if err := fs.Parse(args); err != nil {
		return f, cli.Usagef("%v: pramkit-beam sample takes -- --secret FILE -m M --id COLUMN [--columns a,b]", err)
	}
	switch {
	case fs.NArg() > 0:
		return f, cli.Usagef("unexpected %q: the inputs are --input GLOB", fs.Arg(0))
	case f.secret == "":
		return f, cli.Usagef("--secret FILE is required: the curators' shared secret (sample --new-secret makes one)")
	case f.m < 1:
		return f, cli.Usagef("-m M is required, M ≥ 1: the sample size")
	case f.id == "":
		return f, cli.Usagef("--id COLUMN is required: on a cluster rows have no global position, so they are sampled by id")
	}
	return f, nil
}

// Sample draws on the runner the sample that
// "sample --secret S -m M --id ID [--columns …] FILES -o PREFIX.csv"
// writes, into PREFIX.csv.
func Sample(ctx context.Context, c Config) error {
	sf, err := parseSampleFlags(c.Args)
	if err != nil {
		return err
	}
	files, err := c.inputs()
	if err != nil {
		return err
	}
	if err := c.localOutput("sample"); err != nil {
		return err
	}
	streams := c.Streams
	if streams == nil {
		streams = cli.StdStreams()
	}
	b, err := os.ReadFile(sf.secret)
	if err != nil {
		return fmt.Errorf("cannot read the secret %s: %w", sf.secret, err)
	}
	secret, insecure, err := sample.ParseSecretFile(b)
	if err != nil {
		return fmt.Errorf("%s: %w", sf.secret, err)
	}
	if insecure {
		streams.Warnf("sample", "%s was made with --insecure-seed: anyone who knows the seed can recompute it and the sample; never publish what it samples", sf.secret)
	}
	first, err := openTable(files[0], table.ReadOptions{})
	if err != nil {
		return err
	}
	meta := first.Meta().Clone()
	var keep []string
	if sf.columns != "" {
		keep = strings.Split(sf.columns, ",")
	} else {
		for _, fl := range first.Schema().Fields() {
			if fl.Name != sf.id {
				keep = append(keep, fl.Name)
			}
		}
	}
	first.Close()
	if slices.Contains(keep, sf.id) {
		return cli.Usagef("--columns includes the id column %q", sf.id)
	}

	tmp := c.Output + ".sample.txt"
	p, s := beam.NewPipelineWithRoot()
	acc := SamplePipeline(s, files, secret, sf.m, sf.id, keep, meta)
	textio.Write(s, tmp, beam.ParDo(s, sampleLines, acc))
	if _, err := beam.Run(ctx, c.Runner, p); err != nil {
		return pipelineError(c.Runner, err)
	}
	defer os.Remove(tmp)
	got, err := readSampleLines(tmp)
	if err != nil {
		return err
	}
	switch {
	case got.Dup != "":
		if got.File == "" { // two shards hold it
			got.File = c.Input
		}
		return &table.DataError{File: got.File, Column: sf.id, Err: fmt.Errorf("id %q appears more than once; ids given with --id must be unique, since rows of one id are kept or dropped together", got.Dup)}
	case got.N == 0:
		return fmt.Errorf("%s has no data rows: nothing to sample", c.Input)
	case int64(sf.m) > got.N:
		return fmt.Errorf("cannot sample m = %d rows: %s has n = %d rows; choose -m ≤ %d", sf.m, c.Input, got.N, got.N)
	}

	// The output as sample's writeSample writes it.
	cli.CarryInsecureSeed(streams, "sample", files[0], meta, meta)
	if insecure {
		meta[cli.InsecureSeedKey] = "true"
	}
	meta[release.KeyStage] = release.StageSample
	meta[release.KeySampleID] = release.SampleIDColumn
	m := int64(len(got.Rows))
	release.Sample{N: got.N, M: m, Fingerprint: sample.Fingerprint(secret, got.N, m)}.Encode(meta)
	release.Priorities{}.Remove(meta)
	schema := table.StringSchema(keep)
	inputs := append(slices.Clone(files), sf.secret)
	w, err := streams.Create(cli.Output{Path: c.Output + ".csv"}, schema, meta, table.CSV, inputs)
	if err != nil {
		return err
	}
	defer w.Abort()
	rw := table.NewRowWriter(w, schema, 0)
	defer rw.Release()
	for _, r := range got.Rows {
		if err := rw.AppendStrings(r.Row[:len(keep)]); err != nil {
			return err
		}
	}
	if err := rw.Flush(); err != nil {
		return err
	}
	return w.Commit()
}

// readSampleLines reads sampleLines' output back, rows in priority order.
func readSampleLines(path string) (bottomAcc, error) {
	var a bottomAcc
	f, err := os.Open(path)
	if err != nil {
		return a, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<26)
	head := false
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "#"); ok {
			if err := json.Unmarshal([]byte(rest), &a); err != nil {
				return a, fmt.Errorf("%s: %v", path, err)
			}
			head = true
			continue
		}
		var r keptRow
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return a, fmt.Errorf("%s: %v", path, err)
		}
		a.Rows = append(a.Rows, r)
	}
	if err := sc.Err(); err != nil {
		return a, err
	}
	if !head {
		return a, fmt.Errorf("%s: the pipeline wrote no summary line", path)
	}
	slices.SortFunc(a.Rows, keptRow.less)
	return a, nil
}
