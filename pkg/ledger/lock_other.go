//go:build !unix

package ledger

import (
	"errors"
	"os"
)

// lock is not available without flock(2): refusing is safer than a ledger
// that two runs could update at once.
func lock(f *os.File, wait func()) error {
	return errors.New("file locking is not supported on this system; pass --no-ledger and keep count of releases yourself")
}
