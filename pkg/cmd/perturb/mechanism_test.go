package perturb

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/mechanism"
)

// TestStepsMatchMechanismTable: perturb has a step for exactly the
// mechanisms mechanism.Table gives it, in the table's order, and every flag
// the table says a perturb mechanism owns is one of perturb's flags (a
// misspelt name would refuse nothing).
func TestStepsMatchMechanismTable(t *testing.T) {
	var names []string
	for _, m := range mechanisms {
		names = append(names, m.name)
	}
	cmdtest.MechanismTable(t, mechanism.Perturb, names, NewCmd(&cli.Streams{}, nil))
}

// TestFlagsOfOtherMechanismsRefused: a flag that belongs to another
// mechanism than the chosen one is a usage error before any input is read
// (e.parquet does not exist), and the message names the flag's mechanism.
func TestFlagsOfOtherMechanismsRefused(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.csv")
	build := func(s *cli.Streams) *cobra.Command { return NewCmd(s, nil) }
	tests := []cmdtest.Failure{
		{Name: "issue 10's example", Args: []string{"--gamma", "20", "--lie", "0.1", "--pi-s", "0.3", "--non-participant", "X"},
			Code: 2, Msg: "--lie belongs to --mechanism bitflip, not gamma-diagonal; drop it or choose that mechanism"},
		{Name: "ddps flag on gamma", Args: []string{"--epsilon", "1", "--pi-bot", "0.5,0.5"},
			Code: 2, Msg: "--pi-bot belongs to --mechanism ddps, not gamma-diagonal"},
		{Name: "codebook on gamma", Args: []string{"--epsilon", "1", "--codebook", "cb.json"},
			Code: 2, Msg: "--codebook belongs to --mechanism bitflip or ddps, not gamma-diagonal; drop it or choose one of those mechanisms"},
		{Name: "gamma flag on bitflip", Args: []string{"--mechanism", "bitflip", "--lie", "0.1", "--columns", "a", "--allow-recompose"},
			Code: 2, Msg: "--allow-recompose belongs to --mechanism gamma-diagonal, not bitflip"},
		{Name: "ddps flag on bitflip", Args: []string{"--mechanism", "bitflip", "--lie", "0.1", "--columns", "a", "--column", "a"},
			Code: 2, Msg: "--column belongs to --mechanism ddps, not bitflip"},
		{Name: "bitflip flag on ddps", Args: []string{"--mechanism", "ddps", "--column", "a", "--pi-s", "0.1", "--codebook", "cb.json", "--lie", "0.1"},
			Code: 2, Msg: "--lie belongs to --mechanism bitflip, not ddps"},
		{Name: "gamma flag on ddps", Args: []string{"--mechanism", "ddps", "--column", "a", "--pi-s", "0.1", "--codebook", "cb.json", "--gamma", "3"},
			Code: 2, Msg: "--gamma belongs to --mechanism gamma-diagonal, not ddps"},
		{Name: "unknown mechanism", Args: []string{"--mechanism", "rr", "--epsilon", "1"},
			Code: 2, Msg: `unknown --mechanism "rr": choose gamma-diagonal, bitflip or ddps`},
	}
	cmdtest.ExpectFailures(t, build, out, tests, "e.parquet", "-o", out)
}

// TestStepsOwnTheirOptions: building the command gives each mechanism its
// own options, under its own name (a new mechanism's file that copied
// another's accessor and kept its name would share, or clash with, that
// mechanism's options).
func TestStepsOwnTheirOptions(t *testing.T) {
	got := parseFlags(t, "in.csv")
	keys := slices.Sorted(maps.Keys(got.mech))
	if want := slices.Sorted(slices.Values(mechanism.Names(mechanism.Perturb))); !slices.Equal(keys, want) {
		t.Errorf("options held for %v, want one each for %v", keys, want)
	}
}
