// Package beamtest builds the Adult fixtures of pramkit-beam's tests through
// the real pramkit commands.
package beamtest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/internal/adulttest"
	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/decrypt"
	"github.com/pramkit/pramkit/pkg/cmd/encrypt"
	"github.com/pramkit/pramkit/pkg/cmd/perturb"
	"github.com/pramkit/pramkit/pkg/cmd/sample"
	"github.com/pramkit/pramkit/pkg/table"
)

// MainRoot is the main module's folder (beam/..); ADULT_DIR is pointed at
// the Adult data next to it when unset, since adulttest searches from the
// nearest go.mod, beam's own.
func MainRoot(t *testing.T) string {
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

// Tool adapts a command's NewCmd to cmdtest.Run.
func Tool[O any](f func(*cli.Streams, func(*O) error) *cobra.Command) func(*cli.Streams) *cobra.Command {
	return func(s *cli.Streams) *cobra.Command { return f(s, nil) }
}

// MustRun runs a command in-process and fails the test on a non-zero exit.
func MustRun(t *testing.T, build func(*cli.Streams) *cobra.Command, args ...string) string {
	t.Helper()
	r := cmdtest.Run(build, nil, args...)
	if r.Code != 0 {
		t.Fatalf("%v: exit %d: %s", args, r.Code, r.Stderr)
	}
	return r.Stdout
}

// AdultRelease runs the release pipeline of SPEC §1 on Adult through the
// real commands (Alice holds education, Bob income; m = 5000, ε = 1) and
// returns the decrypted release (Arrow) and its folder.
func AdultRelease(t *testing.T) (string, string) {
	t.Helper()
	root := MainRoot(t)
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
	smp := Tool(sample.NewCmd)
	MustRun(t, smp, "--new-secret", f("shared.secret"), "--seed", "7", "--insecure-seed")
	for _, c := range []string{"education", "income"} {
		MustRun(t, smp, "--secret", f("shared.secret"), "-m", "5000", "--id", "id", "--columns", c, f("adult.arrow"), "-o", f(c+".arrow"))
		MustRun(t, Tool(encrypt.NewCmd), "--codebook", cb, "--key-out", f(c+".key.arrow"), "--seed", "7", "--insecure-seed", f(c+".arrow"), "-o", f(c+".enc.arrow"))
	}
	MustRun(t, Tool(perturb.NewCmd), "--epsilon", "1", "--seed", "7", "--insecure-seed", "--no-ledger", f("education.enc.arrow"), f("income.enc.arrow"), "-o", f("release.arrow"))
	MustRun(t, Tool(decrypt.NewCmd), "--key", f("education.key.arrow"), "--key", f("income.key.arrow"), f("release.arrow"), "-o", f("decrypted.arrow"))
	return f("decrypted.arrow"), dir
}

// Split writes the rows of in as len(names) files of contiguous rows, each
// with in's metadata (the format follows each name).
func Split(t *testing.T, in string, names ...string) {
	t.Helper()
	cols, rows, meta := cmdtest.ReadTable(t, in)
	for i, name := range names {
		WriteRows(t, name, cols, meta, 1000, rows[i*len(rows)/len(names):(i+1)*len(rows)/len(names)])
	}
}

// WriteRows writes rows of string columns cols as the table at path (the
// format follows its name) with metadata meta, groupRows rows a Parquet
// row group or Arrow batch (0 for the writer's default).
func WriteRows(t *testing.T, path string, cols []string, meta table.Meta, groupRows int, rows [][]string) {
	t.Helper()
	schema := table.StringSchema(cols)
	w, err := table.Create(path, schema, meta, table.WriteOptions{RowGroupRows: groupRows})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	rw := table.NewRowWriter(w, schema, groupRows)
	for _, row := range rows {
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
