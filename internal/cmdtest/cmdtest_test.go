package cmdtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
)

// fakeCmd fails (or not) as its first argument says; "leave FILE" writes
// FILE before failing.
func fakeCmd(s *cli.Streams) *cobra.Command {
	return cli.Root(&cobra.Command{
		Use: "fake",
		RunE: func(c *cobra.Command, args []string) error {
			switch args[0] {
			case "ok":
				return nil
			case "data":
				return errors.New("data.csv: row 3 is bad")
			case "usage":
				return cli.Usagef("--level must be in (0, 1)")
			case "warn":
				fmt.Fprintln(s.Err, "fake: warning: something")
				return errors.New("data.csv: row 3 is bad")
			case "print":
				fmt.Fprintln(s.Out, "a,b")
				return errors.New("data.csv: row 3 is bad")
			case "leave":
				os.WriteFile(args[1], []byte("x"), 0o644)
				return errors.New("data.csv: row 3 is bad")
			}
			return nil
		},
	})
}

func TestProblemsFindEachWayOfFailingBadly(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.csv")
	cases := []struct {
		args []string
		want Failure
		bad  string // a part of a problem expected, "" for none
	}{
		{[]string{"data"}, Failure{Code: 1, Msg: "row 3"}, ""},
		{[]string{"usage"}, Failure{Code: 2, Msg: "--level"}, ""},
		{[]string{"ok"}, Failure{Code: 1, Msg: "row 3"}, "exit 0, want 1"},
		{[]string{"usage"}, Failure{Code: 1, Msg: "--level"}, "exit 2, want 1"},
		{[]string{"data"}, Failure{Code: 1, Msg: "row 4"}, "first stderr line"},
		{[]string{"warn"}, Failure{Code: 1, Msg: "row 3"}, "first stderr line"},
		{[]string{"print"}, Failure{Code: 1, Msg: "row 3"}, "printed"},
		{[]string{"leave", out + ".meta.json"}, Failure{Code: 1, Msg: "row 3"}, "left behind"},
	}
	for _, c := range cases {
		ps := Problems("fake", Run(fakeCmd, nil, c.args...), c.want, out)
		switch {
		case c.bad == "" && len(ps) > 0:
			t.Errorf("%v: problems %q, want none", c.args, ps)
		case c.bad != "" && !slices.ContainsFunc(ps, func(p string) bool { return strings.Contains(p, c.bad) }):
			t.Errorf("%v: problems %q, want one about %q", c.args, ps, c.bad)
		}
		os.Remove(out + ".meta.json")
	}
}
