package estimate

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/pramkit/pramkit/pkg/cli"
)

// TestHelpKindsCoverEverything: every mechanism estimate runs has a help
// section, and every flag is listed in at least one kind's help, so that
// the `estimate help KIND` sections together say all --help says.
func TestHelpKindsCoverEverything(t *testing.T) {
	covered := map[string]bool{}
	for _, k := range helpKinds {
		for _, m := range k.mechanisms {
			covered[m] = true
		}
	}
	for m := range runners {
		if !covered[m] {
			t.Errorf("mechanism %s has no section in estimate's help", m)
		}
	}
	cmd := NewCmd(&cli.Streams{}, func(*Options) error { return nil })
	listed := map[string]bool{}
	for _, k := range helpKinds {
		kindFlags(cmd, k).VisitAll(func(f *pflag.Flag) { listed[f.Name] = true })
	}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !listed[f.Name] && f.Name != "help" && f.Name != "version" {
			t.Errorf("flag --%s is in no kind's help", f.Name)
		}
	})
}
