package stage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"

	"github.com/pramkit/pramkit/beam/internal/beamtest"
	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// toMemfs copies the local file (and its CSV sidecar, if any) to remote.
func toMemfs(t *testing.T, local, remote string) {
	t.Helper()
	for _, ext := range []string{"", ".meta.json"} {
		b, err := os.ReadFile(local + ext)
		if err != nil {
			if ext == "" {
				t.Fatal(err)
			}
			continue
		}
		memfs.Write(remote+ext, b)
	}
}

// fromMemfs copies the remote file (and its sidecar, if any) to local.
func fromMemfs(t *testing.T, remote, local string) {
	t.Helper()
	ctx := context.Background()
	fs := memfs.New(ctx)
	for _, ext := range []string{"", ".meta.json"} {
		b, err := filesystem.Read(ctx, fs, remote+ext)
		if err != nil {
			if ext == "" {
				t.Fatalf("%s: %v", remote, err)
			}
			continue
		}
		if err := os.WriteFile(local+ext, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// noTempLeft makes the test's temporary files go to a folder of its own
// and checks at the end that the copies were all removed.
func noTempLeft(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Cleanup(func() {
		PurgeFetched()
		e, _ := os.ReadDir(tmp)
		// Prism's loopback workers leave folders of their own.
		e = slices.DeleteFunc(e, func(d os.DirEntry) bool { return !strings.HasPrefix(d.Name(), "pramkit-beam-") })
		if len(e) > 0 {
			t.Errorf("temporary copies left: %v", e)
		}
	})
}

// TestRemoteFilesReadAndWriteThroughLocalCopies: a glob on memfs lists the
// data files (not sidecars), sorted; a remote CSV with its sidecar and a
// Parquet file by row group read as the local files do, under their
// remote names; a missing file is a one-line error naming it; a written
// table appears at its remote name only on Commit, never on Abort; and no
// temporary copy is left.
func TestRemoteFilesReadAndWriteThroughLocalCopies(t *testing.T) {
	noTempLeft(t)
	_, dir := beamtest.AdultRelease(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	writeParts(t, f("education.arrow"), []int{0, 2000, 5000}, 1000, f("p-1.csv"), f("p-0.parquet"))
	toMemfs(t, f("p-1.csv"), "memfs://io/p-1.csv")
	toMemfs(t, f("p-0.parquet"), "memfs://io/p-0.parquet")
	ctx := context.Background()
	files, err := listFiles(ctx, "memfs://io/p-*")
	if err != nil || !slices.Equal(files, []string{"memfs://io/p-0.parquet", "memfs://io/p-1.csv"}) {
		t.Fatalf("listFiles: %v, %v", files, err)
	}
	for _, name := range []string{"p-1.csv", "p-0.parquet"} {
		_, want, wantMeta := cmdtest.ReadTable(t, f(name))
		r, err := openTable("memfs://io/"+name, table.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Name() != "memfs://io/"+name || fmt.Sprint(r.Meta()) != fmt.Sprint(wantMeta) {
			t.Errorf("%s: name %s, metadata %v", name, r.Name(), r.Meta())
		}
		var n int64
		for {
			rec, err := r.Next()
			if err != nil {
				break
			}
			n += rec.NumRows()
		}
		r.Close()
		if n != int64(len(want)) {
			t.Errorf("%s: %d rows, want %d", name, n, len(want))
		}
	}
	var splits []fileSplit
	if err := splitFile("memfs://io/p-0.parquet", func(s fileSplit) { splits = append(splits, s) }); err != nil || len(splits) != 3 || splits[1].FirstRow != 1000 {
		t.Errorf("row groups of the remote Parquet file: %v, %v", splits, err)
	}
	r, err := splits[1].open()
	if err != nil {
		t.Fatal(err)
	}
	rec, err := r.Next()
	if err != nil || rec.NumRows() != 1000 {
		t.Errorf("row group 1: %v", err)
	}
	r.Close()

	_, err = openTable("memfs://io/missing.csv", table.ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "memfs://io/missing.csv") || strings.Contains(err.Error(), "\n") {
		t.Errorf("missing file: %q", err)
	}
	if _, err := listFiles(ctx, "nofs://b/x-*.csv"); err == nil || !strings.Contains(err.Error(), `"nofs"`) || strings.Contains(err.Error(), "\n") {
		t.Errorf("unknown filesystem: %q", err)
	}
	schema := table.StringSchema([]string{"x"})
	for _, commit := range []bool{false, true} {
		path := fmt.Sprintf("memfs://io/out-%v.csv", commit)
		w, err := createTable(path, schema, table.Meta{"m": "1"}, table.WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rw := table.NewRowWriter(w, schema, 0)
		rw.AppendStrings([]string{"a"})
		rw.Flush()
		rw.Release()
		if commit {
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		w.Abort()
		got, _ := listFiles(ctx, path+"*")
		all, _ := memfs.New(ctx).List(ctx, path+"*")
		if want := map[bool]int{false: 0, true: 2}[commit]; len(all) != want || (commit && len(got) != 1) {
			t.Errorf("commit %v: %v on memfs", commit, all)
		}
	}
	fromMemfs(t, "memfs://io/out-true.csv", f("out.csv"))
	if _, rows, meta := cmdtest.ReadTable(t, f("out.csv")); fmt.Sprint(rows) != "[[a]]" || meta["m"] != "1" {
		t.Errorf("uploaded table: %v %v", rows, meta)
	}
}

// TestEstimateAndEncryptOnMemfsMatchLocalPaths: estimate and encrypt on
// Prism with input and output on memfs:// (a filesystem the workers share,
// as they share gs:// on Dataflow) write what they write from and to local
// paths.
func TestEstimateAndEncryptOnMemfsMatchLocalPaths(t *testing.T) {
	rel, dir := beamtest.AdultRelease(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	ctx := context.Background()

	beamtest.Split(t, rel, f("shard-0.parquet"), f("shard-1.parquet"))
	beamtest.Split(t, rel, f("part-0.csv"), f("part-1.csv"))
	for _, n := range []string{"shard-0.parquet", "shard-1.parquet", "part-0.csv", "part-1.csv"} {
		toMemfs(t, f(n), "memfs://est/in/"+n)
	}
	for _, glob := range []string{"shard-*.parquet", "part-*.csv"} {
		args := []string{"--method", "inverse"}
		var o1, o2 strings.Builder
		if err := Estimate(ctx, Config{Input: f(glob), Output: f("local"), Runner: "prism", Args: args, Streams: &cli.Streams{Out: &o1, Err: &o1}}); err != nil {
			t.Fatalf("%v: %s", err, o1.String())
		}
		if err := Estimate(ctx, Config{Input: "memfs://est/in/" + glob, Output: "memfs://est/out/beam", Runner: "prism", Args: args, Streams: &cli.Streams{Out: &o2, Err: &o2}}); err != nil {
			t.Fatalf("%v: %s", err, o2.String())
		}
		if strings.ReplaceAll(o1.String(), f("local"), "memfs://est/out/beam") != o2.String() {
			t.Errorf("%s: stdout %q, from local paths %q", glob, o2.String(), o1.String())
		}
		for _, ext := range []string{".csv", ".counts.csv"} {
			fromMemfs(t, "memfs://est/out/beam"+ext, f("got"+ext))
			_, got, gotMeta := cmdtest.ReadTable(t, f("got"+ext))
			_, want, wantMeta := cmdtest.ReadTable(t, f("local"+ext))
			if len(want) < 10 || fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(gotMeta) != fmt.Sprint(wantMeta) {
				t.Errorf("%s: memfs%s differs from the local run's (%d rows, want %d)", glob, ext, len(got), len(want))
			}
		}
		if left, _ := memfs.New(ctx).List(ctx, "memfs://est/out/beam.counts.txt*"); len(left) > 0 {
			t.Errorf("the pipeline's counts file was left: %v", left)
		}
	}

	cb := filepath.Join(beamtest.MainRoot(t), "testdata", "adult", "codebook.json")
	writeKey(t, f("alice.prf"), 1)
	beamtest.Split(t, f("education.arrow"), f("smp.parquet")) // row groups of 1000 rows
	writeParts(t, f("education.arrow"), []int{0, 1234, 5000}, 1000, f("e-0.csv"), f("e-1.csv"))
	for _, n := range []string{"smp.parquet", "e-0.csv", "e-1.csv"} {
		toMemfs(t, f(n), "memfs://enc/in/"+n)
	}
	for _, tc := range []struct{ glob, ext string }{{"smp.parquet", ".parquet"}, {"e-*.csv", ".csv"}} {
		t.Run(tc.glob, func(t *testing.T) {
			run := func(in, out, key string) {
				t.Helper()
				err := Encrypt(ctx, Config{Input: in, Output: out, Runner: "prism", Streams: quiet(),
					Args: []string{"--codebook", cb, "--prf-key", f("alice.prf"), "--key-out", key, "--seed", "7", "--insecure-seed", "--shard-rows", "1300"}})
				if err != nil {
					t.Fatal(err)
				}
			}
			local := t.TempDir()
			run(f(tc.glob), filepath.Join(local, "enc"), filepath.Join(local, "a.key"))
			remote := "memfs://enc/out" + tc.ext + "/enc"
			run("memfs://enc/in/"+tc.glob, remote, filepath.Join(local, "b.key"))
			got := t.TempDir()
			names, _ := listFiles(ctx, remote+"-*")
			if len(names) != 4 {
				t.Fatalf("shards on memfs: %v", names)
			}
			for _, n := range names {
				fromMemfs(t, n, filepath.Join(got, remoteBase(n)))
			}
			_, want, wantMeta := shardRows(t, filepath.Join(local, "enc"), tc.ext)
			_, rows, meta := shardRows(t, filepath.Join(got, "enc"), tc.ext)
			sameRows(t, "ciphertext", rows, want)
			delete(meta, release.KeyColumns) // the key id is drawn at random
			delete(wantMeta, release.KeyColumns)
			sameMeta(t, "ciphertext", meta, wantMeta)
		})
	}
}

// TestSampleAndAnonymizeRefuseARemoteOutput: their workers write
// intermediate files next to --output through local paths, so a remote
// prefix is a usage error (naming the stage) before anything runs, and
// nothing is written.
func TestSampleAndAnonymizeRefuseARemoteOutput(t *testing.T) {
	rel, _ := beamtest.AdultRelease(t)
	toMemfs(t, rel, "memfs://refuse/in.csv")
	cb := filepath.Join(beamtest.MainRoot(t), "testdata", "adult", "codebook.json")
	ctx := context.Background()
	for stage, run := range map[string]func() error{
		"sample": func() error {
			return Sample(ctx, Config{Input: "memfs://refuse/in*", Output: "memfs://refuse/out", Runner: "prism", Streams: quiet(),
				Args: []string{"--secret", "s", "-m", "5", "--id", "id"}})
		},
		"anonymize": func() error {
			return Anonymize(ctx, Config{Input: "memfs://refuse/in*", Output: "memfs://refuse/out", Runner: "prism", Streams: quiet(),
				Args: []string{"--sensitive", "occupation", "--l", "5", "--codebook", cb, "--seed", "7", "--insecure-seed"}})
		},
	} {
		err := run()
		var u *cli.UsageError
		if err == nil || !strings.Contains(err.Error(), "pramkit-beam "+stage+" writes --output to a local path only") || !errors.As(err, &u) {
			t.Errorf("%s: %v", stage, err)
		}
		if out, _ := listFiles(ctx, "memfs://refuse/out*"); len(out) > 0 {
			t.Errorf("%s wrote %v", stage, out)
		}
	}
}

// TestPrivateTempDirIsRemovedWithWhatIsInIt: PrivateTempDir points TMPDIR
// at a new folder inside the current one; restoring removes it with the
// files left in it (Prism's loopback files) and puts TMPDIR back.
func TestPrivateTempDirIsRemovedWithWhatIsInIt(t *testing.T) {
	outer := os.TempDir()
	restore, err := PrivateTempDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := os.TempDir()
	if filepath.Dir(dir) != filepath.Clean(outer) {
		restore()
		t.Fatalf("TMPDIR %s, want a folder in %s", dir, outer)
	}
	f, err := os.CreateTemp("", "beamloopbackworker-*")
	if err != nil {
		restore()
		t.Fatal(err)
	}
	f.Close()
	restore()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there (%v)", dir, err)
	}
	if got := os.TempDir(); got != outer {
		t.Errorf("TMPDIR %s after restore, want %s", got, outer)
	}
}
