package table

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIsKeyMaterialJudgesByContent(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	keyMeta := Meta{"stage": StageKey, "pad": "prf", "prf_key": "00"}
	writeRows(t, p("k.data"), []string{"a"}, [][]string{{"1"}}, keyMeta, WriteOptions{Format: Parquet})
	writeRows(t, p("k.arrow"), []string{"a"}, [][]string{{"1"}}, keyMeta, WriteOptions{})
	writeRows(t, p("k.csv"), []string{"a"}, [][]string{{"1"}}, keyMeta, WriteOptions{})
	writeRows(t, p("release.parquet"), []string{"a"}, [][]string{{"1"}}, Meta{"stage": "perturb"}, WriteOptions{})
	writeRows(t, p("sample.csv"), []string{"a"}, [][]string{{"1"}}, Meta{"stage": "sample"}, WriteOptions{})
	os.WriteFile(p("s.secret"), []byte(strings.Repeat("ab", 32)+"\n"), 0o600)
	os.WriteFile(p("marked.secret"), []byte(strings.Repeat("ab", 32)+"\n# pramkit: made with --insecure-seed, FOR TESTS ONLY: anyone who knows the seed can recompute this secret\n"), 0o600)
	raw := []byte(strings.Repeat("k", 31) + "\x00")
	os.WriteFile(p("raw.prf"), raw, 0o600)
	os.WriteFile(p("text32.csv"), []byte("a,b\n"+strings.Repeat("1,2\n", 7)), 0o644) // 32 bytes of text
	os.WriteFile(p("hex.csv"), []byte("h\n"+strings.Repeat("0", 64)+"\n"), 0o644)
	for _, tc := range []struct {
		name string
		want KeyKind
	}{
		{"k.data", KeyFile}, // Parquet, whatever the name
		{"k.arrow", KeyFile},
		{"k.csv", KeyFile},
		{"k.csv.meta.json", KeySidecar},
		{"s.secret", Secret},
		{"marked.secret", Secret},
		{"raw.prf", RawKey},
		{"release.parquet", NotKey},
		{"sample.csv", NotKey},
		{"sample.csv.meta.json", NotKey},
		{"text32.csv", NotKey},
		{"hex.csv", NotKey},
		{"absent", NotKey},
	} {
		if ok, got := IsKeyMaterial(p(tc.name)); got != tc.want || ok != (tc.want != NotKey) {
			t.Errorf("%s: %v %v, want %v", tc.name, ok, got, tc.want)
		}
	}
}

// Every output is checked against the run's inputs and other outputs,
// their sidecars, and existing key material; the refused files are kept.
func TestCreateRefusesToDestroyInputsSidecarsAndKeys(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	writeRows(t, p("in.csv"), []string{"a"}, [][]string{{"1"}}, Meta{"stage": "sample"}, WriteOptions{})
	writeRows(t, p("k.csv"), []string{"a"}, [][]string{{"1"}}, Meta{"stage": StageKey}, WriteOptions{Perm: 0o600, Key: true, NoClobber: true})
	os.WriteFile(p("s.secret"), []byte(strings.Repeat("ab", 32)+"\n"), 0o600)
	schema := StringSchema([]string{"a"})
	for _, tc := range []struct {
		path string
		opt  WriteOptions
		msg  string
	}{
		{p("in.csv.meta.json"), WriteOptions{Inputs: []string{p("in.csv")}}, "in.csv.meta.json: is the metadata sidecar of " + p("in.csv") + ", which this run reads or writes; refusing to overwrite it with -o"},
		{p("new.csv.meta.json"), WriteOptions{Inputs: []string{p("new.csv")}, Flag: "--groups"}, "refusing to overwrite it with --groups"}, // an output not written yet
		{p("k.csv"), WriteOptions{}, "k.csv: is a pramkit key file; refusing to overwrite it with -o; choose another output name"},
		{p("k.csv.meta.json"), WriteOptions{}, "k.csv.meta.json: is the metadata of a pramkit key file; refusing"},
		{p("s.secret"), WriteOptions{Flag: "--save-codebook"}, "s.secret: is a pramkit secret; refusing to overwrite it with --save-codebook"},
		{p("s.secret"), WriteOptions{Key: true, Flag: "--key-out"}, "s.secret: is a pramkit secret; refusing to overwrite it with --key-out"},
	} {
		before, _ := os.ReadFile(tc.path)
		w, err := Create(tc.path, schema, Meta{"x": "1"}, tc.opt)
		if err == nil {
			w.Abort()
			t.Errorf("%s: accepted", tc.path)
			continue
		}
		if !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v\nwant %q", tc.path, err, tc.msg)
		}
		if after, _ := os.ReadFile(tc.path); string(after) != string(before) {
			t.Errorf("%s was changed", tc.path)
		}
	}
	// A key output with --force may replace a key, sidecar included.
	writeRows(t, p("k.csv"), []string{"a"}, [][]string{{"2"}}, Meta{"stage": StageKey}, WriteOptions{Perm: 0o600, Key: true})
}

// Outputs are never more readable than their inputs (secrets aside: they
// never reach the output), and a key stays owner-only.
func TestOutputPermNarrowedByInputs(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	os.WriteFile(p("private.csv"), []byte("a\n1\n"), 0o600)
	os.WriteFile(p("group.csv"), []byte("a\n1\n"), 0o640)
	os.WriteFile(p("s.secret"), []byte(strings.Repeat("ab", 32)+"\n"), 0o600)
	for _, tc := range []struct {
		opt  WriteOptions
		want os.FileMode
	}{
		{WriteOptions{}, 0o666},
		{WriteOptions{Inputs: []string{p("private.csv")}}, 0o600},
		{WriteOptions{Inputs: []string{"-", p("group.csv")}}, 0o640},
		{WriteOptions{Inputs: []string{p("group.csv"), p("s.secret")}}, 0o640},
		{WriteOptions{Perm: 0o600, Inputs: []string{p("group.csv")}}, 0o600},
	} {
		if got := outputPerm(tc.opt); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.opt.Inputs, got, tc.want)
		}
	}
}

// RemovePartialFiles (what a signal handler calls) removes every
// temporary output, and a commit after it fails instead of publishing.
func TestRemovePartialFilesRemovesOpenOutputs(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.csv")
	schema := StringSchema([]string{"a"})
	w, err := Create(out, schema, Meta{"n": "1"}, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	left, _ := filepath.Glob(filepath.Join(dir, ".out.csv"+partialInfix+"*"))
	if len(left) != 1 {
		t.Fatalf("partial files %v, want one .out.csv%s*", left, partialInfix)
	}
	RemovePartialFiles()
	defer func() {
		partials.Lock()
		partials.dying = false
		partials.Unlock()
	}()
	if err := w.Commit(); err == nil {
		t.Error("a commit after RemovePartialFiles succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}

// createThen creates path (one row), runs between, and commits: the
// commit's error.
func createThen(t *testing.T, path string, opt WriteOptions, between func()) error {
	t.Helper()
	w, err := Create(path, StringSchema([]string{"a"}), Meta{"stage": "x"}, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	bb := NewBatchBuilder(StringSchema([]string{"a"}))
	defer bb.Release()
	bb.AppendStrings([]string{"1"})
	rec := bb.NewBatch()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	between()
	return w.Commit()
}

// TestOutputDestinationsThatARenameWouldHarm: an output's destination is
// refused at Create when a rename would replace something that is not a
// regular file — a folder where a CSV's sidecar goes (the data would be
// published without it); a FIFO or device: protect_unix_test.go — and a
// key file another run wrote at the destination while this one ran is not
// replaced at commit (an ordinary file is, as before: the last run's
// pair).
func TestOutputDestinationsThatARenameWouldHarm(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	if err := os.Mkdir(p("d.csv.meta.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(p("d.csv"), StringSchema([]string{"a"}), Meta{"stage": "x"}, WriteOptions{}); err == nil || !strings.Contains(err.Error(), "d.csv.meta.json: is a folder") {
		t.Errorf("a folder at the sidecar's place: %v", err)
	}

	// A key file written at the destination meanwhile stays; a plain
	// file written there meanwhile is replaced.
	keyMeta := Meta{"stage": StageKey}
	for _, name := range []string{"out.parquet", "out.csv"} {
		err := createThen(t, p(name), WriteOptions{}, func() {
			writeRows(t, p(name), []string{"k"}, [][]string{{"pad"}}, keyMeta, WriteOptions{Perm: 0o600, Key: true, NoClobber: true})
		})
		if err == nil || !strings.Contains(err.Error(), "while this run wrote it; not replaced") {
			t.Errorf("%s: a key file written meanwhile: %v", name, err)
		}
		if _, _, m, _ := readAll(t, p(name), ReadOptions{}); m["stage"] != StageKey {
			t.Errorf("%s: the key file was replaced: %v", name, m)
		}
		os.Remove(p(name))
		os.Remove(sidecarPath(p(name)))
		if err := createThen(t, p(name), WriteOptions{}, func() {
			writeRows(t, p(name), []string{"a"}, [][]string{{"other"}}, Meta{"stage": "y"}, WriteOptions{})
		}); err != nil {
			t.Errorf("%s: a plain file written meanwhile: %v", name, err)
		}
		if _, _, m, _ := readAll(t, p(name), ReadOptions{}); m["stage"] != "x" {
			t.Errorf("%s: the last run's file is not the one there: %v", name, m)
		}
	}
}

// TestSidecarFailureSaysTheDataIsPublished: a folder made where a CSV's
// sidecar goes while the run writes is found before anything is published
// (the data stays unpublished); one made between the data's rename and
// the sidecar's (betweenRenames) fails the commit with an error that is
// ErrDataPublished, so that a caller keeps what it recorded of the
// release (perturb's ledger entry, encrypt's key file); another failure
// is not.
func TestSidecarFailureSaysTheDataIsPublished(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.csv")
	mkSidecarDir := func() {
		if err := os.Mkdir(sidecarPath(out), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	err := createThen(t, out, WriteOptions{}, mkSidecarDir)
	if err == nil || errors.Is(err, ErrDataPublished) {
		t.Errorf("a folder at the sidecar's place before the commit: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the data was published: %v", err)
	}
	os.Remove(sidecarPath(out))
	betweenRenames = mkSidecarDir
	err = createThen(t, out, WriteOptions{}, func() {})
	betweenRenames = nil
	if !errors.Is(err, ErrDataPublished) {
		t.Errorf("sidecar not renamed: %v, want ErrDataPublished", err)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("the data: %v", err)
	}
	err = createThen(t, filepath.Join(dir, "x.csv"), WriteOptions{}, func() {
		os.Chmod(dir, 0o500)
	})
	os.Chmod(dir, 0o755)
	if errors.Is(err, ErrDataPublished) {
		t.Errorf("nothing published: %v is ErrDataPublished", err)
	}
}

// TestCommitAllPublishesNoneOnAFailure: of two tables committed together,
// neither is published when the second's destination became a folder
// while they were written (found before the first rename, which had
// published the first table alone), and a table committed after Abort is
// an error.
func TestCommitAllPublishesNoneOnAFailure(t *testing.T) {
	dir := t.TempDir()
	g, r := filepath.Join(dir, "g.csv"), filepath.Join(dir, "r.parquet")
	create := func(path string) Writer {
		w, err := Create(path, StringSchema([]string{"a"}), Meta{"stage": "x"}, WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	gw, rw := create(g), create(r)
	if err := os.MkdirAll(filepath.Join(r, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if n, err := CommitAll(gw, rw); err == nil || n != 0 {
		t.Errorf("CommitAll: %d published, %v", n, err)
	}
	if _, err := os.Stat(g); !os.IsNotExist(err) {
		t.Errorf("the first table was published: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*partial*")); len(left) > 0 {
		t.Errorf("partial files left: %v", left)
	}
	w := create(filepath.Join(dir, "a.csv"))
	w.Abort()
	if err := w.Commit(); err == nil {
		t.Error("a commit after Abort: no error")
	}
}
