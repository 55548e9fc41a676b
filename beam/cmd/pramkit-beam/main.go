// Command pramkit-beam runs pramkit stages as Apache Beam pipelines, for
// releases that outgrow one machine:
//
//	pramkit-beam estimate --input GLOB --output PREFIX [--runner R, runner flags] [-- estimate flags]
//
// Flags after -- are the CLI tool's own (e.g. --method inverse --json).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	// gs:// and s3:// inputs and outputs (the Dataflow runner links gcs
	// too; named here so that no runner choice drops it). s3 takes the AWS
	// SDK's default configuration: credentials, AWS_REGION,
	// AWS_ENDPOINT_URL.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/s3"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/flink"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/spark"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"

	"github.com/pramkit/pramkit/beam/stage"
	"github.com/pramkit/pramkit/pkg/cli"
)

const usage = `usage: pramkit-beam estimate --input GLOB --output PREFIX [--runner prism|flink|spark|dataflow …] [-- estimate flags]

estimate  counts the joint values of a decrypted γ-diagonal release's shards
          on the runner and estimates from the counts with estimate's own code:
          PREFIX.csv is what "estimate FILES -o PREFIX.csv" writes, and
          PREFIX.counts.csv the count table ("estimate --tabulate").
sample    draws into PREFIX.csv the rows that "sample --secret FILE -m M
          --id COLUMN" draws from all the shards together (by id: rows have
          no global position on a cluster).
encrypt   encrypts a sample's shards into PREFIX-SSSSS-of-NNNNN.EXT and writes
          the key file, as "encrypt --prf-key K --key-out KEY" (PRF pads of
          the row's index in the sample; -- --codebook --columns --unknown
          --missing --seed --insecure-seed --shard-rows N).
perturb   joins the curators' encrypted shards (all matched by --input) by
          row and perturbs them as "perturb [--ledger L|--no-ledger]
          [--noise-key K] --epsilon E|--gamma G" into
          PREFIX-SSSSS-of-NNNNN.EXT (first releases only). With
          -- --mechanism bitflip|ddps (and that mechanism's perturb flags)
          it randomizes plaintext shards row by row into PREFIX-00000.EXT, …
          (a random order, the tool's metadata: estimate reads them as parts).
decrypt   joins a release's shards with the keys (-- --key FILE|GLOB …) by
          row and decrypts them as "decrypt" into PREFIX-SSSSS-of-NNNNN.EXT.
          Shards are parts (first_row, rows): the tools read them too.
anonymize publishes the shards with mechanism A′ as "anonymize --sensitive
          COLS --l N --codebook FILE" does (the same flags after --, same
          law), into PREFIX-00000.EXT, PREFIX-00001.EXT, … (--shard-rows
          rows each, in a random order) with anonymize's metadata; after --
          also --mechanism global (--p P or --l N) and --mechanism anatomy
          --groups FILE (the sensitive table to FILE).
`

var (
	input   = flag.String("input", "", "the input shards, a glob `GLOB` (CSV with sidecars, or Parquet): a local path, gs://BUCKET/… or s3://BUCKET/…")
	output  = flag.String("output", "", "output `PREFIX`: a local path, gs://BUCKET/… or s3://BUCKET/… (sample, anonymize, perturb --mechanism bitflip|ddps: local only)")
	runner  = flag.String("runner", "prism", "Beam runner `R`: prism (in-process, the default), flink, spark, dataflow or universal, with the runner's own flags (--endpoint, --environment_type, --project…)")
	verbose = flag.Bool("verbose", false, "print the runner's log")
	shards  = flag.Int64("shard-rows", 0, "encrypt, perturb, decrypt, anonymize: about `N` rows per output shard (default 262144)")
)

func main() { os.Exit(run()) }

func run() int {
	if len(os.Args) < 2 || os.Args[1] == "" || os.Args[1][0] == '-' {
		// A worker started by a remote runner (--worker and friends):
		// beam.Init serves the pipeline and exits.
		flag.Parse()
		beam.Init()
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	sub := os.Args[1]
	if err := flag.CommandLine.Parse(os.Args[2:]); err != nil {
		return 2
	}
	beam.Init()
	if !*verbose {
		// Prism logs its progress, and a failure as the bundles stack.
		slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError + 1})))
	}
	// The driver's copies of remote inputs (and, on Prism, the in-process
	// workers') go with it, and the temporary folder of its own with what
	// Prism leaves there.
	if restore, err := stage.PrivateTempDir(); err == nil {
		defer restore()
	}
	defer stage.PurgeFetched()
	c := stage.Config{Input: *input, Output: *output, Runner: *runner, Args: flag.Args(), Streams: cli.StdStreams(), ShardRows: *shards}
	var err error
	switch sub {
	case "estimate":
		err = stage.Estimate(context.Background(), c)
	case "sample":
		err = stage.Sample(context.Background(), c)
	case "encrypt":
		err = stage.Encrypt(context.Background(), c)
	case "perturb":
		if stage.LocalMechanism(c.Args) != "" {
			err = stage.PerturbLocal(context.Background(), c)
		} else {
			err = stage.Perturb(context.Background(), c)
		}
	case "decrypt":
		err = stage.Decrypt(context.Background(), c)
	case "anonymize":
		err = stage.Anonymize(context.Background(), c)
	case "help", "-h", "--help":
		fmt.Print(usage)
		return 0
	default:
		fmt.Fprintf(os.Stderr, "pramkit-beam: unknown stage %q: want estimate, sample, encrypt, perturb, decrypt or anonymize\n%s", sub, usage)
		return 2
	}
	var ee *stage.ExitError
	var usageErr *cli.UsageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.Code // the tool printed its message
	case errors.As(err, &usageErr):
		fmt.Fprintf(os.Stderr, "pramkit-beam %s: %v\n", sub, err)
		return 2
	default:
		fmt.Fprintf(os.Stderr, "pramkit-beam %s: %v\n", sub, err)
		return 1
	}
}
