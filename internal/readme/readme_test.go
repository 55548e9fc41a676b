// Package readme runs the README's walkthrough: every fenced block whose
// info string is "sh" is a command a reader types, and the blocks run in
// order, as one shell session, in a temporary folder laid out like the
// repository after `make build` and `scripts/fetch-adult.sh`. Blocks with
// no info string (usage synopses, printed output) are not run. So an
// example that no longer runs as written fails `make test`.
package readme

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pramkit/pramkit/internal/adulttest"
	"github.com/pramkit/pramkit/pkg/cmd/anonymize"
	"github.com/pramkit/pramkit/pkg/cmd/decrypt"
	"github.com/pramkit/pramkit/pkg/cmd/encrypt"
	"github.com/pramkit/pramkit/pkg/cmd/estimate"
	"github.com/pramkit/pramkit/pkg/cmd/perturb"
	"github.com/pramkit/pramkit/pkg/cmd/sample"
)

// tools maps each tool name to its Main. The test binary is also the
// tools: TestMain runs a tool when the binary is called by that name
// (a link in the walkthrough's bin folder), as a multi-call binary does,
// so the walkthrough needs no `go build` of six Arrow-linked programs.
var tools = map[string]func() int{
	"sample":    sample.Main,
	"encrypt":   encrypt.Main,
	"perturb":   perturb.Main,
	"decrypt":   decrypt.Main,
	"estimate":  estimate.Main,
	"anonymize": anonymize.Main,
}

func TestMain(m *testing.M) {
	if main, ok := tools[filepath.Base(os.Args[0])]; ok {
		os.Exit(main())
	}
	os.Exit(m.Run())
}

// block is one runnable fenced block of the README.
type block struct {
	line  int // README line of its first command
	lines []string
}

// runnable returns the README's ```sh blocks in order. Any other fence
// (```, ```json, ```console) is documentation only.
func runnable(text string) ([]block, error) {
	var out []block
	var cur *block
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			if strings.TrimSpace(strings.TrimPrefix(trimmed, "```")) == "sh" {
				cur = &block{line: n + 1}
			} else {
				// Skip a non-runnable block up to its closing fence.
				for n++; sc.Scan(); n++ {
					if strings.TrimSpace(sc.Text()) == "```" {
						break
					}
				}
			}
		case cur != nil && trimmed == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			if strings.HasPrefix(trimmed, "$ ") {
				return nil, fmt.Errorf("README.md:%d: a ```sh block holds commands only, without a \"$ \" prompt (show output in a separate ``` block)", n)
			}
			cur.lines = append(cur.lines, line)
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("README.md:%d: ```sh block not closed", cur.line-1)
	}
	return out, sc.Err()
}

func TestRunnableBlocks(t *testing.T) {
	text := "# t\n\n```\nsample --usage\n```\n\n```sh\nsample -m 3 a.csv\nestimate x\n```\n\n```json\n{}\n```\n```sh\nanonymize\n```\n"
	got, err := runnable(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].line != 8 || len(got[0].lines) != 2 || got[1].line != 16 || got[1].lines[0] != "anonymize" {
		t.Fatalf("runnable = %+v, want the two sh blocks starting at lines 8 and 16", got)
	}
	if _, err := runnable("```sh\n$ sample\n```\n"); err == nil || !strings.Contains(err.Error(), "README.md:2:") {
		t.Errorf("a prompt in a runnable block: err = %v, want one naming README.md:2", err)
	}
	if _, err := runnable("```sh\nsample\n"); err == nil {
		t.Error("an unclosed block was accepted")
	}
}

// TestREADMEWalkthrough runs the README's ```sh blocks in order in one bash
// session (set -euo pipefail), in a folder holding testdata/adult/adult.csv
// and testdata/adult/codebook.json, with the tools on PATH and perturb's
// ledger in the folder. A failure names the README line of the command
// that failed and shows its output.
func TestREADMEWalkthrough(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	root := adulttest.RepoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := runnable(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	// The walkthrough must show every tool, so none of them can lose its
	// examples unnoticed.
	all := ""
	for _, b := range blocks {
		all += strings.Join(b.lines, "\n") + "\n"
	}
	for _, name := range []string{"sample", "encrypt", "perturb", "decrypt", "estimate", "anonymize"} {
		if !regexp.MustCompile(`(?m)(^|[|;&(]|&&)\s*` + name + `\b`).MatchString(all) {
			t.Errorf("README.md: no runnable (```sh) example calls %s", name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	must(t, os.Mkdir(bin, 0o755))
	for name := range tools {
		must(t, os.Symlink(self, filepath.Join(bin, name)))
	}
	work := filepath.Join(dir, "pramkit")
	data := filepath.Join(work, "testdata", "adult")
	must(t, os.MkdirAll(data, 0o755))
	csv, err := os.ReadFile(adulttest.WriteCSV(t, adulttest.Load(t, "data")))
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(data, "adult.csv"), csv, 0o644))
	cb, err := os.ReadFile(filepath.Join(root, "testdata", "adult", "codebook.json"))
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(data, "codebook.json"), cb, 0o644))

	// One script: the ERR trap writes the failing line, which lineOf maps
	// back to the README.
	failed := filepath.Join(dir, "failed-line")
	var script strings.Builder
	lineOf := map[int]int{}
	emit := func(s string, readmeLine int) {
		script.WriteString(s + "\n")
		lineOf[strings.Count(script.String(), "\n")] = readmeLine
	}
	emit("set -euo pipefail", 0)
	emit(fmt.Sprintf("trap 'echo $LINENO > %q' ERR", failed), 0)
	for _, b := range blocks {
		emit(fmt.Sprintf(": README.md:%d", b.line), b.line)
		for i, l := range b.lines {
			emit(l, b.line+i)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-c", script.String(), "walkthrough")
	cmd.Dir = work
	cmd.Env = append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+filepath.Join(dir, "home"),
		"XDG_STATE_HOME="+filepath.Join(dir, "state"),
	)
	out, err := cmd.CombinedOutput()
	if err == nil {
		if testing.Verbose() {
			t.Logf("the walkthrough's output:\n%s", out)
		}
		return
	}
	where := "README.md"
	if b, rerr := os.ReadFile(failed); rerr == nil {
		if n, aerr := strconv.Atoi(strings.TrimSpace(string(b))); aerr == nil && lineOf[n] > 0 {
			where = fmt.Sprintf("README.md:%d", lineOf[n])
		}
	}
	tail := string(out)
	if len(tail) > 4000 {
		tail = "…" + tail[len(tail)-4000:]
	}
	t.Fatalf("%s: the walkthrough command here failed (%v); its output, last part:\n%s", where, err, tail)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
