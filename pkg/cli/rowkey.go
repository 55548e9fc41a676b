package cli

import (
	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
)

// Key returns the key of the run's row-keyed streams named stream
// (rng.Keyed): derived from --seed under the same rule as Rand (with
// --insecure-seed too on commands that have it), from crypto/rand
// otherwise. Each row's draws then depend only on the key and the row's
// index, so a seeded run is byte-identical at any core count and chunk
// size.
func (s *Seed) Key(cmd *cobra.Command, stream string) rng.Key {
	s.Set = cmd.Flags().Changed("seed")
	guarded := cmd.Flags().Lookup("insecure-seed") != nil
	return rng.RunKey(s.Value, s.Set && (s.Insecure || !guarded), stream)
}

// OpenWith opens an input table as Open does, with further read options
// (DictColumns, BatchSize); opt.Stdin is the command's stdin.
func (s *Streams) OpenWith(path string, opt table.ReadOptions) (table.Reader, error) {
	opt.Stdin = s.In
	return table.Open(path, opt)
}
