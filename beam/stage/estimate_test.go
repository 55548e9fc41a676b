package stage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"

	"github.com/pramkit/pramkit/beam/internal/beamtest"
	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cli"
	estimatecmd "github.com/pramkit/pramkit/pkg/cmd/estimate"
)

// TestEstimateOnPrismMatchesTheCLI: an Adult release split into shards
// (Parquet, and CSV), counted on Prism, gives byte for
// byte the table (and summary) that the estimate tool writes from the
// whole release, for each estimator; the count table is estimate
// --tabulate's.
func TestEstimateOnPrismMatchesTheCLI(t *testing.T) {
	rel, dir := beamtest.AdultRelease(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	beamtest.Split(t, rel, f("shard-0.parquet"), f("shard-1.parquet"), f("shard-2.parquet"))
	beamtest.Split(t, rel, f("part-0.csv"), f("part-1.csv"))
	est := beamtest.Tool(estimatecmd.NewCmd)
	for _, tc := range []struct {
		glob string
		args []string
	}{
		{"shard-*.parquet", nil},
		{"shard-*.parquet", []string{"--method", "inverse"}},
		{"part-*.csv", []string{"--method", "projected", "--marginal", "education"}},
		{"part-*.csv", []string{"--json"}},
	} {
		name := strings.Join(append([]string{tc.glob}, tc.args...), " ")
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			wantOut := beamtest.MustRun(t, est, append(append([]string{}, tc.args...), rel, "-o", filepath.Join(out, "want.csv"))...)
			var stdout, stderr strings.Builder
			err := Estimate(context.Background(), Config{
				Input: f(tc.glob), Output: filepath.Join(out, "beam"), Runner: "prism", Args: tc.args,
				Streams: &cli.Streams{Out: &stdout, Err: &stderr},
			})
			if err != nil {
				t.Fatalf("%v: %s", err, stderr.String())
			}
			if stdout.String() != wantOut {
				t.Errorf("stdout:\n%s\nthe CLI printed\n%s", stdout.String(), wantOut)
			}
			_, got, gotMeta := cmdtest.ReadTable(t, filepath.Join(out, "beam.csv"))
			_, want, wantMeta := cmdtest.ReadTable(t, filepath.Join(out, "want.csv"))
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("estimate table differs from the CLI's:\n%v\nwant\n%v", got, want)
			}
			if fmt.Sprint(gotMeta) != fmt.Sprint(wantMeta) {
				t.Errorf("metadata differs:\n%v\nwant\n%v", gotMeta, wantMeta)
			}
			beamtest.MustRun(t, est, "--tabulate", rel, "-o", filepath.Join(out, "tab.csv"))
			_, tab, _ := cmdtest.ReadTable(t, filepath.Join(out, "tab.csv"))
			_, counts, _ := cmdtest.ReadTable(t, filepath.Join(out, "beam.counts.csv"))
			if len(tab) != len(counts) || len(tab) < 20 {
				t.Errorf("count table has %d rows, estimate --tabulate %d", len(counts), len(tab))
			}
		})
	}
}

// TestEstimateRefusesShardsOfDifferentReleases: a shard with other metadata
// fails the pipeline, naming the file.
func TestEstimateRefusesShardsOfDifferentReleases(t *testing.T) {
	rel, dir := beamtest.AdultRelease(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	beamtest.Split(t, rel, f("shard-0.csv"), f("shard-1.csv"))
	cols, rows, meta := cmdtest.ReadTable(t, f("shard-1.csv"))
	meta["gamma"] = "3"
	beamtest.WriteRows(t, f("shard-1.csv"), cols, meta, 0, rows)
	var stderr strings.Builder
	err := Estimate(context.Background(), Config{Input: f("shard-*.csv"), Output: f("out"), Runner: "prism", Streams: &cli.Streams{Out: &stderr, Err: &stderr}})
	if err == nil || !strings.Contains(err.Error(), "shard-1.csv") || !strings.Contains(err.Error(), "metadata differs") {
		t.Fatalf("got %v", err)
	}
	if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), f("shard-1.csv")+": ") {
		t.Errorf("the error is not the DoFn's one line: %q", err)
	}
	if _, err := os.Stat(f("out.csv")); err == nil {
		t.Error("an estimate was written")
	}
	before, _ := os.ReadFile(f("shard-0.csv"))
	err = Estimate(context.Background(), Config{Input: f("shard-*.csv"), Output: f("shard-0"), Runner: "prism", Streams: &cli.Streams{Out: &stderr, Err: &stderr}})
	if err == nil || !strings.Contains(err.Error(), "would write over the input") {
		t.Errorf("--output over an input: got %v", err)
	}
	if after, _ := os.ReadFile(f("shard-0.csv")); string(after) != string(before) {
		t.Error("the input was overwritten")
	}
}
