package cmdtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/mechanism"
	"github.com/pramkit/pramkit/pkg/table"
)

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

// Failure is a bad invocation of a command and how it must fail.
type Failure struct {
	Name string   // the subtest's name
	Args []string // the command's arguments
	Code int      // the exit code: cli.ExitUsage for flag mistakes, 1 for bad data
	Msg  string   // a part of the error message
}

// ExpectFailures runs the command build returns on each case's Args
// followed by extra, as a subtest, and checks it with Problems: exit code,
// one-line message, no output file out or out* left behind.
func ExpectFailures(t *testing.T, build func(*cli.Streams) *cobra.Command, out string, cases []Failure, extra ...string) {
	t.Helper()
	tool := build(&cli.Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}).Name()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			args := append(append([]string{}, c.Args...), extra...)
			res := Run(build, nil, args...)
			for _, p := range Problems(tool, res, c, out) {
				t.Error(p)
			}
		})
	}
}

// Problems says how a run of tool failed otherwise than c wants: another
// exit code; an error that is not one line "tool: …" containing c.Msg
// (usage errors may add the line pointing to --help); output on stdout; or
// files out* left behind. It returns nil for a run that failed as wanted.
// The warning that an input was made with --insecure-seed, as tests make
// theirs to be reproducible, may come before the error.
func Problems(tool string, res Result, c Failure, out string) []string {
	var ps []string
	if res.Code != c.Code {
		ps = append(ps, fmt.Sprintf("exit %d, want %d (stderr %q)", res.Code, c.Code, res.Stderr))
	}
	lines := strings.Split(strings.TrimSuffix(res.Stderr, "\n"), "\n")
	for len(lines) > 1 && strings.HasPrefix(lines[0], tool+": warning: ") && strings.Contains(lines[0], " was made with --insecure-seed") {
		lines = lines[1:]
	}
	if !strings.HasPrefix(lines[0], tool+": ") || !strings.Contains(lines[0], c.Msg) {
		ps = append(ps, fmt.Sprintf("first stderr line %q, want \"%s: …%s…\"", lines[0], tool, c.Msg))
	}
	rest := lines[1:]
	if c.Code == cli.ExitUsage && len(rest) == 1 && rest[0] == fmt.Sprintf("Run '%s --help' for usage.", tool) {
		rest = nil
	}
	if len(rest) > 0 {
		ps = append(ps, fmt.Sprintf("the error is not one line: %q", res.Stderr))
	}
	if res.Stdout != "" {
		ps = append(ps, fmt.Sprintf("a failed run printed %q", res.Stdout))
	}
	if m, _ := filepath.Glob(out + "*"); len(m) > 0 {
		ps = append(ps, fmt.Sprintf("output left behind: %v", m))
	}
	return ps
}

// WriteFile writes content to dir/name and returns the path.
func WriteFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
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
		for i := range int(rec.NumRows()) {
			row := make([]string, len(vals))
			for j := range vals {
				row[j] = vals[j].String(i)
			}
			rows = append(rows, row)
		}
	}
	return names, rows, r.Meta()
}

// BindSidecar makes the sidecar of the CSV file csvPath record the file's
// current size and SHA-256, as the writer does, so that a test which
// edits a table or writes a sidecar by hand reaches the checks behind the
// reader's pair check (table: a sidecar must describe its data file).
func BindSidecar(t testing.TB, csvPath string) {
	t.Helper()
	data, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	side := csvPath + ".meta.json"
	b, err := os.ReadFile(side)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]json.RawMessage
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", side, err)
	}
	sum := sha256.Sum256(data)
	s["data"], _ = json.Marshal(map[string]any{"bytes": len(data), "sha256": hex.EncodeToString(sum[:])})
	b, _ = json.Marshal(s)
	st, _ := os.Stat(side)
	if err := os.WriteFile(side, b, st.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}

// MechanismTable checks that a command that makes mechanisms (maker:
// mechanism.Perturb or mechanism.Anonymize) has a step for exactly the
// mechanisms mechanism.Table gives it, in the table's order (names, from
// the command's own table), and that every flag the table says they own is
// one of cmd's flags (a misspelt name would refuse nothing).
func MechanismTable(t *testing.T, maker string, names []string, cmd *cobra.Command) {
	t.Helper()
	if want := mechanism.Names(maker); !slices.Equal(names, want) {
		t.Errorf("%s's steps %v, mechanism.Table's %s mechanisms %v", maker, names, maker, want)
	}
	for flag := range mechanism.Owners(maker, false) {
		if cmd.Flags().Lookup(flag) == nil {
			t.Errorf("mechanism.Table gives %s a flag --%s it does not have", maker, flag)
		}
	}
}

// CopyTable writes the table at src, with its metadata, to dst in the
// format of dst's extension, and returns dst.
func CopyTable(t *testing.T, src, dst string) string {
	t.Helper()
	return CopyTableWith(t, src, dst, table.WriteOptions{})
}

// CopyTableWith is CopyTable writing with wo (row group sizes, say).
func CopyTableWith(t *testing.T, src, dst string, wo table.WriteOptions) string {
	t.Helper()
	in, err := table.Open(src, table.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	w, err := table.Create(dst, in.Schema(), in.Meta(), wo)
	if err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := in.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			w.Abort()
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			w.Abort()
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return dst
}
