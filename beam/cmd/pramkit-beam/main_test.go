package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/beam/internal/beamtest"
	"github.com/pramkit/pramkit/pkg/cmd/estimate"
	"github.com/pramkit/pramkit/pkg/cmd/sample"
)

// readmeCommands are the pramkit-beam commands of the README's first
// console block in "When one machine is not enough" (the Prism ones), as
// argument lists without the program name.
func readmeCommands(t *testing.T) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(beamtest.MainRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds [][]string
	section, block := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			section = line == "## When one machine is not enough"
		case section && line == "```console" && cmds == nil:
			block = true
		case block && line == "```":
			return cmds
		case block && strings.HasPrefix(line, "$ bin/pramkit-beam "):
			cmds = append(cmds, splitWords(strings.TrimPrefix(line, "$ bin/pramkit-beam ")))
		}
	}
	t.Fatal("README.md: no console block with pramkit-beam commands in \"When one machine is not enough\"")
	return nil
}

// splitWords splits a command line at spaces outside single quotes.
func splitWords(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, inWord := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// TestREADMEPrismCommands runs the README's Prism commands, as the
// installed binary would, on Adult files named as there, and checks their
// outputs against the CLI's on the same rows.
func TestREADMEPrismCommands(t *testing.T) {
	cmds := readmeCommands(t)
	if len(cmds) != 2 || cmds[0][0] != "estimate" || cmds[1][0] != "sample" {
		t.Fatalf("README commands %q: want estimate then sample", cmds)
	}
	rel, dir := beamtest.AdultRelease(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	beamtest.Split(t, rel, f("release-0.csv"), f("release-1.csv"), f("release-2.csv"))
	beamtest.Split(t, f("adult.arrow"), f("census-0.parquet"), f("census-1.parquet"))
	t.Chdir(dir)
	for _, args := range cmds {
		os.Args = append([]string{"pramkit-beam"}, args...)
		if code := run(); code != 0 {
			t.Fatalf("pramkit-beam %q: exit %d", args, code)
		}
	}
	beamtest.MustRun(t, beamtest.Tool(estimate.NewCmd), "--method", "mle", rel, "-o", "want-joint.csv")
	beamtest.MustRun(t, beamtest.Tool(sample.NewCmd), "--secret", "shared.secret", "-m", "2000", "--id", "id", "--columns", "education", "adult.arrow", "-o", "want-alice.csv")
	for _, pair := range [][2]string{{"joint.csv", "want-joint.csv"}, {"alice.csv", "want-alice.csv"}} {
		got, err1 := os.ReadFile(pair[0])
		want, err2 := os.ReadFile(pair[1])
		if err1 != nil || err2 != nil || len(want) < 100 || string(got) != string(want) {
			t.Errorf("%s differs from the CLI's %s (%v, %v)", pair[0], pair[1], err1, err2)
		}
	}
}
