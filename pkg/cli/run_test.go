package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// A panic in a command is a one-line internal error with exit code 1, not
// Go's stack trace and exit code 2 (which reads as a usage error).
func TestRunReportsAPanicAsAnInternalError(t *testing.T) {
	var errb bytes.Buffer
	s := &Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &errb}
	cmd := &cobra.Command{Use: "tool", RunE: func(*cobra.Command, []string) error {
		var m map[string]int
		m["x"] = 1 // assignment to entry in nil map
		return nil
	}}
	if code := Run(cmd, nil, s); code != ExitFailure {
		t.Errorf("exit code %d, want %d", code, ExitFailure)
	}
	got := errb.String()
	if strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "tool: internal error: assignment to entry in nil map at run_test.go:") {
		t.Errorf("stderr %q", got)
	}
}
