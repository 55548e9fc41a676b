package stage

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
)

// stageFlags parses a keyed stage's flags (those after --) with the CLI's
// own flag definitions where they are shared (cli.AddSeedFlag,
// cli.AddInsecureSeedFlag: --seed alone fixes no key, and --insecure-seed
// makes the same nonce or noise key as the tool's), plus --shard-rows.
// It returns the command, whose flags answer Changed, for cli.Seed.
func stageFlags(name string, c Config, add func(*cobra.Command)) (*cobra.Command, int64, error) {
	cmd := &cobra.Command{Use: name, SilenceErrors: true, SilenceUsage: true}
	// --shard-rows before -- (Config.ShardRows, as for anonymize) sets the
	// default; after --, the stage's own flag overrides it.
	shardRows := int64(DefaultShardRows)
	if c.ShardRows > 0 {
		shardRows = c.ShardRows
	}
	cmd.Flags().Int64Var(&shardRows, "shard-rows", shardRows, "rows per output shard")
	add(cmd)
	streams := c.streams()
	cmd.SetErr(streams.Err)
	cmd.SetOut(io.Discard)
	if err := cmd.Flags().Parse(c.Args); err != nil {
		return nil, 0, cli.Usagef("%v: see pramkit-beam help", err)
	}
	if cmd.Flags().NArg() > 0 {
		return nil, 0, cli.Usagef("unexpected %q: the inputs are --input GLOB", cmd.Flags().Arg(0))
	}
	if shardRows < 1 {
		return nil, 0, cli.Usagef("--shard-rows %d: a shard has at least one row", shardRows)
	}
	if cmd.PreRunE != nil {
		if err := cmd.PreRunE(cmd, nil); err != nil {
			return nil, 0, err
		}
	}
	return cmd, shardRows, nil
}

// streams is the run's streams, the process's by default.
func (c Config) streams() *cli.Streams {
	if c.Streams == nil {
		return cli.StdStreams()
	}
	return c.Streams
}
