// Package releasetest supports the tests of encrypt, perturb and decrypt:
// it writes sample-stage tables and codebooks. Run and ReadTable, which
// every command's tests use, live in internal/cmdtest and are forwarded
// here.
package releasetest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// Fingerprint is the sample fingerprint WriteSample records.
const Fingerprint = "00112233445566778899aabbccddeeff"

// WriteSample writes rows (values in the order of names) as the output of
// the sample stage: n rows sampled down to m = len(rows), with Fingerprint.
// The format comes from path's extension.
func WriteSample(t testing.TB, path string, names []string, rows [][]string, n int64) {
	t.Helper()
	meta := table.Meta{release.KeyStage: release.StageSample, release.KeySampleID: release.SampleIDPosition}
	release.Sample{N: n, M: int64(len(rows)), Fingerprint: Fingerprint}.Encode(meta)
	schema := table.StringSchema(names)
	w, err := table.Create(path, schema, meta, table.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	bb := table.NewBatchBuilder(schema)
	defer bb.Release()
	for i, r := range rows {
		bb.AppendStrings(r)
		if bb.Rows() == table.DefaultBatchSize || i == len(rows)-1 {
			rec := bb.NewBatch()
			err := w.Write(rec)
			rec.Release()
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

// Categorical is one categorical column of a codebook file.
type Categorical struct {
	Name       string   `json:"name"`
	Categories []string `json:"categories"`
	Missing    string   `json:"missing,omitempty"`
}

// WriteCodebook writes a codebook file of categorical columns in dir and
// returns its path.
func WriteCodebook(t testing.TB, dir string, cols ...Categorical) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"columns": cols})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "codebook.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Labels returns "prefix0" … "prefix{k-1}".
func Labels(prefix string, k int) []string {
	out := make([]string, k)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// Result is what a command run printed and returned (cmdtest.Result).
type Result = cmdtest.Result

// Run runs the command that build returns on args, in-process, as Main
// would (cmdtest.Run).
func Run(build func(*cli.Streams) *cobra.Command, stdin []byte, args ...string) Result {
	return cmdtest.Run(build, stdin, args...)
}

// ReadTable reads every cell of a table as strings and returns them with
// the metadata (cmdtest.ReadTable).
func ReadTable(t testing.TB, path string) (names []string, rows [][]string, meta table.Meta) {
	t.Helper()
	return cmdtest.ReadTable(t, path)
}

// BenchCurator is one curator's sample for the release benchmarks.
type BenchCurator struct {
	Name     string // the column, and the stem of the files
	Sample   string // the sample table (Arrow)
	Codebook string // its codebook
}

// BenchCurators writes two curators' samples of m rows, education (k = 16)
// and income (k = 2), with their codebooks, for the encrypt, perturb and
// decrypt benchmarks.
func BenchCurators(t testing.TB, dir string, m int) []BenchCurator {
	var out []BenchCurator
	for _, c := range []struct {
		name string
		k    int
	}{{"education", 16}, {"income", 2}} {
		rows := make([][]string, m)
		for i := range rows {
			rows[i] = []string{fmt.Sprintf("v%d", i%c.k)}
		}
		in := filepath.Join(dir, c.name+".arrow")
		WriteSample(t, in, []string{c.name}, rows, 10*int64(m))
		cbDir := filepath.Join(dir, c.name)
		if err := os.Mkdir(cbDir, 0o755); err != nil {
			t.Fatal(err)
		}
		cb := WriteCodebook(t, cbDir, Categorical{Name: c.name, Categories: Labels("v", c.k)})
		out = append(out, BenchCurator{Name: c.name, Sample: in, Codebook: cb})
	}
	return out
}
