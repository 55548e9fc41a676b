package stage

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/beam/internal/beamtest"
	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cli"
)

// TestPerturbLocalReadsRemoteInputs: bitflip and ddps read their input
// from any Beam filesystem, as every other stage does (a cluster's workers
// share no POSIX path): with Parquet shards read by row group and CSV
// files on memfs:// (its sidecars beside them), the release is the one
// the same seed makes from the local files, shard for shard, row for row,
// metadata key for key, and no temporary copy is left. A remote --output
// is refused before anything runs, naming the stage: the shards are
// renamed into place through local paths.
func TestPerturbLocalReadsRemoteInputs(t *testing.T) {
	noTempLeft(t)
	_, cb, rows := adultAnonTable(t)
	dir := t.TempDir()
	f := func(name string) string { return filepath.Join(dir, name) }
	cols := []string{"id", "age", "education", "occupation", "sex", "income"}
	rows = rows[:3000]
	beamtest.WriteRows(t, f("small.csv"), cols, nil, 0, rows)
	beamtest.Split(t, f("small.csv"), f("r-0.parquet"), f("r-1.parquet")) // 2 row groups each
	beamtest.Split(t, f("small.csv"), f("c-0.csv"), f("c-1.csv"))
	for _, n := range []string{"r-0.parquet", "r-1.parquet", "c-0.csv", "c-1.csv"} {
		toMemfs(t, f(n), "memfs://perturb/in/"+n)
	}
	ctx := context.Background()
	mechs := map[string][]string{
		"bitflip": {"--mechanism", "bitflip", "--lie", "0.2", "--columns", "sex,income,occupation"},
		"ddps":    {"--mechanism", "ddps", "--column", "occupation", "--pi-s", "0.5"},
	}
	for mech, margs := range mechs {
		for _, tc := range []struct{ glob, ext string }{{"r-*.parquet", ".parquet"}, {"c-*.csv", ".csv"}} {
			t.Run(mech+"/"+tc.glob, func(t *testing.T) {
				args := append(append([]string{}, margs...), "--codebook", cb, "--seed", "7", "--insecure-seed", "--no-ledger")
				out := t.TempDir()
				run := func(in, prefix string) {
					t.Helper()
					var o strings.Builder
					err := PerturbLocal(ctx, Config{Input: in, Output: prefix, Runner: "prism", ShardRows: 1000, Args: args, Streams: &cli.Streams{Out: &o, Err: &o}})
					if err != nil {
						t.Fatalf("--input %s: %v %s", in, err, o.String())
					}
				}
				run(f(tc.glob), filepath.Join(out, "local"))
				run("memfs://perturb/in/"+tc.glob, filepath.Join(out, "remote"))
				want, _ := filepath.Glob(filepath.Join(out, "local-*"+tc.ext))
				got, _ := filepath.Glob(filepath.Join(out, "remote-*"+tc.ext))
				if len(want) < 2 || len(got) != len(want) {
					t.Fatalf("shards from memfs %v, from local files %v", got, want)
				}
				var n int
				for i := range want {
					gc, gr, gm := cmdtest.ReadTable(t, got[i])
					wc, wr, wm := cmdtest.ReadTable(t, want[i])
					if fmt.Sprint(gc, gr) != fmt.Sprint(wc, wr) || fmt.Sprint(gm) != fmt.Sprint(wm) {
						t.Errorf("%s differs from %s (%d rows, want %d)", got[i], want[i], len(gr), len(wr))
					}
					n += len(wr)
				}
				if n != len(rows) {
					t.Errorf("%d rows released, want %d", n, len(rows))
				}
			})
		}
	}
	err := PerturbLocal(ctx, Config{Input: "memfs://perturb/in/c-*.csv", Output: "memfs://perturb/out/rel", Runner: "prism", Streams: quiet(),
		Args: append(append([]string{}, mechs["bitflip"]...), "--codebook", cb, "--no-ledger")})
	var ue *cli.UsageError
	if !asUsage(err, &ue) || !strings.Contains(err.Error(), "perturb") || !strings.Contains(err.Error(), "--output") {
		t.Errorf("a remote --output: got %v, want a usage error naming perturb and --output", err)
	}
	if left, _ := listFiles(ctx, "memfs://perturb/out/*"); len(left) > 0 {
		t.Errorf("a refused run left %v", left)
	}
}

// TestAnonymizeGlobalReadsRemoteInputs: anonymize's global randomization
// sizes its shards with estimateRows, which perturb's bitflip shares; from
// CSV files on memfs:// it publishes what the same seed publishes from the
// local files, shard for shard.
func TestAnonymizeGlobalReadsRemoteInputs(t *testing.T) {
	noTempLeft(t)
	_, cb, rows := adultAnonTable(t)
	dir := t.TempDir()
	f := func(name string) string { return filepath.Join(dir, name) }
	beamtest.WriteRows(t, f("small.csv"), []string{"id", "age", "education", "occupation", "sex", "income"}, nil, 0, rows[:3000])
	beamtest.Split(t, f("small.csv"), f("c-0.csv"), f("c-1.csv"))
	for _, n := range []string{"c-0.csv", "c-1.csv"} {
		toMemfs(t, f(n), "memfs://anonglobal/in/"+n)
	}
	args := []string{"--sensitive", "occupation", "--codebook", cb, "--mechanism", "global", "--p", "0.5", "--seed", "7", "--insecure-seed"}
	run := func(in, prefix string) {
		t.Helper()
		var o strings.Builder
		err := Anonymize(context.Background(), Config{Input: in, Output: prefix, Runner: "prism", ShardRows: 1000, Args: args, Streams: &cli.Streams{Out: &o, Err: &o}})
		if err != nil {
			t.Fatalf("--input %s: %v %s", in, err, o.String())
		}
	}
	run(f("c-*.csv"), f("local"))
	run("memfs://anonglobal/in/c-*.csv", f("remote"))
	want, _ := filepath.Glob(f("local-*.csv"))
	got, _ := filepath.Glob(f("remote-*.csv"))
	if len(want) < 2 || len(got) != len(want) {
		t.Fatalf("shards from memfs %v, from local files %v", got, want)
	}
	for i := range want {
		gc, gr, gm := cmdtest.ReadTable(t, got[i])
		wc, wr, wm := cmdtest.ReadTable(t, want[i])
		if fmt.Sprint(gc, gr) != fmt.Sprint(wc, wr) || fmt.Sprint(gm) != fmt.Sprint(wm) {
			t.Errorf("%s differs from %s (%d rows, want %d)", got[i], want[i], len(gr), len(wr))
		}
	}
}
