package pramkit

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/tools"
)

// run calls Dispatch with argv and returns the exit code and the streams.
func run(argv ...string) (code int, out, errOut string) {
	var o, e bytes.Buffer
	code = Dispatch(argv, &cli.Streams{In: strings.NewReader(""), Out: &o, Err: &e})
	return code, o.String(), e.String()
}

// Every tool runs when called by its own name (a link, with or without a
// folder or .exe) and as pramkit's first argument; --version names the
// tool that ran, so the dispatch went to the right one.
func TestDispatchRunsEachTool(t *testing.T) {
	for _, tool := range tools.All {
		want := tool.Name + " (pramkit) "
		for _, argv := range [][]string{
			{tool.Name, "--version"},
			{"/usr/local/bin/" + tool.Name, "--version"},
			{tool.Name + ".exe", "--version"},
			{"pramkit", tool.Name, "--version"},
			{"/opt/bin/pramkit", tool.Name, "--version"},
			// A name that is no tool dispatches on the first argument.
			{"pramkit-1.2", tool.Name, "--version"},
		} {
			code, out, errOut := run(argv...)
			if code != cli.ExitOK || !strings.HasPrefix(out, want) || errOut != "" {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 0 and %q", argv, code, out, errOut, want)
			}
		}
	}
}

// Called by a tool's name, the first argument belongs to the tool: a file
// named like another tool is an input, not a dispatch.
func TestDispatchNameWinsOverFirstArgument(t *testing.T) {
	code, out, errOut := run("decrypt", "sample", "--version")
	if code != cli.ExitOK || !strings.HasPrefix(out, "decrypt (pramkit) ") {
		t.Fatalf("decrypt sample --version: exit %d, stdout %q, stderr %q; want decrypt's version", code, out, errOut)
	}
}

// A tool's usage error keeps the tool's name and exit code under pramkit.
func TestDispatchKeepsToolMessages(t *testing.T) {
	code, _, errOut := run("pramkit", "sample", "-m", "x")
	if code != cli.ExitUsage || !strings.Contains(errOut, "sample: -m \"x\" is not a row count") || !strings.Contains(errOut, "Run 'sample --help'") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestDispatchUnknownTool(t *testing.T) {
	for _, argv := range [][]string{{"pramkit", "nosuch"}, {"pramkit", "--nosuch", "sample"}, {"pramkit", "Sample"}} {
		code, out, errOut := run(argv...)
		if code != cli.ExitUsage || out != "" || strings.Count(errOut, "\n") != 1 ||
			!strings.HasPrefix(errOut, "pramkit: unknown ") || !strings.Contains(errOut, `"`+argv[1]+`"`) ||
			!strings.Contains(errOut, strings.Join(tools.Names(), ", ")) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line naming the tools", argv, code, out, errOut)
		}
	}
}

// listsTools reports whether text has one line per tool with its summary.
func listsTools(t *testing.T, text string) bool {
	t.Helper()
	s := &cli.Streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
	for _, tool := range tools.All {
		if !strings.Contains(text, "  "+tool.Name+" ") || !strings.Contains(text, tool.New(s).Short) {
			t.Logf("%s missing from %q", tool.Name, text)
			return false
		}
	}
	return true
}

func TestDispatchHelpListsTools(t *testing.T) {
	for _, arg := range []string{"help", "--help", "-h"} {
		code, out, errOut := run("pramkit", arg)
		if code != cli.ExitOK || errOut != "" || !listsTools(t, out) {
			t.Errorf("pramkit %s: exit %d, stderr %q", arg, code, errOut)
		}
	}
	// No arguments: the same list on stderr, and a usage error.
	code, out, errOut := run("pramkit")
	if code != cli.ExitUsage || out != "" || !listsTools(t, errOut) {
		t.Errorf("pramkit: exit %d, stdout %q", code, out)
	}
	// help <tool> is the tool's --help.
	code, out, _ = run("pramkit", "help", "perturb")
	if code != cli.ExitOK || !strings.Contains(out, "Usage:\n  perturb") {
		t.Errorf("pramkit help perturb: exit %d, stdout %q", code, out)
	}
	if code, _, errOut := run("pramkit", "help", "nosuch"); code != cli.ExitUsage || strings.Count(errOut, "\n") != 1 {
		t.Errorf("pramkit help nosuch: exit %d, stderr %q", code, errOut)
	}
}

func TestDispatchVersionListsTools(t *testing.T) {
	code, out, errOut := run("pramkit", "--version")
	want := "tools: " + strings.Join(tools.Names(), ", ") + "\n"
	if code != cli.ExitOK || errOut != "" || !strings.HasPrefix(out, "pramkit ") || !strings.HasSuffix(out, want) {
		t.Fatalf("pramkit --version: exit %d, stdout %q, stderr %q; want a line ending %q", code, out, errOut, want)
	}
	if code, _, _ := run("pramkit", "--version", "x"); code != cli.ExitUsage {
		t.Errorf("pramkit --version x: exit %d, want 2", code)
	}
}

// The completion scripts register pramkit and every tool's own name.
func TestCompletion(t *testing.T) {
	names := strings.Join(tools.Names(), " ")
	for shell, want := range map[string]string{
		"bash": "complete -o default -F __start_pramkit " + names + "\n",
		"zsh":  "#compdef pramkit " + names + "\n",
		"fish": "for tool in " + names + "\n",
	} {
		code, out, errOut := run("pramkit", "completion", shell)
		if code != cli.ExitOK || errOut != "" || !strings.Contains(out, want) || !strings.Contains(out, "__complete") {
			t.Errorf("completion %s: exit %d, stderr %q, no %q", shell, code, errOut, want)
		}
	}
	for _, argv := range [][]string{{"pramkit", "completion"}, {"pramkit", "completion", "tcsh"}, {"pramkit", "completion", "bash", "zsh"}} {
		if code, _, errOut := run(argv...); code != cli.ExitUsage || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q", argv, code, errOut)
		}
	}
	// The scripts call back `<word> __complete …`; both pramkit and a tool
	// answer.
	for _, argv := range [][]string{{"pramkit", "__complete", "sample", "--fra"}, {"sample", "__complete", "--fra"}} {
		if code, out, _ := run(argv...); code != cli.ExitOK || !strings.HasPrefix(out, "--fraction") {
			t.Errorf("%q: exit %d, stdout %q", argv, code, out)
		}
	}
}
