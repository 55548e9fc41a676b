package stage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"

	"github.com/pramkit/pramkit/internal/adulttest"
	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/decrypt"
	"github.com/pramkit/pramkit/pkg/cmd/encrypt"
	estimatecmd "github.com/pramkit/pramkit/pkg/cmd/estimate"
	"github.com/pramkit/pramkit/pkg/cmd/perturb"
	"github.com/pramkit/pramkit/pkg/cmd/sample"
	"github.com/pramkit/pramkit/pkg/table"
)

// mainRoot is the main module's folder (beam/..); ADULT_DIR is pointed at
// the Adult data next to it when unset, since adulttest searches from the
// nearest go.mod, beam's own.
func mainRoot(t *testing.T) string {
	t.Helper()
	root := filepath.Dir(adulttest.RepoRoot(t))
	if os.Getenv("ADULT_DIR") == "" {
		for _, d := range []string{filepath.Join(root, "testdata", "adult"), filepath.Join(root, "..", "shared", "adult")} {
			if _, err := os.Stat(filepath.Join(d, "adult.data")); err == nil {
				t.Setenv("ADULT_DIR", d)
				break
			}
		}
	}
	return root
}

func tool[O any](f func(*cli.Streams, func(*O) error) *cobra.Command) func(*cli.Streams) *cobra.Command {
	return func(s *cli.Streams) *cobra.Command { return f(s, nil) }
}

func mustRun(t *testing.T, build func(*cli.Streams) *cobra.Command, args ...string) string {
	t.Helper()
	r := cmdtest.Run(build, nil, args...)
	if r.Code != 0 {
		t.Fatalf("%v: exit %d: %s", args, r.Code, r.Stderr)
	}
	return r.Stdout
}

// adultRelease runs the release pipeline of SPEC §1 on Adult through the
// real commands (Alice holds education, Bob income; m = 5000, ε = 1) and
// returns the decrypted release (Arrow) and its folder.
func adultRelease(t *testing.T) (string, string) {
	t.Helper()
	root := mainRoot(t)
	rows := adulttest.Load(t, "data")
	dir := t.TempDir()
	f := func(name string) string { return filepath.Join(dir, name) }
	schema := table.StringSchema([]string{"id", "education", "income"})
	w, err := table.Create(f("adult.arrow"), schema, nil, table.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bb := table.NewBatchBuilder(schema)
	for i, r := range rows {
		bb.AppendStrings([]string{fmt.Sprint("p", i), r[3], r[14]})
	}
	rec := bb.NewBatch()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	bb.Release()
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	cb := filepath.Join(root, "testdata", "adult", "codebook.json")
	smp := tool(sample.NewCmd)
	mustRun(t, smp, "--new-secret", f("shared.secret"), "--seed", "7", "--insecure-seed")
	for _, c := range []string{"education", "income"} {
		mustRun(t, smp, "--secret", f("shared.secret"), "-m", "5000", "--id", "id", "--columns", c, f("adult.arrow"), "-o", f(c+".arrow"))
		mustRun(t, tool(encrypt.NewCmd), "--codebook", cb, "--key-out", f(c+".key.arrow"), "--seed", "7", "--insecure-seed", f(c+".arrow"), "-o", f(c+".enc.arrow"))
	}
	mustRun(t, tool(perturb.NewCmd), "--epsilon", "1", "--seed", "7", "--insecure-seed", "--no-ledger", f("education.enc.arrow"), f("income.enc.arrow"), "-o", f("release.arrow"))
	mustRun(t, tool(decrypt.NewCmd), "--key", f("education.key.arrow"), "--key", f("income.key.arrow"), f("release.arrow"), "-o", f("decrypted.arrow"))
	return f("decrypted.arrow"), dir
}

// split writes the rows of in as len(names) files of contiguous rows, each
// with in's metadata (the format follows each name).
func split(t *testing.T, in string, names ...string) {
	t.Helper()
	cols, rows, meta := cmdtest.ReadTable(t, in)
	schema := table.StringSchema(cols)
	for i, name := range names {
		w, err := table.Create(name, schema, meta, table.WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rw := table.NewRowWriter(w, schema, 1000)
		for _, row := range rows[i*len(rows)/len(names) : (i+1)*len(rows)/len(names)] {
			if err := rw.AppendStrings(row); err != nil {
				t.Fatal(err)
			}
		}
		if err := rw.Flush(); err != nil {
			t.Fatal(err)
		}
		rw.Release()
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEstimateOnPrismMatchesTheCLI: an Adult release split into shards
// (Parquet in several row groups, and CSV), counted on Prism, gives byte for
// byte the table (and summary) that the estimate tool writes from the
// whole release, for each estimator; the count table is estimate
// --tabulate's.
func TestEstimateOnPrismMatchesTheCLI(t *testing.T) {
	rel, dir := adultRelease(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	split(t, rel, f("shard-0.parquet"), f("shard-1.parquet"), f("shard-2.parquet"))
	split(t, rel, f("part-0.csv"), f("part-1.csv"))
	est := tool(estimatecmd.NewCmd)
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
			wantOut := mustRun(t, est, append(append([]string{}, tc.args...), rel, "-o", filepath.Join(out, "want.csv"))...)
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
			mustRun(t, est, "--tabulate", rel, "-o", filepath.Join(out, "tab.csv"))
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
	rel, dir := adultRelease(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	split(t, rel, f("shard-0.csv"), f("shard-1.csv"))
	cols, rows, meta := cmdtest.ReadTable(t, f("shard-1.csv"))
	meta["gamma"] = "3"
	schema := table.StringSchema(cols)
	w, err := table.Create(f("shard-1.csv"), schema, meta, table.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rw := table.NewRowWriter(w, schema, 0)
	for _, row := range rows {
		rw.AppendStrings(row)
	}
	rw.Flush()
	w.Commit()
	var stderr strings.Builder
	err = Estimate(context.Background(), Config{Input: f("shard-*.csv"), Output: f("out"), Runner: "prism", Streams: &cli.Streams{Out: &stderr, Err: &stderr}})
	if err == nil || !strings.Contains(err.Error(), "shard-1.csv") || !strings.Contains(err.Error(), "metadata differs") {
		t.Fatalf("got %v", err)
	}
	if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), f("shard-1.csv")+": ") {
		t.Errorf("the error is not the DoFn's one line: %q", err)
	}
	if _, err := os.Stat(f("out.csv")); err == nil {
		t.Error("an estimate was written")
	}
}
