package stage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/beam/internal/beamtest"
	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/sample"
)

// adultTable writes Adult's id, education and income columns as one CSV
// and as four CSV shards of contiguous rows; it returns the folder.
func adultTable(t *testing.T) string {
	t.Helper()
	rel, dir := beamtest.AdultRelease(t) // (also writes adult.arrow and the secret)
	_ = rel
	f := func(name string) string { return filepath.Join(dir, name) }
	beamtest.Split(t, f("adult.arrow"), f("adult.csv"))
	beamtest.Split(t, f("adult.arrow"), f("s-0.csv"), f("s-1.csv"), f("s-2.csv"), f("s-3.csv"))
	return dir
}

// TestSampleOnPrismMatchesTheCLI: the bottom-m of each shard, combined on
// Prism, is exactly the sample that the sample tool draws from the whole
// table with the same secret and ids: the same rows in the same (priority)
// order and the same metadata — also when m exceeds every shard's rows.
func TestSampleOnPrismMatchesTheCLI(t *testing.T) {
	dir := adultTable(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	for _, args := range [][]string{
		{"-m", "2000", "--id", "id", "--columns", "education"},
		{"-m", "10000", "--id", "id"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out := t.TempDir()
			args = append([]string{"--secret", f("shared.secret")}, args...)
			beamtest.MustRun(t, beamtest.Tool(sample.NewCmd), append(args, f("adult.csv"), "-o", filepath.Join(out, "want.csv"))...)
			var stderr strings.Builder
			err := Sample(context.Background(), Config{Input: f("s-*.csv"), Output: filepath.Join(out, "beam"), Runner: "prism", Args: args,
				Streams: &cli.Streams{Out: &stderr, Err: &stderr}})
			if err != nil {
				t.Fatalf("%v: %s", err, stderr.String())
			}
			gotCols, got, gotMeta := cmdtest.ReadTable(t, filepath.Join(out, "beam.csv"))
			wantCols, want, wantMeta := cmdtest.ReadTable(t, filepath.Join(out, "want.csv"))
			if strings.Join(gotCols, ",") != strings.Join(wantCols, ",") {
				t.Errorf("columns %v, want %v", gotCols, wantCols)
			}
			if len(got) != len(want) || len(want) < 2000 {
				t.Fatalf("%d rows, the CLI %d", len(got), len(want))
			}
			for i := range want {
				if strings.Join(got[i], ",") != strings.Join(want[i], ",") {
					t.Fatalf("row %d is %v, the CLI's %v", i+1, got[i], want[i])
				}
			}
			if len(gotMeta) != len(wantMeta) {
				t.Errorf("metadata %v, want %v", gotMeta, wantMeta)
			}
			for k, v := range wantMeta {
				if gotMeta[k] != v {
					t.Errorf("metadata %s = %q, want %q", k, gotMeta[k], v)
				}
			}
			a, _ := os.ReadFile(filepath.Join(out, "beam.csv"))
			b, _ := os.ReadFile(filepath.Join(out, "want.csv"))
			if string(a) != string(b) {
				t.Error("the files differ byte for byte")
			}
		})
	}
}

// TestSampleRefusesRepeatedIDsAcrossShards: an id in two shards (which the
// CLI refuses as a repeated id) fails, naming the id; and m > n fails.
func TestSampleRefusesRepeatedIDsAcrossShards(t *testing.T) {
	dir := adultTable(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	b, err := os.ReadFile(f("s-0.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f("s-4.csv"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if side, err := os.ReadFile(f("s-0.csv.meta.json")); err == nil {
		os.WriteFile(f("s-4.csv.meta.json"), side, 0o644)
	}
	var stderr strings.Builder
	s := &cli.Streams{Out: &stderr, Err: &stderr}
	err = Sample(context.Background(), Config{Input: f("s-*.csv"), Output: f("out"), Runner: "prism", Streams: s,
		Args: []string{"--secret", f("shared.secret"), "-m", "30000", "--id", "id"}})
	if err == nil || !strings.Contains(err.Error(), "appears more than once") {
		t.Fatalf("repeated ids: got %v", err)
	}
	os.Remove(f("s-4.csv"))
	os.Remove(f("s-4.csv.meta.json"))
	err = Sample(context.Background(), Config{Input: f("s-*.csv"), Output: f("out"), Runner: "prism", Streams: s,
		Args: []string{"--secret", f("shared.secret"), "-m", "40000", "--id", "id"}})
	if err == nil || !strings.Contains(err.Error(), "n = 32561") {
		t.Fatalf("m > n: got %v", err)
	}
	if _, err := os.Stat(f("out.csv")); err == nil {
		t.Error("a sample was written")
	}
}
