package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/pramkit/pramkit/pkg/table"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// options are the command-line settings.
type options struct {
	data, codebook, out string
	seed                uint64
	runs                int // releases per point, error_vs_m and error_vs_epsilon
	perOctave           int // sample sizes per doubling of m, error_vs_m
	predicates          int // random predicates of the count-query pool
	releases            int // publications per ℓ′ and mechanism
	workers             int
	quick               bool
	replot              bool // redraw from the CSVs in out, measure nothing
}

// run parses args, makes the figures and returns the exit code: 0 done,
// 1 failure, 2 usage error. The summary goes to stdout (and summary.txt),
// progress to stderr.
func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("figures", flag.ContinueOnError)
	flags.SetOutput(stderr)
	var o options
	flags.StringVar(&o.data, "data", filepath.Join("testdata", "adult", "adult.csv"), "UCI Adult table (CSV from scripts/fetch-adult.sh, or Parquet)")
	flags.StringVar(&o.codebook, "codebook", filepath.Join("testdata", "adult", "codebook.json"), "codebook of Adult's columns")
	flags.StringVar(&o.out, "out", filepath.Join("out", "figures"), "folder for the SVG, PNG and CSV files")
	flags.Uint64Var(&o.seed, "seed", 1, "seed of every random draw (experiments only)")
	flags.IntVar(&o.runs, "runs", 100, "releases per point of error_vs_m and error_vs_epsilon")
	flags.IntVar(&o.perOctave, "per-octave", 2, "sample sizes per doubling of m in error_vs_m")
	flags.IntVar(&o.predicates, "predicates", 1500, "random predicates in the count-query pool (each × every occupation)")
	flags.IntVar(&o.releases, "releases", 3, "publications per ℓ′ and mechanism in anonymize_error_vs_l")
	flags.IntVar(&o.workers, "workers", runtime.GOMAXPROCS(0), "parallel workers")
	flags.BoolVar(&o.quick, "quick", false, "smoke run: 5 releases per point, 1 size per doubling, 300 predicates, 1 publication")
	flags.BoolVar(&o.replot, "replot", false, "only redraw the SVG and PNG of every figure from its CSV in -out (after a change of the chart code)")
	flags.Usage = func() {
		fmt.Fprintf(stderr, "usage: figures [flags]\n\nRecomputes the papers' experiments on UCI Adult and writes SVG + PNG + CSV per figure.\n\n")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "figures: unexpected arguments %q\n", flags.Args())
		return 2
	}
	if o.quick {
		o.runs, o.perOctave, o.predicates, o.releases = 5, 1, 300, 1
	}
	for name, v := range map[string]int{"-runs": o.runs, "-per-octave": o.perOctave, "-predicates": o.predicates, "-releases": o.releases, "-workers": o.workers} {
		if v < 1 {
			fmt.Fprintf(stderr, "figures: %s must be ≥ 1, got %d\n", name, v)
			return 2
		}
	}
	if o.replot {
		for _, f := range figures {
			if err := drawFigure(o.out, f); err != nil {
				fmt.Fprintf(stderr, "figures: %v\n", err)
				return 1
			}
		}
		return 0
	}
	summary, err := makeFigures(o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "figures: %v\n", err)
		return 1
	}
	fmt.Fprint(stdout, summary)
	return 0
}

// makeFigures loads Adult, computes and writes the three figures, and
// returns the summary it also writes to summary.txt.
func makeFigures(o options, progress io.Writer) (string, error) {
	start := time.Now()
	cols := append([]string{"education", "income", sensitiveAttr}, predicateAttrs...)
	if _, err := os.Stat(o.data); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s not found: run scripts/fetch-adult.sh first (make figures does), or give -data", o.data)
	}
	a, err := loadAdult(o.data, o.codebook, dedupe(cols))
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return "", fmt.Errorf("makeFigures: %w", err)
	}
	var sum strings.Builder
	fmt.Fprintf(&sum, "Adult: %s, n = %d rows; seed %d\n", o.data, a.n, o.seed)
	for _, f := range []struct {
		name string
		make func(*adult, options, io.Writer) (string, error)
	}{
		{"error_vs_m", errorVsM},
		{"error_vs_epsilon", errorVsEpsilon},
		{"anonymize_error_vs_l", anonymizeErrorVsL},
	} {
		t := time.Now()
		s, err := f.make(a, o, &sum)
		if err != nil {
			return "", fmt.Errorf("%s: %w", f.name, err)
		}
		fmt.Fprintf(progress, "figures: %s (%.1f s)\n", s, time.Since(t).Seconds())
	}
	fmt.Fprintf(&sum, "total %.1f s on %d workers\n", time.Since(start).Seconds(), o.workers)
	if err := table.WriteFileAtomic(filepath.Join(o.out, "summary.txt"), []byte(sum.String()), 0o644, nil); err != nil {
		return "", err
	}
	return sum.String(), nil
}

func dedupe(names []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// parallel calls f(worker, k) for k = 0 … count−1 on workers goroutines;
// worker < workers identifies per-worker buffers. It returns the first
// error (the remaining calls still run).
func parallel(count, workers int, f func(worker, k int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan int)
	for w := range min(workers, count) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				if err := f(w, k); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for k := range count {
		next <- k
	}
	close(next)
	wg.Wait()
	return first
}

// writeCSV writes a header and rows to path through a temporary file.
func writeCSV(path string, header []string, rows [][]string) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write(header)
	_ = w.WriteAll(rows)
	if err := w.Error(); err != nil {
		return fmt.Errorf("writeCSV %s: %w", path, err)
	}
	if err := table.WriteFileAtomic(path, buf.Bytes(), 0o644, nil); err != nil {
		return fmt.Errorf("writeCSV: %w", err)
	}
	return nil
}
