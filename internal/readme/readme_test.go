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
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/tools"
)

// The test binary is also the tools (pkg/cmd/tools): TestMain runs a tool
// when the binary is called by its name (a link in the walkthrough's bin
// folder), as a multi-call binary does, so the walkthrough needs no
// `go build` of Arrow-linked programs.
func TestMain(m *testing.M) {
	if tool, ok := tools.Lookup(filepath.Base(os.Args[0])); ok {
		os.Exit(tool.Main())
	}
	os.Exit(m.Run())
}

// block is one runnable fenced block of the README.
type block struct {
	line    int    // README line of its first command
	section string // first word of the "## " heading it is under
	first   bool   // the section's first runnable block
	lines   []string
}

// runnable returns the README's ```sh blocks in order. Any other fence
// (```, ```json, ```console) is documentation only.
func runnable(text string) ([]block, error) {
	var out []block
	var cur *block
	section, first := "", false
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(line, "## "):
			section, first = strings.Fields(line)[1], true
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			if strings.TrimSpace(strings.TrimPrefix(trimmed, "```")) == "sh" {
				cur = &block{line: n + 1, section: section, first: first}
				first = false
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
	for _, name := range []string{"sample", "encrypt", "perturb", "decrypt", "estimate", "anonymize", "report"} {
		if !regexp.MustCompile(`(?m)(^|[|;&(]|&&)\s*` + name + `\b`).MatchString(all) {
			t.Errorf("README.md: no runnable (```sh) example calls %s", name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	dir := t.TempDir()
	bin := toolBin(t)
	work := filepath.Join(dir, "pramkit")
	data := filepath.Join(work, "testdata", "adult")
	must(t, os.MkdirAll(data, 0o755))
	must(t, os.Rename(adultCSV(t), filepath.Join(data, "adult.csv")))
	cb, err := os.ReadFile(filepath.Join(root, "testdata", "adult", "codebook.json"))
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(data, "codebook.json"), cb, 0o644))

	// Where a tool's section begins, the session's folder is copied: that
	// tool's --help examples continue the walkthrough from there (estimate's,
	// which also query the anonymized and local releases, from its end).
	snaps := filepath.Join(dir, "snap")
	must(t, os.Mkdir(snaps, 0o755))
	var sess session
	for _, b := range blocks {
		if _, ok := tools.Lookup(b.section); ok && b.first && b.section != "estimate" {
			sess.add(fmt.Sprintf("cp -a . %q", filepath.Join(snaps, b.section)), "")
		}
		for i, l := range b.lines {
			sess.add(l, fmt.Sprintf("README.md:%d", b.line+i))
		}
	}
	sess.add(fmt.Sprintf("cp -a . %q", filepath.Join(snaps, "estimate")), "")
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + filepath.Join(dir, "home")}
	sess.run(t, bash, work, append(env, "XDG_STATE_HOME="+filepath.Join(dir, "state")), "the walkthrough")
	if t.Failed() {
		return
	}

	// The --help examples: each "$ " line (and its "\" continuations) is a
	// command; other lines are comments or printed output.
	for _, name := range []string{"sample", "encrypt", "perturb", "decrypt", "estimate", "anonymize", "report"} {
		t.Run("help-"+name, func(t *testing.T) {
			folder := filepath.Join(snaps, name)
			if _, err := os.Stat(folder); err != nil {
				t.Fatalf("README.md: no section \"## %s\" with a runnable block to start %s's --help examples from", name, name)
			}
			var sess session
			cont := false
			for i, l := range strings.Split(helpExamples(name), "\n") {
				l = strings.TrimSpace(l)
				where := fmt.Sprintf("%s --help, example line %d", name, i+1)
				switch {
				case cont:
					sess.add(l, where)
				case strings.HasPrefix(l, "$ "):
					sess.add(strings.TrimPrefix(l, "$ "), where)
				default:
					continue
				}
				cont = strings.HasSuffix(l, "\\")
			}
			if len(sess.lines) == 0 {
				t.Fatalf("%s --help has no example", name)
			}
			sess.run(t, bash, folder, append(env, "XDG_STATE_HOME="+filepath.Join(folder, ".state")), name+"'s --help examples")
		})
	}
}

// TestDemo runs scripts/demo.sh (make demo) with its output going to a
// pipe, as into a log file: it must succeed, print no terminal escape
// codes, describe the default estimator as it is, and print no note twice.
func TestDemo(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	dir := t.TempDir()
	var sess session
	sess.add("bash scripts/demo.sh", "scripts/demo.sh")
	out := sess.run(t, bash, adulttest.RepoRoot(t), []string{
		"PRAMKIT_BIN=" + toolBin(t),
		"DEMO_OUT=" + filepath.Join(dir, "demo"),
		"ADULT_CSV=" + adultCSV(t),
		"HOME=" + filepath.Join(dir, "home"),
		"XDG_STATE_HOME=" + filepath.Join(dir, "state"),
	}, "make demo")
	if t.Failed() {
		return
	}
	if i := strings.IndexByte(out, 0x1b); i >= 0 {
		t.Errorf("the demo's log holds a terminal escape code: %q", out[max(0, i-20):min(len(out), i+40)])
	}
	if strings.Contains(out, "by EM") {
		t.Error("the demo says the default estimator is EM; it is the exact maximum likelihood in closed form")
	}
	seen := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "anonymize: ") {
			if seen[l] {
				t.Errorf("the demo prints this note twice: %s", l)
			}
			seen[l] = true
		}
	}
}

// TestMillerRecipe runs the README's Miller recipe for reading CSV that
// starts with a #pramkit line (sample's standard output) with the
// installed mlr. Miller 6.6 (Debian) fails on --icsv --skip-comments and
// reads it with --icsvlite.
func TestMillerRecipe(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(adulttest.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	recipes := regexp.MustCompile("`(mlr --[^`]+)`").FindAllStringSubmatch(string(readme), -1)
	if len(recipes) == 0 {
		t.Fatal("README.md: no Miller recipe (`mlr --…`) for CSV with a #pramkit line")
	}
	mlr, err := exec.LookPath("mlr")
	if err != nil {
		t.Skip("mlr not installed (apt-get install miller)")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	dir := t.TempDir()
	csv := filepath.Join(dir, "in.csv")
	must(t, os.WriteFile(csv, []byte("sex,income\nF,>50K\nM,<=50K\nF,<=50K\n"), 0o644))
	for _, r := range recipes {
		cmd := exec.Command(bash, "-c", "set -euo pipefail; sample --fraction 1 in.csv 2>/dev/null | "+r[1]+" --ojson cat")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+toolBin(t)+string(os.PathListSeparator)+filepath.Dir(mlr)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"income": "<=50K"`) {
			t.Errorf("README.md: the recipe %q does not read sample's output with the installed mlr (%v):\n%s", r[1], err, out)
		}
	}
}

// toolBin returns a folder of links named after the tools, to this test
// binary (TestMain runs the tool a link is named after).
func toolBin(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, name := range tools.Names() {
		must(t, os.Symlink(self, filepath.Join(bin, name)))
	}
	return bin
}

// adultCSV writes Adult's training data as scripts/fetch-adult.sh derives
// adult.csv, and returns its path.
func adultCSV(t *testing.T) string {
	t.Helper()
	return adulttest.WriteCSV(t, adulttest.Load(t, "data"))
}

// session is a shell script built line by line, each line labelled with
// where it comes from.
type session struct {
	lines []string
	where []string
}

func (s *session) add(line, where string) {
	s.lines = append(s.lines, line)
	s.where = append(s.where, where)
}

// run runs the session in dir under bash -euo pipefail, with env added to
// the environment. On failure it names the source of the failing command
// (its ERR trap records the line) and shows the end of the output.
func (s *session) run(t *testing.T, bash, dir string, env []string, what string) string {
	t.Helper()
	failed := filepath.Join(t.TempDir(), "failed-line")
	const head = 2 // lines before the session's first
	script := fmt.Sprintf("set -euo pipefail\ntrap 'echo $LINENO > %q' ERR\n", failed) + strings.Join(s.lines, "\n") + "\n"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-c", script, "walkthrough")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		if testing.Verbose() {
			t.Logf("%s, output:\n%s", what, out)
		}
		return string(out)
	}
	where := what
	if b, rerr := os.ReadFile(failed); rerr == nil {
		if n, aerr := strconv.Atoi(strings.TrimSpace(string(b))); aerr == nil && n > head && n-head <= len(s.where) && s.where[n-head-1] != "" {
			where = s.where[n-head-1]
		}
	}
	tail := string(out)
	if len(tail) > 4000 {
		tail = "…" + tail[len(tail)-4000:]
	}
	t.Errorf("%s: this command of %s failed (%v); the output, last part:\n%s", where, what, err, tail)
	return string(out)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// helpExamples is the Example text of a tool's --help.
func helpExamples(name string) string {
	tool, ok := tools.Lookup(name)
	if !ok {
		panic("no tool " + name)
	}
	return tool.New(cli.StdStreams()).Example
}
