// Package cli holds what every pramkit command shares: the streams it talks
// to, the common flags (-o, --output-format, --seed, --version), the single
// place where errors become exit codes, and the tool-name prefix on
// messages.
package cli

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pramkit/pramkit/pkg/progress"
	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/version"
)

// Exit codes, the same for every tool.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // bad data, a failed check, an I/O error
	ExitUsage   = 2 // bad flags or arguments
)

// Streams are the standard streams a command uses; tests replace them.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// ErrIsTerminal turns progress reports on.
	ErrIsTerminal bool
	// OutIsTerminal makes binary output to stdout an error.
	OutIsTerminal bool
}

// StdStreams returns the process's standard streams.
func StdStreams() *Streams {
	return &Streams{
		In:            os.Stdin,
		Out:           os.Stdout,
		Err:           os.Stderr,
		ErrIsTerminal: term.IsTerminal(int(os.Stderr.Fd())),
		OutIsTerminal: term.IsTerminal(int(os.Stdout.Fd())),
	}
}

// Progress returns a meter for label that draws only on a terminal.
func (s *Streams) Progress(label string) *progress.Meter {
	return progress.New(s.Err, s.ErrIsTerminal, label)
}

// Warnf prints a warning line on stderr, prefixed with the tool name.
func (s *Streams) Warnf(tool, format string, args ...any) {
	fmt.Fprintf(s.Err, "%s: warning: %s\n", tool, fmt.Sprintf(format, args...))
}

// UsageError is a mistake in the command line; it exits with ExitUsage.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

// ExitCode maps an error to the tool's exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ue *UsageError
	if errors.As(err, &ue) {
		return ExitUsage
	}
	return ExitFailure
}

// Run executes cmd with args and returns the exit code. It is the one place
// where errors are printed: "<tool>: <message>" on one line of stderr, and,
// for flag errors only, a pointer to --help. A panic (a bug) is reported the
// same way, as an internal error with exit code 1: Go's own exit code for a
// panic, 2, would read as a usage error.
func Run(cmd *cobra.Command, args []string, s *Streams) (code int) {
	defer func() {
		if r := recover(); r != nil {
			msg := strings.ReplaceAll(fmt.Sprint(r), "\n", " ")
			fmt.Fprintf(s.Err, "%s: internal error: %s%s; please report this bug\n", cmd.Name(), msg, panicSite())
			code = ExitFailure
		}
	}()
	AdviseHugePages()
	ReleaseInitPages()
	SoftMemoryLimit()
	cmd.SetArgs(args)
	cmd.SetIn(s.In)
	cmd.SetOut(s.Out)
	cmd.SetErr(s.Err)
	cmd.SilenceErrors = true
	cmd.SilenceUsage = true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{err} })
	stop := handleSignals()
	err := cmd.Execute()
	stop()
	if err == nil {
		return ExitOK
	}
	if isBrokenPipe(err) {
		// The reader of the output went away (… | head): not a failure
		// worth a message; the partial outputs are already removed.
		return ExitFailure
	}
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	fmt.Fprintf(s.Err, "%s: %s\n", cmd.Name(), msg)
	code = ExitCode(err)
	if code == ExitUsage {
		fmt.Fprintf(s.Err, "Run '%s --help' for usage.\n", cmd.Name())
	}
	return code
}

// panicSite is " at file:line" of the function that panicked, called from
// Run's deferred recover.
func panicSite() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "runtime.") {
			return fmt.Sprintf(" at %s:%d", filepath.Base(f.File), f.Line)
		}
		if !more {
			return ""
		}
	}
}

// Root fills the settings every pramkit command shares: version, arguments
// checked as usage errors, help that shows examples.
func Root(cmd *cobra.Command) *cobra.Command {
	cmd.Version = version.String()
	cmd.SetVersionTemplate("{{.Name}} (pramkit) {{.Version}}\n")
	cmd.CompletionOptions.DisableDefaultCmd = true
	if cmd.Args != nil {
		check := cmd.Args
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return &UsageError{err}
			}
			return nil
		}
	}
	return cmd
}

// Output holds the flags that choose where a table goes.
type Output struct {
	Path   string // -o/--output; "" or "-" is stdout
	Format string // --output-format
	Flag   string // the flag that gave Path, for messages; "" means -o
}

// AddOutputFlags registers -o and --output-format.
func AddOutputFlags(cmd *cobra.Command, o *Output) {
	cmd.Flags().StringVarP(&o.Path, "output", "o", "", "write the table to `FILE` (format from its extension: .csv, .parquet, .arrow); stdout when absent")
	cmd.Flags().StringVar(&o.Format, "output-format", "", "output `FORMAT`: csv, parquet or arrow (default: from -o's extension, else the input's format)")
}

// Seed holds --seed, and --insecure-seed on commands whose randomness
// protects privacy.
type Seed struct {
	Value    uint64
	Set      bool
	Insecure bool // --insecure-seed
}

// AddSeedFlag registers --seed with help that says what it is for.
func AddSeedFlag(cmd *cobra.Command, s *Seed) {
	cmd.Flags().Uint64Var(&s.Value, "seed", 0, "make the run reproducible with seed `N`: FOR TESTS AND EXPERIMENTS ONLY, since anyone who knows N can undo the randomness (default: crypto/rand)")
}

// Rand returns the run's random source: seeded when --seed was given (and,
// on a command with --insecure-seed, that flag too), crypto-seeded ChaCha8
// otherwise.
func (s *Seed) Rand(cmd *cobra.Command) *rand.Rand {
	s.Set = cmd.Flags().Changed("seed")
	guarded := cmd.Flags().Lookup("insecure-seed") != nil
	return rng.FromFlag(s.Value, s.Set && (s.Insecure || !guarded))
}

// Inputs returns the input files of a command that reads one table or stdin.
func Inputs(args []string) []string {
	if len(args) == 0 {
		return []string{"-"}
	}
	return args
}

// RunE builds a command's RunE: bind records the command and its arguments
// in the options, then runF runs (a stub, in flag-parsing tests) or, when
// runF is nil, run does the work.
func RunE[O any](opts *O, bind func(c *cobra.Command, args []string), runF, run func(*O) error) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		bind(c, args)
		if runF != nil {
			return runF(opts)
		}
		return run(opts)
	}
}

// FirstArg is the input file of a command that takes at most one ("" for
// standard input).
func FirstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
