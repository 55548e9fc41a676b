package table

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing bytes [off, off+n) of f
// to the disk now, without waiting for them (sync_file_range(2) with
// SYNC_FILE_RANGE_WRITE). It is a hint: the caller's fsync still makes
// the file durable, and an error (a file system without it, a pipe) only
// means the hint was not taken.
func startWriteback(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	}); err != nil {
		return err
	}
	return serr
}
