//go:build unix

package table

import (
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an advisory flock(2) on the folder holding path: exclusive
// while a writer renames a CSV and its sidecar into place, shared while a
// reader opens the pair, so that a reader never sees one file of a pair
// without the other, and two runs writing the same -o commit one after the
// other. The folder itself is locked, not a lock file beside the output, so
// nothing is left behind. Locking is best effort: on a file system that
// refuses flock, the digest in the sidecar still makes readers refuse a
// mismatched pair. The returned function releases the lock.
func lockDir(path string, exclusive bool) func() {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return func() {}
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err = syscall.Flock(int(d.Fd()), how)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		d.Close()
		return func() {}
	}
	return func() {
		syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
		d.Close()
	}
}
