// Package pramkit is the multi-call binary: one executable holding every
// tool, so an install is one ~55 MB file (each tool links Arrow's Parquet
// stack; six separate binaries took 333 MB) plus links named after the
// tools. Like busybox, it dispatches on the name it was called by (a link
// named sample runs sample) and otherwise on its first argument
// (pramkit sample …). The tools come from the one table in pkg/cmd/tools.
package pramkit

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/tools"
	"github.com/pramkit/pramkit/pkg/version"
)

// Name is the binary's own name.
const Name = "pramkit"

// Main runs the process's command line and returns the exit code.
func Main() int { return Dispatch(os.Args, cli.StdStreams()) }

// Dispatch runs argv (argv[0] is the name the program was called by) and
// returns the exit code.
func Dispatch(argv []string, s *cli.Streams) int {
	called := ""
	if len(argv) > 0 {
		called = strings.TrimSuffix(filepath.Base(argv[0]), ".exe")
		argv = argv[1:]
	}
	if t, ok := tools.Lookup(called); ok {
		return cli.Run(t.New(s), argv, s)
	}
	if len(argv) == 0 {
		usage(s.Err)
		return cli.ExitUsage
	}
	switch arg := argv[0]; arg {
	case "help", "-h", "--help":
		if len(argv) == 1 {
			usage(s.Out)
			return cli.ExitOK
		}
		t, ok := tools.Lookup(argv[1])
		if !ok || len(argv) > 2 {
			return usageError(s, fmt.Sprintf("help takes one tool name (%s), got %q", strings.Join(tools.Names(), ", "), strings.Join(argv[1:], " ")))
		}
		return cli.Run(t.New(s), []string{"--help"}, s)
	case "-v", "--version", "version":
		if len(argv) > 1 {
			return usageError(s, fmt.Sprintf("%s takes no arguments", arg))
		}
		fmt.Fprintf(s.Out, "%s %s\ntools: %s\n", Name, version.String(), strings.Join(tools.Names(), ", "))
		return cli.ExitOK
	case "completion":
		return completion(argv[1:], s)
	case "__complete", "__completeNoDesc":
		// The completion scripts call back `pramkit __complete <tool> …`:
		// cobra answers from the tree of all the tools' commands.
		return cli.Run(Command(s), argv, s)
	}
	t, ok := tools.Lookup(argv[0])
	if !ok && strings.HasPrefix(argv[0], "-") {
		return usageError(s, fmt.Sprintf("unknown flag %q: the tool comes first, as in '%s sample --help'; the tools are %s", argv[0], Name, strings.Join(tools.Names(), ", ")))
	}
	if !ok {
		return usageError(s, fmt.Sprintf("unknown tool %q; the tools are %s (run '%s help')", argv[0], strings.Join(tools.Names(), ", "), Name))
	}
	return cli.Run(t.New(s), argv[1:], s)
}

// usageError prints "pramkit: msg" on one line and returns ExitUsage.
func usageError(s *cli.Streams, msg string) int {
	fmt.Fprintf(s.Err, "%s: %s\n", Name, msg)
	return cli.ExitUsage
}

// usage writes the list of tools and how to run them.
func usage(w io.Writer) {
	fmt.Fprintf(w, "%s — private release of statistics from census-like tables (version %s)\n\n", Name, version.String())
	fmt.Fprintf(w, "Usage:\n  %s <tool> [flags] [files]    or call the tool by its name: sample [flags] [files]\n\nTools:\n", Name)
	s := &cli.Streams{Out: io.Discard, Err: io.Discard}
	for _, t := range tools.All {
		fmt.Fprintf(w, "  %-10s %s\n", t.Name, t.New(s).Short)
	}
	fmt.Fprintf(w, "\nOther commands:\n")
	fmt.Fprintf(w, "  %s help [<tool>]                this list, or a tool's --help\n", Name)
	fmt.Fprintf(w, "  %s completion bash|zsh|fish     a shell completion script for %s and the tools\n", Name, Name)
	fmt.Fprintf(w, "  %s --version                    the version and the tools\n", Name)
	fmt.Fprintf(w, "\nRun '%s <tool> --help' for a tool's flags and examples.\n", Name)
}

// Command returns a cobra tree with pramkit at the root and every tool
// below it. It exists for generated text (completion scripts, man pages);
// the tools themselves run as their own root commands, as they do when
// installed separately, so messages and exit codes do not depend on how
// a tool was called.
func Command(s *cli.Streams) *cobra.Command {
	root := &cobra.Command{
		Use:     Name + " TOOL [flags] [files]",
		Short:   "Private release of statistics from census-like tables",
		Long:    "pramkit holds the tools sample, encrypt, perturb, decrypt, estimate and anonymize in one binary. Call a tool as 'pramkit TOOL' or by its own name (bin/sample is a link to bin/pramkit).",
		Version: version.String(),
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	for _, t := range tools.All {
		root.AddCommand(t.New(s))
	}
	return root
}

// completion writes cobra's completion script for shell. The script
// completes pramkit <tool> and, registered for the same function, each
// tool's own name: the scripts ask the word being completed
// (`sample __complete …`), and a tool answers that itself.
func completion(args []string, s *cli.Streams) int {
	if len(args) != 1 {
		return usageError(s, "completion takes one shell: bash, zsh or fish")
	}
	root := Command(s)
	names := strings.Join(tools.Names(), " ")
	var err error
	switch args[0] {
	case "bash":
		if err = root.GenBashCompletionV2(s.Out, true); err == nil {
			_, err = fmt.Fprintf(s.Out, "\n# The tools' own names (links to %[1]s) complete the same way.\nif [[ $(type -t compopt) = \"builtin\" ]]; then\n    complete -o default -F __start_%[1]s %[2]s\nelse\n    complete -o default -o nospace -F __start_%[1]s %[2]s\nfi\n", Name, names)
		}
	case "zsh":
		// The first two lines name the commands the script completes, for
		// zsh's fpath (#compdef) and for `source` (compdef).
		var b strings.Builder
		if err = root.GenZshCompletion(&b); err == nil {
			script := strings.Replace(b.String(), "#compdef "+Name+"\ncompdef _"+Name+" "+Name+"\n",
				"#compdef "+Name+" "+names+"\ncompdef _"+Name+" "+Name+" "+names+"\n", 1)
			_, err = io.WriteString(s.Out, script)
		}
	case "fish":
		if err = root.GenFishCompletion(s.Out, true); err == nil {
			_, err = fmt.Fprintf(s.Out, "\n# The tools' own names (links to %[1]s) complete the same way.\nfor tool in %[2]s\n    complete -c $tool -e\n    complete -c $tool -n '__%[1]s_prepare_completions' -f -a '$__%[1]s_comp_results'\nend\n", Name, names)
		}
	default:
		return usageError(s, fmt.Sprintf("completion: unknown shell %q; give bash, zsh or fish", args[0]))
	}
	if err != nil {
		fmt.Fprintf(s.Err, "%s: completion: %v\n", Name, err)
		return cli.ExitFailure
	}
	return cli.ExitOK
}
