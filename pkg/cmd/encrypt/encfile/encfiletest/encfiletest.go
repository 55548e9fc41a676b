// Package encfiletest supports the tests of encrypt, perturb and decrypt:
// it writes sample-stage tables and codebooks, runs a command in-process the
// way its Main does, and reads tables back.
package encfiletest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/table"
)

// Fingerprint is the sample fingerprint WriteSample records.
const Fingerprint = "00112233445566778899aabbccddeeff"

// WriteSample writes rows (values in the order of names) as the output of
// the sample stage: n rows sampled down to m = len(rows), with Fingerprint.
// The format comes from path's extension.
func WriteSample(t testing.TB, path string, names []string, rows [][]string, n int64) {
	t.Helper()
	meta := table.Meta{"stage": "sample", "fingerprint": Fingerprint, "sample_id": "position"}
	meta.SetInt("n", n)
	meta.SetInt("m", int64(len(rows)))
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

// Result is what a command run printed and returned.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// Run runs the command that build returns (typically a package's NewCmd
// with a nil runF) on args, in-process, with stdin and captured output, as
// Main would.
func Run(build func(*cli.Streams) *cobra.Command, stdin []byte, args ...string) Result {
	var out, errb bytes.Buffer
	s := &cli.Streams{In: bytes.NewReader(stdin), Out: &out, Err: &errb}
	code := cli.Run(build(s), args, s)
	return Result{Code: code, Stdout: out.String(), Stderr: errb.String()}
}

// ReadTable reads every cell of a table as strings (columns in schema
// order) and returns them with the metadata.
func ReadTable(t testing.TB, path string) (names []string, rows [][]string, meta table.Meta) {
	t.Helper()
	r, err := table.Open(path, table.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, f := range r.Schema().Fields() {
		names = append(names, f.Name)
	}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]table.Values, rec.NumCols())
		for j := range vals {
			vals[j] = table.ValuesOf(rec.Column(j))
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]string, len(vals))
			for j := range vals {
				row[j] = vals[j].String(i)
			}
			rows = append(rows, row)
		}
	}
	return names, rows, r.Meta()
}
