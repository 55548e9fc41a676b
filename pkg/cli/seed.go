package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// --insecure-seed (issue 9). A seed fixes whatever it feeds, so a seeded
// secret, pad, PRF key or mechanism noise can be recomputed by anyone who
// knows or guesses the seed: a server that encrypts a dummy table with the
// curator's seed gets the pads. Such randomness comes from crypto/rand
// unless the user asks for the seed by this loudly named flag, and outputs
// made so carry InsecureSeedKey, on which every later stage warns.

// InsecureSeedKey is the metadata item ("true") of a table made with
// --insecure-seed, or from one that was.
const InsecureSeedKey = release.KeyInsecureSeed

// AddInsecureSeedFlag registers --insecure-seed on a command whose --seed
// would otherwise fix privacy-protecting randomness: from then on s.Rand is
// seeded only with both flags. Before the run, the command refuses
// --insecure-seed without --seed and warns when either is given.
func AddInsecureSeedFlag(cmd *cobra.Command, s *Seed) {
	cmd.Flags().BoolVar(&s.Insecure, "insecure-seed", false, "let --seed also fix secrets, pads, keys and the mechanism's noise: FOR TESTS ONLY, anyone who knows the seed can undo the release")
	if f := cmd.Flags().Lookup("seed"); f != nil {
		f.Usage = "make the run reproducible with seed `N` together with --insecure-seed: FOR TESTS AND EXPERIMENTS ONLY; alone it fixes no secret, pad, key or noise (default: crypto/rand)"
	}
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		warn := func(msg string) { fmt.Fprintf(c.ErrOrStderr(), "%s: warning: %s\n", c.Name(), msg) }
		switch seeded := c.Flags().Changed("seed"); {
		case s.Insecure && !seeded:
			return Usagef("--insecure-seed needs --seed N: it lets that seed fix secrets, pads, keys and noise")
		case s.Insecure:
			warn("--insecure-seed: the output is reproducible by anyone who knows the seed; never publish it")
		case seeded:
			warn("--seed does not fix secrets, pads, keys or the mechanism's noise, which come from crypto/rand; add --insecure-seed to fix them too (FOR TESTS ONLY)")
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}

// Mark records InsecureSeedKey in out when this run used --insecure-seed.
func (s *Seed) Mark(out table.Meta) {
	if s.Insecure {
		out[InsecureSeedKey] = "true"
	}
}

// CarryInsecureSeed warns when the input file name, whose metadata is in,
// was made with --insecure-seed, and then marks out (which may be nil) the
// same way, so that the warning follows the data through every stage. It
// reports whether the input was marked.
func CarryInsecureSeed(s *Streams, tool, name string, in, out table.Meta) bool {
	if in[InsecureSeedKey] != "true" {
		return false
	}
	s.Warnf(tool, "%s was made with --insecure-seed: anyone who knows the seed can undo it; never publish what comes from it", name)
	if out != nil {
		out[InsecureSeedKey] = "true"
	}
	return true
}
