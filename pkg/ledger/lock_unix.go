//go:build unix

package ledger

import (
	"errors"
	"os"
	"syscall"
)

// lock takes an exclusive flock on f: first without blocking, and if
// another process holds it, calls wait and blocks.
func lock(f *os.File, wait func()) error {
	fd := int(f.Fd())
	err := flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		return err
	}
	if wait != nil {
		wait()
	}
	return flock(fd, syscall.LOCK_EX)
}

// flock retries on EINTR.
func flock(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
