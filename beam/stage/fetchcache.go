package stage

import (
	"container/list"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"

	"github.com/pramkit/pramkit/pkg/table"
)

// A remote Parquet file is split by row group, and a worker often reads
// several row groups of one file (and, on Prism, the driver has just read
// its footer in the same process): without a cache each split would copy
// the whole file again, a file of G row groups crossing the network G+1
// times. So the local copies are kept in a process-wide cache: one copy
// per remote file and version, fetched once even when several DoFns open
// it at once (the first fetches, the others wait for it), shared by the
// readers open on it and kept after the last one closes while the idle
// copies fit in a disk budget; beyond it the least recently used idle
// copies are removed. A copy in use is never removed, so the disk a worker
// needs is the budget or the copies it reads at once, whichever is larger.

// FetchCacheEnv names the environment variable that sets the disk budget
// of the cache of fetched remote files: bytes, or a number with a KiB,
// MiB, GiB or TiB suffix; 0 removes every copy when its last reader
// closes (one fetch per split, the old behaviour).
const FetchCacheEnv = "PRAMKIT_BEAM_FETCH_CACHE"

// defaultFetchBudget is the budget when FetchCacheEnv is unset: room for a
// few census Parquet files of a GiB on a worker's usual disk.
const defaultFetchBudget = 4 << 30

// remoteVersion tells copies of one path apart: the file's size and, where
// the filesystem gives it, its modification time (and the same of a CSV's
// sidecar). A changed file is fetched again; a change that keeps the size
// on a filesystem without modification times (memfs) is not seen.
type remoteVersion struct {
	size, sideSize int64 // sideSize -1: no sidecar
	mod, sideMod   time.Time
}

// cachedCopy is one fetched file: dir holds local and its sidecar.
type cachedCopy struct {
	path       string
	ver        remoteVersion
	dir, local string
	bytes      int64
	refs       int
	stale      bool          // a newer version replaced it in the map
	ready      chan struct{} // closed when the fetch ended (err set)
	err        error
	idle       *list.Element // in fetchCache.lru while refs == 0
}

// fetchCache is the process-wide cache of fetched copies.
type fetchCache struct {
	mu     sync.Mutex
	budget int64 // -1: not read from the environment yet
	byPath map[string]*cachedCopy
	lru    *list.List // idle copies, least recently used first
	bytes  int64      // every copy on disk, in use or idle
	// onFetch, when set (tests), is called before each fetch of a file.
	onFetch func(path string)
}

var remoteCache = &fetchCache{budget: -1, byPath: map[string]*cachedCopy{}, lru: list.New()}

// parseBytes parses FetchCacheEnv's value.
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for i, suf := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if strings.HasSuffix(t, suf) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, suf)), int64(1)<<(10*(i+1))
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%s=%q: give a number of bytes, optionally followed by KiB, MiB, GiB or TiB (e.g. 4GiB; 0 keeps no copy)", FetchCacheEnv, s)
	}
	return n * mult, nil
}

// budgetLocked is the disk budget, read from the environment once.
func (c *fetchCache) budgetLocked() (int64, error) {
	if c.budget >= 0 {
		return c.budget, nil
	}
	b := int64(defaultFetchBudget)
	if s, ok := os.LookupEnv(FetchCacheEnv); ok && s != "" {
		var err error
		if b, err = parseBytes(s); err != nil {
			return 0, err
		}
	}
	c.budget = b
	return b, nil
}

// statRemote stats the remote file (and a CSV's sidecar).
func statRemote(ctx context.Context, path string) (remoteVersion, error) {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return remoteVersion{}, oneLine(err)
	}
	defer fs.Close()
	v := remoteVersion{sideSize: -1}
	if v.size, err = fs.Size(ctx, path); err != nil {
		return v, fmt.Errorf("cannot read %s: %v", path, oneLine(err))
	}
	lm, hasMod := fs.(filesystem.LastModifiedGetter)
	if hasMod {
		if v.mod, err = lm.LastModified(ctx, path); err != nil {
			return v, fmt.Errorf("cannot read %s: %v", path, oneLine(err))
		}
	}
	if table.FormatFromPath(path) == table.CSV {
		side := path + ".meta.json"
		if n, err := fs.Size(ctx, side); err == nil {
			v.sideSize = n
			if hasMod {
				v.sideMod, _ = lm.LastModified(ctx, side)
			}
		}
	}
	return v, nil
}

// acquire returns the local copy of the remote file path, fetching it
// unless the cache holds its current version; release it when done.
func (c *fetchCache) acquire(ctx context.Context, path string) (*cachedCopy, error) {
	ver, err := statRemote(ctx, path)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	budget, err := c.budgetLocked()
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	if e := c.byPath[path]; e != nil {
		if e.ver == ver {
			c.useLocked(e)
			c.mu.Unlock()
			<-e.ready
			if e.err != nil {
				c.release(e)
				return nil, e.err
			}
			return e, nil
		}
		// The file changed: the old copy goes once its readers close.
		delete(c.byPath, path)
		e.stale = true
		if e.refs == 0 {
			c.removeLocked(e)
		}
	}
	e := &cachedCopy{path: path, ver: ver, refs: 1, ready: make(chan struct{}), bytes: ver.size + max(ver.sideSize, 0)}
	c.byPath[path] = e
	c.bytes += e.bytes
	c.evictLocked(budget)
	hook := c.onFetch
	c.mu.Unlock()

	if hook != nil {
		hook(path)
	}
	e.err = e.fetch(ctx)
	close(e.ready)
	if e.err != nil {
		c.mu.Lock()
		if c.byPath[path] == e {
			delete(c.byPath, path)
		}
		e.stale = true
		c.mu.Unlock()
		c.release(e)
		return nil, e.err
	}
	return e, nil
}

// fetch copies the file (and a CSV's sidecar) into a folder of its own.
func (e *cachedCopy) fetch(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "pramkit-beam-in-*")
	if err != nil {
		return err
	}
	e.dir, e.local = dir, filepath.Join(dir, remoteBase(e.path))
	if err := fetch(ctx, e.path, e.local); err != nil {
		return err
	}
	if e.ver.sideSize >= 0 {
		return fetch(ctx, e.path+".meta.json", e.local+".meta.json")
	}
	return nil
}

// useLocked takes a reference on e, taking it off the idle list.
func (c *fetchCache) useLocked(e *cachedCopy) {
	e.refs++
	if e.idle != nil {
		c.lru.Remove(e.idle)
		e.idle = nil
	}
}

// release drops a reference; the last one makes e idle (or removes it,
// when stale or over the budget).
func (c *fetchCache) release(e *cachedCopy) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.refs--
	if e.refs > 0 {
		return
	}
	if e.stale {
		c.removeLocked(e)
		return
	}
	e.idle = c.lru.PushBack(e)
	c.evictLocked(c.budget)
}

// evictLocked removes idle copies, least recently used first, until the
// copies on disk fit in budget or none is idle.
func (c *fetchCache) evictLocked(budget int64) {
	for c.bytes > budget && c.lru.Len() > 0 {
		e := c.lru.Front().Value.(*cachedCopy)
		if c.byPath[e.path] == e {
			delete(c.byPath, e.path)
		}
		c.removeLocked(e)
	}
}

// removeLocked deletes an unused copy from disk and from the accounts.
func (c *fetchCache) removeLocked(e *cachedCopy) {
	if e.idle != nil {
		c.lru.Remove(e.idle)
		e.idle = nil
	}
	if e.dir != "" {
		os.RemoveAll(e.dir)
		e.dir = ""
	}
	c.bytes -= e.bytes
	e.bytes = 0
}

// PurgeFetched removes every idle copy (pramkit-beam calls it before
// exiting, tests before checking that no temporary file is left).
func PurgeFetched() {
	c := remoteCache
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evictLocked(-1)
}

// PrivateTempDir points TMPDIR at a new folder inside the current
// temporary folder, for the rest of the process, and returns a function
// that removes the folder and puts TMPDIR back. Prism's in-process
// (loopback) workers create an empty file "beamloopbackworker-*" in the
// temporary folder for every pipeline and never remove it (a TODO in the
// SDK's runnerlib.Execute, apache/beam#27569): a cron job running
// pramkit-beam left one a run, and the test suite some 30 a run. The
// driver's own temporary copies of remote files go there too.
func PrivateTempDir() (restore func(), err error) {
	dir, err := os.MkdirTemp("", "pramkit-beam-run-")
	if err != nil {
		return nil, err
	}
	old, had := os.LookupEnv("TMPDIR")
	if err := os.Setenv("TMPDIR", dir); err != nil {
		os.Remove(dir)
		return nil, err
	}
	return func() {
		os.RemoveAll(dir)
		if had {
			os.Setenv("TMPDIR", old)
		} else {
			os.Unsetenv("TMPDIR")
		}
	}, nil
}
