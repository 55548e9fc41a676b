package releasetest

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/perturb"
)

// stateDir is the test binary's XDG_STATE_HOME, set by IsolateState.
var (
	stateDir  string
	ledgerSeq atomic.Int64
)

// IsolateState runs the tests of m with XDG_STATE_HOME (and so perturb's
// default release ledger) in a temporary directory, removed afterwards, so
// that tests never write to the user's state directory. Call it from
// TestMain: os.Exit(releasetest.IsolateState(m)).
func IsolateState(m *testing.M) int {
	dir, err := os.MkdirTemp("", "pramkit-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Setenv("XDG_STATE_HOME", dir)
	stateDir = dir
	return m.Run()
}

// NewPerturb is perturb.NewCmd with a release ledger of its own, empty,
// unless the arguments give --ledger or --no-ledger: every sample that
// WriteSample writes has the same Fingerprint, and the tests that release
// one are about other things than the ledger, which has its own tests.
// It needs IsolateState.
func NewPerturb(s *cli.Streams, runF func(*perturb.Options) error) *cobra.Command {
	if stateDir == "" {
		panic("releasetest.NewPerturb needs TestMain to call releasetest.IsolateState")
	}
	cmd := perturb.NewCmd(s, runF)
	// Value.Set changes the default without marking the flag as given.
	path := filepath.Join(stateDir, fmt.Sprintf("ledger-%d.jsonl", ledgerSeq.Add(1)))
	if err := cmd.Flags().Lookup("ledger").Value.Set(path); err != nil {
		panic(err)
	}
	return cmd
}
