// Package e2e runs whole pramkit commands, and pipelines of them, from
// txtar scripts in testdata/script (rogpeppe/go-internal/testscript): each
// tool name maps to its Main, so a script runs the real binaries' code
// without building them.
package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/pramkit/pramkit/internal/adulttest"
	"github.com/pramkit/pramkit/pkg/cmd/pramkit"
	"github.com/pramkit/pramkit/pkg/cmd/tools"
	"github.com/pramkit/pramkit/pkg/table"
)

// TestMain maps each tool's name to its Main from the table that the
// pramkit binary also dispatches on (pkg/cmd/tools), plus pramkit itself.
// The tools, run as this binary, send every batch through reused memory
// (table.PoolAllBuffersForTests).
func TestMain(m *testing.M) {
	table.PoolAllBuffersForTests()
	cmds := map[string]func(){
		pramkit.Name: func() { os.Exit(pramkit.Main()) },
	}
	for _, t := range tools.All {
		cmds[t.Name] = func() { os.Exit(t.Main()) }
	}
	testscript.Main(m, cmds)
}

// TestScripts runs every testdata/script/*.txtar. $ADULT is the folder
// holding adult.data (see internal/adulttest) and $ROOT the repo root, so
// scripts can use the Adult data and testdata/adult/codebook.json.
func TestScripts(t *testing.T) {
	adult := adulttest.Dir(t)
	root := adulttest.RepoRoot(t)
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("ADULT", adult)
			env.Setenv("ROOT", root)
			// perturb's release ledger goes to the script's own state
			// directory, never the user's (HOME is /no-home already).
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, ".state"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// adultcsv FILE writes Adult's training data as CSV with a header.
			"adultcsv": func(ts *testscript.TestScript, neg bool, args []string) {
				rows := adulttest.Load(t, "data")
				src := adulttest.WriteCSV(t, rows)
				b, err := os.ReadFile(src)
				ts.Check(err)
				ts.Check(os.WriteFile(ts.MkAbs(args[0]), b, 0o644))
			},
			// mode FILE PERM checks a file's permission bits.
			"mode": func(ts *testscript.TestScript, neg bool, args []string) {
				st, err := os.Stat(ts.MkAbs(args[0]))
				ts.Check(err)
				if got := st.Mode().Perm().String(); (got == args[1]) == neg {
					ts.Fatalf("%s has mode %s", args[0], got)
				}
			},
			// nofiles GLOB fails if any file matches (no partial output).
			"nofiles": func(ts *testscript.TestScript, neg bool, args []string) {
				m, _ := filepath.Glob(ts.MkAbs(args[0]))
				if len(m) > 0 {
					ts.Fatalf("unexpected files: %v", m)
				}
			},
			// editmeta FILE KEY [VALUE] sets (or, without VALUE, deletes)
			// one pramkit metadata item of FILE: in a CSV file's sidecar,
			// else inside the Parquet or Arrow file. It reproduces a
			// metadata edit, for the checks that refuse one.
			// editmeta FILE KEY -from SRC copies SRC's value of KEY.
			"editmeta": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 2 || len(args) > 4 || (len(args) == 4) != (len(args) > 2 && args[2] == "-from") {
					ts.Fatalf("usage: editmeta FILE KEY [VALUE | -from SRC]")
				}
				value := args[2:]
				if len(args) == 4 {
					r, err := table.Open(ts.MkAbs(args[3]), table.ReadOptions{})
					ts.Check(err)
					v, ok := r.Meta()[args[1]]
					r.Close()
					if !ok {
						ts.Fatalf("%s has no metadata %q", args[3], args[1])
					}
					value = []string{v}
				}
				ts.Check(editMeta(ts.MkAbs(args[0]), args[1], value))
			},
			// splitrows SRC OUT1 OUT2 ... writes SRC's rows in k contiguous
			// parts (part i: rows i·m/k up to (i+1)·m/k), each with SRC's
			// metadata: a release split into disjoint parts.
			"splitrows": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 2 {
					ts.Fatalf("usage: splitrows SRC OUT1 OUT2 ...")
				}
				ts.Check(splitRows(ts.MkAbs(args[0]), args[1:], ts.MkAbs))
			},
			// setcell FILE ROW COLUMN VALUE sets one cell of a CSV table
			// with a sidecar (ROW counts data rows from 1) and binds the
			// sidecar to the edited file: a hand-edited output.
			"setcell": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 4 {
					ts.Fatalf("usage: setcell FILE ROW COLUMN VALUE")
				}
				row, err := strconv.Atoi(args[1])
				ts.Check(err)
				ts.Check(setCell(ts.MkAbs(args[0]), row, args[2], args[3]))
			},
			// catrows OUT IN1 IN2 ... writes IN1's text and then the data
			// lines of the other CSV files (their header line left out):
			// the whole table that CSV parts of one run concatenate to.
			"catrows": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 2 {
					ts.Fatalf("usage: catrows OUT IN1 IN2 ...")
				}
				var out []byte
				for i, in := range args[1:] {
					b, err := os.ReadFile(ts.MkAbs(in))
					ts.Check(err)
					if i > 0 {
						nl := bytes.IndexByte(b, '\n')
						if nl < 0 {
							ts.Fatalf("%s has no header line", in)
						}
						b = b[nl+1:]
					}
					out = append(out, b...)
				}
				ts.Check(os.WriteFile(ts.MkAbs(args[0]), out, 0o644))
			},
			// flipbyte FILE OFFSET flips the top bit of one byte (a
			// negative OFFSET counts from the end): a corrupt copy.
			"flipbyte": func(ts *testscript.TestScript, neg bool, args []string) {
				b, err := os.ReadFile(ts.MkAbs(args[0]))
				ts.Check(err)
				off, err := strconv.Atoi(args[1])
				ts.Check(err)
				if off < 0 {
					off += len(b)
				}
				b[off] ^= 0x80
				ts.Check(os.WriteFile(ts.MkAbs(args[0]), b, 0o644))
			},
			// exitcode N PROG ARGS... runs PROG like exec and checks its
			// exit code is N (exec only tells zero from non-zero; a Go
			// panic exits with 2, like a usage error).
			"exitcode": func(ts *testscript.TestScript, neg bool, args []string) {
				want, err := strconv.Atoi(args[0])
				ts.Check(err)
				got := 0
				if err := ts.Exec(args[1], args[2:]...); err != nil {
					var ee *exec.ExitError
					if !errors.As(err, &ee) {
						ts.Fatalf("%v", err)
					}
					got = ee.ExitCode()
				}
				if got != want {
					ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
				}
			},
			// bigcell FILE N writes a CSV table (sex,disease) whose first
			// row holds an N-byte disease; bigcell FILE N HEADER PREFIX
			// writes HEADER, then PREFIX and N x's on one line.
			"bigcell": func(ts *testscript.TestScript, neg bool, args []string) {
				n, err := strconv.Atoi(args[1])
				ts.Check(err)
				head, prefix, tail := "sex,disease", "Female,", "\nMale,flu\nMale,cold\n"
				if len(args) == 4 {
					head, prefix, tail = args[2], args[3], "\n"
				}
				csv := head + "\n" + prefix + strings.Repeat("x", n) + tail
				ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(csv), 0o644))
			},
		},
	})
}

// editMeta sets meta[key] = value[0] (deletes it when value is empty) in
// path's metadata. A CSV sidecar is edited as generic JSON, so that its
// other top-level fields are kept whatever they are; a Parquet or Arrow
// file is rewritten with the new metadata, same rows and permissions.
func editMeta(path, key string, value []string) error {
	set := func(m map[string]any) {
		if len(value) == 0 {
			delete(m, key)
		} else {
			m[key] = value[0]
		}
	}
	side := path + ".meta.json"
	if b, err := os.ReadFile(side); err == nil {
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("%s: %v", side, err)
		}
		m, ok := doc["meta"].(map[string]any)
		if !ok {
			return fmt.Errorf("%s has no \"meta\" object", side)
		}
		set(m)
		out, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		st, err := os.Stat(side)
		if err != nil {
			return err
		}
		return os.WriteFile(side, out, st.Mode().Perm())
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	r, err := table.Open(path, table.ReadOptions{})
	if err != nil {
		return err
	}
	defer r.Close()
	meta := r.Meta().Clone()
	if len(value) == 0 {
		delete(meta, key)
	} else {
		meta[key] = value[0]
	}
	tmp := path + ".editmeta"
	w, err := table.Create(tmp, r.Schema(), meta, table.WriteOptions{Format: r.Format(), Perm: st.Mode().Perm()})
	if err != nil {
		return err
	}
	defer w.Abort()
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if err := w.Write(rec); err != nil {
			return err
		}
	}
	if err := w.Commit(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// splitRows is the splitrows command.
func splitRows(src string, outs []string, abs func(string) string) error {
	r, err := table.Open(src, table.ReadOptions{})
	if err != nil {
		return err
	}
	defer r.Close()
	var recs []arrow.RecordBatch
	var m int64
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		rec.Retain()
		defer rec.Release()
		recs = append(recs, rec)
		m += rec.NumRows()
	}
	k := int64(len(outs))
	var row int64 // first row of recs[0] not yet written
	for i, out := range outs {
		end := (int64(i) + 1) * m / k
		w, err := table.Create(abs(out), r.Schema(), r.Meta(), table.WriteOptions{})
		if err != nil {
			return err
		}
		for row < end {
			rec := recs[0]
			take := min(rec.NumRows(), end-row)
			if err := w.Write(rec.NewSlice(0, take)); err != nil {
				w.Abort()
				return err
			}
			row += take
			if take == rec.NumRows() {
				recs = recs[1:]
			} else {
				recs[0] = rec.NewSlice(take, rec.NumRows())
			}
		}
		if err := w.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// setCell is the setcell command.
func setCell(path string, row int, col, value string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return err
	}
	j := slices.Index(recs[0], col)
	if j < 0 || row < 1 || row >= len(recs) {
		return fmt.Errorf("%s has no row %d, column %q", path, row, col)
	}
	recs[row][j] = value
	var out bytes.Buffer
	w := csv.NewWriter(&out)
	if err := w.WriteAll(recs); err != nil {
		return err
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		return err
	}
	side := path + ".meta.json"
	sb, err := os.ReadFile(side)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(sb, &doc); err != nil {
		return err
	}
	sum := sha256.Sum256(out.Bytes())
	doc["data"] = map[string]any{"bytes": out.Len(), "sha256": hex.EncodeToString(sum[:])}
	sb, err = json.Marshal(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(side, sb, 0o644)
}
