// Package report is the report command: one self-contained HTML page
// about pramkit outputs (package report builds it).
package report

import (
	"bytes"
	"os"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/report"
	"github.com/pramkit/pramkit/pkg/table"
	"github.com/pramkit/pramkit/pkg/version"
)

// Options are the command's flags and arguments.
type Options struct {
	Streams  *cli.Streams
	Files    []string
	Output   string
	Truth    []string
	Queries  string
	Codebook string
	Ledger   string
	Groups   string
	Level    float64
	RelError float64
	TE       float64
}

// NewCmd builds the command; runF replaces the run in flag tests.
func NewCmd(s *cli.Streams, runF func(*Options) error) *cobra.Command {
	opts := &Options{Streams: s}
	cmd := &cobra.Command{
		Use:   "report FILE… [--truth FILE…] [--queries FILE] -o report.html",
		Short: "One self-contained HTML page about releases: what, how private, how accurate",
		Long: `Report writes one HTML page about pramkit outputs, for a data steward to
show what was released, how private it is and how accurate its statistics
are. It reads any of: a sample, an encrypted sample, a γ-diagonal release
(perturb's, still encrypted, or decrypt's), a count table of estimate
--tabulate, a bitflip or DDPS release, and an anonymize publication (A′,
Anatomy, global); one section per FILE.

Every section says what the file is, its mechanism and parameters, the
privacy level in one sentence, composed ε and the release ledger's entries
(--ledger) when there are any, the pramkit version and the codebook hash.
Then, per kind:

  γ-diagonal (decrypted)  the estimated joint and marginal distributions
                          (exact MLE, estimate's default) with Wilson
                          intervals, next to the observed release
                          frequencies (and the truth with --truth); the
                          Theorem III.4 bound and where m sits on the
                          error-versus-m curve, with m*
  perturb's release       the parameters, the bound and the curve (decrypt
                          it for the distributions)
  anonymized              each sensitive value's count, Lemma 4's threshold
                          T_f and Definition 5's guarantee T_P (for
                          --rel-error and --te); with --queries the answers,
                          with the true counts and relative errors when
                          --truth is given
  bitflip                 per-bit estimates with intervals, each column's
                          distribution, ε per bit and per record; A_p from
                          the --truth records (L ≤ 20 bits)
  DDPS                    value counts with their standard deviations and the
                          estimated participants

The page is self-contained: charts are inline SVG, the style sheet is
inline, and nothing (script, font, image) is loaded from anywhere, so it
reads offline and prints to PDF from a browser. Every label is escaped: a
codebook value such as <script> shows as text. The numbers are those of
estimate on the same file.

The output is written atomically, never over an input, and not to a
terminal; a key file is refused as input.`,
		Example: `  # the researcher's decrypted release, next to the original table, with the
  # release ledger's entries for its sample
  $ report sanitized.csv --truth adult.csv --ledger releases.jsonl -o report.html

  # the anonymized table with count queries and the local releases, one page
  $ report adult.l5.csv adult.bitflip.csv occupation.ddps.csv --truth adult.csv \
      --queries queries.csv --codebook codebook.json -o releases.html
  $ ls -s releases.html`,
		Args: cobra.MinimumNArgs(1),
		RunE: cli.RunE(opts, func(c *cobra.Command, args []string) {
			opts.Files = args
		}, runF, run),
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Output, "output", "o", "", "write the HTML page to `FILE` (stdout when absent, unless it is a terminal)")
	f.StringArrayVar(&opts.Truth, "truth", nil, "original table `FILE` to compare with; repeat it for each curator's table (joined by position, each column from the first file that has it)")
	f.StringVar(&opts.Queries, "queries", "", "anonymized releases: count queries `FILE` (estimate --queries' format) to answer")
	f.StringVar(&opts.Codebook, "codebook", "", "--queries: codebook `FILE` of the non-sensitive columns the queries name")
	f.StringVar(&opts.Ledger, "ledger", "", "release ledger `FILE` (perturb --ledger) whose entries for the sample to list")
	f.StringVar(&opts.Groups, "groups", "", "anatomy releases: the sensitive table `FILE` (default: the one named in the metadata, next to the release)")
	f.Float64Var(&opts.Level, "level", 0.95, "coverage `P` of the intervals")
	f.Float64Var(&opts.RelError, "rel-error", 0.2, "anonymized: relative error `E` (the paper's ε) of the guarantees")
	f.Float64Var(&opts.TE, "te", 0.02, "anonymized: probability `T` (the paper's T_E) of the utility guarantee")
	return cli.Root(cmd)
}

// Main runs the command on the process's arguments and returns the exit code.
func Main() int { return cli.Run(NewCmd(cli.StdStreams(), nil), os.Args[1:], cli.StdStreams()) }

func run(o *Options) error {
	if err := cli.CheckProbability("level", o.Level, cli.OpenUnit); err != nil {
		return err
	}
	if err := cli.CheckNumber("rel-error", o.RelError, cli.Positive); err != nil {
		return err
	}
	if err := cli.CheckNumber("te", o.TE, cli.OpenClosedUnit); err != nil {
		return err
	}
	if table.IsStdio(o.Output) && o.Streams.OutIsTerminal {
		return cli.Usagef("refusing to write HTML to a terminal: give -o report.html, or pipe the output")
	}
	if o.Codebook != "" && o.Queries == "" {
		return cli.Usagef("--codebook reads the values of --queries: give --queries FILE too, or leave out --codebook")
	}
	rep, err := report.Build(report.Options{
		Files: o.Files, Truth: o.Truth, Queries: o.Queries, Codebook: o.Codebook, Ledger: o.Ledger, Groups: o.Groups,
		Level: o.Level, RelError: o.RelError, TE: o.TE, Version: version.String(),
	})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := rep.Write(&buf); err != nil {
		return err
	}
	if table.IsStdio(o.Output) {
		_, err := o.Streams.Out.Write(buf.Bytes())
		return err
	}
	inputs := append(append([]string(nil), o.Files...), o.Truth...)
	for _, p := range []string{o.Queries, o.Codebook, o.Ledger, o.Groups} {
		if p != "" {
			inputs = append(inputs, p)
		}
	}
	return table.WriteFile(o.Output, buf.Bytes(), table.WriteOptions{Perm: 0o644, Inputs: inputs})
}
