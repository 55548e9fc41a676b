package table

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// partialInfix names the temporary files outputs are written to before
// they are renamed into place: ".NAME.pramkit-partial-XXXXXXXX". Only a
// SIGKILL (or a power cut) can leave one behind, and the name says what it
// is, so that it can be deleted without a second thought.
const partialInfix = ".pramkit-partial-"

// partials tracks this process's temporary output files, so that a signal
// handler can remove them (RemovePartialFiles). The same lock is held while
// a CSV and its sidecar are renamed into place, so that a signal never
// lands between the two renames.
var partials = struct {
	sync.Mutex
	files map[string]struct{}
	temps map[string]struct{} // TrackTemp's folders and files
	dying bool
}{files: map[string]struct{}{}, temps: map[string]struct{}{}}

// errDying is returned by any file operation that starts after
// RemovePartialFiles: the process is about to end.
var errDying = errors.New("interrupted")

// createPartial creates a new temporary file beside dst with permission
// perm, which the umask narrows (no Chmod afterwards can widen it).
func createPartial(dst string, perm os.FileMode) (*os.File, error) {
	dir, base := filepath.Split(dst)
	if dir == "" {
		dir = "."
	}
	partials.Lock()
	defer partials.Unlock()
	if partials.dying {
		return nil, errDying
	}
	for range 100 {
		var r [4]byte
		rand.Read(r[:])
		name := filepath.Join(dir, "."+base+partialInfix+hex.EncodeToString(r[:]))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		partials.files[name] = struct{}{}
		return f, nil
	}
	return nil, fmt.Errorf("cannot find a free temporary file name in %s", dir)
}

// forgetPartial drops name from the registry once it was renamed or removed.
// The caller holds partials' lock.
func forgetPartial(name string) { delete(partials.files, name) }

// RemovePartialFiles removes every temporary output file of this process
// and makes later creations and commits fail. A signal handler calls it
// just before the process ends (pkg/cli), so that an interrupted run leaves
// no half-written rows or keys behind.
func RemovePartialFiles() {
	partials.Lock()
	defer partials.Unlock()
	partials.dying = true
	for name := range partials.files {
		os.Remove(name)
		forgetPartial(name)
	}
	for path := range partials.temps {
		os.RemoveAll(path)
		delete(partials.temps, path)
	}
}

// TrackTemp registers path, a temporary file or folder of this run (a
// spooled copy of standard input, a folder of spill files), for removal
// by RemovePartialFiles: a run ended by a signal skips its deferred
// clean-ups, and the copy of a sensitive input would stay in $TMPDIR.
// forget unregisters it; call it once path is removed. After
// RemovePartialFiles it removes path at once and fails: the process is
// about to end.
func TrackTemp(path string) (forget func(), err error) {
	partials.Lock()
	defer partials.Unlock()
	if partials.dying {
		os.RemoveAll(path)
		return nil, errDying
	}
	partials.temps[path] = struct{}{}
	return func() {
		partials.Lock()
		defer partials.Unlock()
		delete(partials.temps, path)
	}, nil
}
