// Package e2e runs whole pramkit commands, and pipelines of them, from
// txtar scripts in testdata/script (rogpeppe/go-internal/testscript): each
// tool name maps to its Main, so a script runs the real binaries' code
// without building them.
package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/pramkit/pramkit/internal/adulttest"
	"github.com/pramkit/pramkit/pkg/cmd/anonymize"
	"github.com/pramkit/pramkit/pkg/cmd/decrypt"
	"github.com/pramkit/pramkit/pkg/cmd/encrypt"
	"github.com/pramkit/pramkit/pkg/cmd/estimate"
	"github.com/pramkit/pramkit/pkg/cmd/perturb"
	"github.com/pramkit/pramkit/pkg/cmd/sample"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"sample":    func() { os.Exit(sample.Main()) },
		"encrypt":   func() { os.Exit(encrypt.Main()) },
		"perturb":   func() { os.Exit(perturb.Main()) },
		"decrypt":   func() { os.Exit(decrypt.Main()) },
		"estimate":  func() { os.Exit(estimate.Main()) },
		"anonymize": func() { os.Exit(anonymize.Main()) },
	})
}

// TestScripts runs every testdata/script/*.txtar. $ADULT is the folder
// holding adult.data (see internal/adulttest) and $ROOT the repo root, so
// scripts can use the Adult data and testdata/adult/codebook.json.
func TestScripts(t *testing.T) {
	adult := adulttest.Dir(t)
	root := adulttest.RepoRoot(t)
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("ADULT", adult)
			env.Setenv("ROOT", root)
			// perturb's release ledger goes to the script's own state
			// directory, never the user's (HOME is /no-home already).
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, ".state"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// adultcsv FILE writes Adult's training data as CSV with a header.
			"adultcsv": func(ts *testscript.TestScript, neg bool, args []string) {
				rows := adulttest.Load(t, "data")
				src := adulttest.WriteCSV(t, rows)
				b, err := os.ReadFile(src)
				ts.Check(err)
				ts.Check(os.WriteFile(ts.MkAbs(args[0]), b, 0o644))
			},
			// mode FILE PERM checks a file's permission bits.
			"mode": func(ts *testscript.TestScript, neg bool, args []string) {
				st, err := os.Stat(ts.MkAbs(args[0]))
				ts.Check(err)
				if got := st.Mode().Perm().String(); (got == args[1]) == neg {
					ts.Fatalf("%s has mode %s", args[0], got)
				}
			},
			// nofiles GLOB fails if any file matches (no partial output).
			"nofiles": func(ts *testscript.TestScript, neg bool, args []string) {
				m, _ := filepath.Glob(ts.MkAbs(args[0]))
				if len(m) > 0 {
					ts.Fatalf("unexpected files: %v", m)
				}
			},
		},
	})
}
