package estimate

import (
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/mechanism"
)

// TestHelpKindsCoverEverything: estimate has a kind (estimator and help
// section) for exactly the kinds of mechanism.Table, each covering some
// mechanism; every flag the table gives estimate is one of its flags; and
// every flag is listed in at least one kind's help, so that the `estimate
// help KIND` sections together say all --help says.
func TestHelpKindsCoverEverything(t *testing.T) {
	var have, want []string
	for _, k := range kinds {
		have = append(have, k.name)
		if len(mechanism.OfKind(k.name)) == 0 {
			t.Errorf("estimate's kind %s covers no mechanism of mechanism.Table", k.name)
		}
	}
	for _, d := range mechanism.Table {
		if !slices.Contains(want, d.Kind) {
			want = append(want, d.Kind)
		}
	}
	slices.Sort(have)
	slices.Sort(want)
	if !slices.Equal(have, want) {
		t.Errorf("estimate's kinds %v, mechanism.Table's kinds %v", have, want)
	}
	cmd := NewCmd(&cli.Streams{}, func(*Options) error { return nil })
	for flag := range mechanism.Owners("", true) {
		if cmd.Flags().Lookup(flag) == nil {
			t.Errorf("mechanism.Table gives estimate a flag --%s it does not have", flag)
		}
	}
	listed := map[string]bool{}
	for _, k := range kinds {
		kindFlags(cmd, k).VisitAll(func(f *pflag.Flag) { listed[f.Name] = true })
	}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !listed[f.Name] && f.Name != "help" && f.Name != "version" {
			t.Errorf("flag --%s is in no kind's help", f.Name)
		}
	})
}
