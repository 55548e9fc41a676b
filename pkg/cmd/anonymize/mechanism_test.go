package anonymize

import (
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/mechanism"
)

// TestStepsMatchMechanismTable: anonymize has a step for exactly the
// mechanisms mechanism.Table gives it, in the table's order, and every flag
// the table says they own is one of anonymize's flags.
func TestStepsMatchMechanismTable(t *testing.T) {
	var names []string
	for _, st := range steps {
		names = append(names, st.name)
	}
	cmdtest.MechanismTable(t, mechanism.Anonymize, names, NewCmd(&cli.Streams{}, nil))
}

// TestFlagsOfOtherMechanismsRefused: --p only with global, --groups and
// --group-column only with anatomy, also with --check (which used to
// ignore them), before any input is read (t.csv does not exist).
func TestFlagsOfOtherMechanismsRefused(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.csv")
	build := func(s *cli.Streams) *cobra.Command { return NewCmd(s, nil) }
	tests := []cmdtest.Failure{
		{Name: "p with diverted", Args: []string{"--l", "2", "--p", "0.5"},
			Code: 2, Msg: "--p belongs to --mechanism global, not diverted; drop it or choose that mechanism"},
		{Name: "p with anatomy", Args: []string{"--mechanism", "anatomy", "--l", "2", "--groups", "g.csv", "--p", "0.5"},
			Code: 2, Msg: "--p belongs to --mechanism global, not anatomy"},
		{Name: "groups with global", Args: []string{"--mechanism", "global", "--p", "0.5", "--groups", "g.csv"},
			Code: 2, Msg: "--groups belongs to --mechanism anatomy, not global"},
		{Name: "group-column with diverted", Args: []string{"--l", "2", "--group-column", "g"},
			Code: 2, Msg: "--group-column belongs to --mechanism anatomy, not diverted"},
		{Name: "groups with --check", Args: []string{"--check", "--l", "2", "--groups", "g.csv"},
			Code: 2, Msg: "--groups belongs to --mechanism anatomy, not diverted"},
		{Name: "p with --check", Args: []string{"--check", "--l", "2", "--p", "0.5"},
			Code: 2, Msg: "--p belongs to --mechanism global, not diverted"},
		{Name: "unknown mechanism", Args: []string{"--mechanism", "rr", "--l", "2"},
			Code: 2, Msg: `unknown --mechanism "rr": choose diverted, anatomy or global`},
	}
	cmdtest.ExpectFailures(t, build, out, tests, "--sensitive", "s", "--codebook", "cb.json", "t.csv", "-o", out)
}
