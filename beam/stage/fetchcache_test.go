package stage

import (
	"container/list"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"

	"github.com/pramkit/pramkit/beam/internal/beamtest"
	"github.com/pramkit/pramkit/pkg/table"
)

// fetchCounter gives the test a fresh process cache of the given budget
// (-1: from the environment) whose fetches it counts by path, and checks
// at the end that purging it leaves no temporary file.
type fetchCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func newFetchCache(t *testing.T, budget int64, delay time.Duration) *fetchCounter {
	t.Helper()
	noTempLeft(t)
	fc := &fetchCounter{n: map[string]int{}}
	old := remoteCache
	remoteCache = &fetchCache{budget: budget, byPath: map[string]*cachedCopy{}, lru: list.New(), onFetch: func(p string) {
		fc.mu.Lock()
		fc.n[p]++
		fc.mu.Unlock()
		time.Sleep(delay)
	}}
	t.Cleanup(func() { PurgeFetched(); remoteCache = old })
	return fc
}

func (fc *fetchCounter) count(path string) int {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.n[path]
}

// onDisk reports whether the cache's copy of path is on disk.
func copyOnDisk(t *testing.T, path string) bool {
	t.Helper()
	remoteCache.mu.Lock()
	e := remoteCache.byPath[path]
	remoteCache.mu.Unlock()
	if e == nil {
		return false
	}
	_, err := os.Stat(e.local)
	return err == nil
}

// TestFetchOnceForEveryRowGroupOfARemoteParquetFile: encrypt on Prism over
// a memfs Parquet file of 10 row groups (10 splits, and the driver's read
// of its metadata) fetches the file once, where it was fetched 11 times
// before the cache; and the result is the local run's.
func TestFetchOnceForEveryRowGroupOfARemoteParquetFile(t *testing.T) {
	fc := newFetchCache(t, -1, 0)
	_, dir := beamtest.AdultRelease(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	writeParts(t, f("education.arrow"), []int{0, 5000}, 500, f("rg.parquet"))
	r, err := table.Open(f("rg.parquet"), table.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := len(table.ParquetRowGroups(r)); g != 10 {
		t.Fatalf("%d row groups, want 10", g)
	}
	r.Close()
	toMemfs(t, f("rg.parquet"), "memfs://fetch1/rg.parquet")
	cb := filepath.Join(beamtest.MainRoot(t), "testdata", "adult", "codebook.json")
	writeKey(t, f("alice.prf"), 1)
	run := func(in, out string) {
		t.Helper()
		err := Encrypt(context.Background(), Config{Input: in, Output: out, Runner: "prism", Streams: quiet(),
			Args: []string{"--codebook", cb, "--prf-key", f("alice.prf"), "--key-out", out + ".key", "--seed", "7", "--insecure-seed", "--shard-rows", "2000"}})
		if err != nil {
			t.Fatal(err)
		}
	}
	run("memfs://fetch1/rg.parquet", f("remote"))
	if n := fc.count("memfs://fetch1/rg.parquet"); n != 1 {
		t.Errorf("the file was fetched %d times, want once", n)
	}
	run(f("rg.parquet"), f("local"))
	_, want, _ := shardRows(t, f("local"), ".parquet")
	_, got, _ := shardRows(t, f("remote"), ".parquet")
	sameRows(t, "ciphertext", got, want)
}

// TestFetchOnceForConcurrentOpens: eight readers opening row groups of one
// remote file at once share one fetch (the others wait for it), and each
// reads its row group.
func TestFetchOnceForConcurrentOpens(t *testing.T) {
	fc := newFetchCache(t, -1, 100*time.Millisecond)
	_, dir := beamtest.AdultRelease(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	writeParts(t, f("education.arrow"), []int{0, 4000}, 500, f("rg.parquet"))
	toMemfs(t, f("rg.parquet"), "memfs://fetch2/rg.parquet")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for g := range 8 {
		wg.Go(func() {
			r, err := openTable("memfs://fetch2/rg.parquet", table.ReadOptions{RowGroups: []int{g}})
			if err != nil {
				errs[g] = err
				return
			}
			defer r.Close()
			rec, err := r.Next()
			if err == nil && rec.NumRows() != 500 {
				t.Errorf("row group %d: %d rows", g, rec.NumRows())
			}
			errs[g] = err
		})
	}
	wg.Wait()
	for g, err := range errs {
		if err != nil {
			t.Errorf("row group %d: %v", g, err)
		}
	}
	if n := fc.count("memfs://fetch2/rg.parquet"); n != 1 {
		t.Errorf("fetched %d times, want once", n)
	}
	if !copyOnDisk(t, "memfs://fetch2/rg.parquet") {
		t.Errorf("the copy was not kept after its readers closed (the budget is 4 GiB)")
	}
}

// TestFetchCacheEvictsIdleCopiesBeyondItsBudget: with room for two copies
// of 1000 bytes, a third evicts the least recently used idle one (its file
// removed), a copy in use is never evicted, a reused copy is not fetched
// again, and a changed remote file (new size) is.
func TestFetchCacheEvictsIdleCopiesBeyondItsBudget(t *testing.T) {
	fc := newFetchCache(t, 2500, 0)
	ctx := context.Background()
	p := func(name string) string { return "memfs://fetch3/" + name }
	for _, n := range []string{"a", "b", "c", "d"} {
		memfs.Write(p(n), []byte(strings.Repeat(n, 1000)))
	}
	get := func(name string) *cachedCopy {
		t.Helper()
		e, err := remoteCache.acquire(ctx, p(name))
		if err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(e.local); err != nil || len(b) == 0 || string(b[0]) != name {
			t.Fatalf("copy of %s: %v", name, err)
		}
		return e
	}
	for _, n := range []string{"a", "b", "c"} {
		remoteCache.release(get(n))
	}
	if copyOnDisk(t, p("a")) || !copyOnDisk(t, p("b")) || !copyOnDisk(t, p("c")) {
		t.Errorf("after a, b, c: want a evicted, b and c kept")
	}
	remoteCache.release(get("b")) // b is now more recent than c
	if fc.count(p("b")) != 1 {
		t.Errorf("b fetched %d times", fc.count(p("b")))
	}
	a := get("a") // evicts c
	if copyOnDisk(t, p("c")) || !copyOnDisk(t, p("b")) {
		t.Errorf("want c evicted, b kept")
	}
	aLocal := a.local
	for _, n := range []string{"b", "c", "d", "b"} {
		remoteCache.release(get(n))
	}
	if _, err := os.Stat(aLocal); err != nil {
		t.Errorf("the copy in use was removed: %v", err)
	}
	remoteCache.release(a)

	// A changed file is fetched again; the old copy's reader keeps it
	// until it closes, then it is removed.
	old := get("d")
	n0 := fc.count(p("d"))
	memfs.Write(p("d"), []byte(strings.Repeat("d", 1200)))
	e := get("d")
	if fc.count(p("d")) != n0+1 || e == old {
		t.Errorf("the changed file was fetched %d times", fc.count(p("d")))
	}
	if b, _ := os.ReadFile(e.local); len(b) != 1200 {
		t.Errorf("new copy has %d bytes", len(b))
	}
	if b, _ := os.ReadFile(old.local); len(b) != 1000 {
		t.Errorf("the old reader's copy has %d bytes", len(b))
	}
	oldLocal := old.local
	remoteCache.release(old)
	if _, err := os.Stat(oldLocal); err == nil {
		t.Errorf("the stale copy was kept after its reader closed")
	}
	remoteCache.release(e)
	remoteCache.mu.Lock()
	if remoteCache.bytes > 2500 || remoteCache.bytes < 0 {
		t.Errorf("%d bytes accounted", remoteCache.bytes)
	}
	remoteCache.mu.Unlock()
}

// TestFetchCacheBudgetFromTheEnvironment: the budget is bytes or a number
// with a binary suffix; 0 keeps no copy; a bad value is a one-line error
// naming the variable; unset, it is the documented 4 GiB.
func TestFetchCacheBudgetFromTheEnvironment(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "123": 123, "4GiB": 4 << 30, "512 MiB": 512 << 20, "1TiB": 1 << 40} {
		if got, err := parseBytes(s); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "-1", "4G", "x", "1.5GiB"} {
		if _, err := parseBytes(s); err == nil || !strings.Contains(err.Error(), FetchCacheEnv) {
			t.Errorf("%q: %v", s, err)
		}
	}
	memfs.Write("memfs://fetch4/a", []byte("aaaa"))
	t.Setenv(FetchCacheEnv, "0")
	fc := newFetchCache(t, -1, 0)
	for range 2 {
		e, err := remoteCache.acquire(context.Background(), "memfs://fetch4/a")
		if err != nil {
			t.Fatal(err)
		}
		remoteCache.release(e)
	}
	if fc.count("memfs://fetch4/a") != 2 || copyOnDisk(t, "memfs://fetch4/a") {
		t.Errorf("budget 0: %d fetches, copy kept %v", fc.count("memfs://fetch4/a"), copyOnDisk(t, "memfs://fetch4/a"))
	}
	t.Setenv(FetchCacheEnv, "lots")
	remoteCache.budget = -1
	if _, err := remoteCache.acquire(context.Background(), "memfs://fetch4/a"); err == nil || !strings.Contains(err.Error(), FetchCacheEnv+`="lots"`) {
		t.Errorf("bad budget: %v", err)
	}
	t.Setenv(FetchCacheEnv, "")
	remoteCache.budget = -1
	remoteCache.mu.Lock()
	b, _ := remoteCache.budgetLocked()
	remoteCache.mu.Unlock()
	if b != 4<<30 {
		t.Errorf("default budget %d", b)
	}
}
