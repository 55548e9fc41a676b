package estimate

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cli"
)

// TestFlagsOfOtherKindsRefused: estimate takes its mechanism from the
// release's metadata, and a flag that mechanism.Table gives only to other
// mechanisms' releases is a usage error before anything is estimated. The
// releases are hand-made files whose metadata names the mechanism only:
// the refusal comes before the metadata is decoded.
func TestFlagsOfOtherKindsRefused(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.csv")
	rel := func(mech string) string {
		return cmdtest.WriteFile(t, dir, mech+".csv", fmt.Sprintf("#pramkit {\"pramkit\":1,\"meta\":{\"mechanism\":%q}}\na\nx\n", mech))
	}
	gamma, bitflip, ddps := rel("gamma-diagonal"), rel("bitflip"), rel("ddps")
	diverted, anatomy, global := rel("diverted"), rel("anatomy"), rel("global")
	build := func(s *cli.Streams) *cobra.Command { return NewCmd(s, nil) }
	tests := []cmdtest.Failure{
		{Name: "anonymity on gamma-diagonal", Args: []string{gamma, "--anonymity"}, Code: 2,
			Msg: "--anonymity applies to bitflip releases only, but " + gamma + " is a gamma-diagonal release"},
		{Name: "query on gamma-diagonal", Args: []string{gamma, "--query", "a=x"}, Code: 2,
			Msg: "--query applies to diverted, anatomy, global releases only"},
		{Name: "decoy on bitflip", Args: []string{bitflip, "--decoy", "exact"}, Code: 2,
			Msg: "--decoy applies to diverted releases only, but " + bitflip + " is a bitflip release"},
		{Name: "round-two on bitflip", Args: []string{bitflip, "--round-two"}, Code: 2,
			Msg: "--round-two applies to ddps releases only"},
		{Name: "marginal on ddps", Args: []string{ddps, "--marginal", "a"}, Code: 2,
			Msg: "--marginal applies to gamma-diagonal releases only"},
		{Name: "groups on diverted", Args: []string{diverted, "--query", "a=x", "--groups", "g.csv"}, Code: 2,
			Msg: "--groups applies to anatomy releases only"},
		{Name: "decoy on anatomy", Args: []string{anatomy, "--query", "a=x", "--decoy", "exact"}, Code: 2,
			Msg: "--decoy applies to diverted releases only, but " + anatomy + " is an anatomy release"},
		{Name: "ibu-tol on global", Args: []string{global, "--query", "a=x", "--ibu-tol", "1e-6"}, Code: 2,
			Msg: "--ibu-tol applies to diverted releases only"},
		{Name: "gamma on global", Args: []string{global, "--query", "a=x", "--gamma", "3"}, Code: 2,
			Msg: "--gamma applies to gamma-diagonal releases only"},
		// flags that several kinds share but not all, ignored before
		{Name: "method on diverted", Args: []string{diverted, "--query", "a=x", "--method", "mle"}, Code: 2,
			Msg: "--method applies to gamma-diagonal releases only"},
		{Name: "level on ddps", Args: []string{ddps, "--level", "0.9"}, Code: 2,
			Msg: "--level applies to gamma-diagonal, bitflip releases only"},
		{Name: "level on global", Args: []string{global, "--query", "a=x", "--level", "0.9"}, Code: 2,
			Msg: "--level applies to gamma-diagonal, bitflip releases only"},
		{Name: "round-two on anatomy", Args: []string{anatomy, "--query", "a=x", "--round-two"}, Code: 2,
			Msg: "--round-two applies to ddps releases only"},
	}
	cmdtest.ExpectFailures(t, build, out, tests, "-o", out)
}

// TestKindsOwnTheirOptions: building the command gives each kind its own
// options, under its own name (a new kind's file that copied another's
// accessor and kept its name would share, or clash with, its options).
func TestKindsOwnTheirOptions(t *testing.T) {
	var got *Options
	cmd := NewCmd(&cli.Streams{}, func(o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"rel.csv"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, k := range kinds {
		want = append(want, k.name)
	}
	if keys := slices.Sorted(maps.Keys(got.mech)); !slices.Equal(keys, slices.Sorted(slices.Values(want))) {
		t.Errorf("options held for %v, want one each for %v", keys, want)
	}
}
