//go:build !linux

package cli

// AdviseHugePages does nothing outside Linux: transparent huge pages are
// a Linux feature (see hugepages_linux.go).
func AdviseHugePages() {}

// ReleaseInitPages does nothing outside Linux (see initpages_linux.go).
func ReleaseInitPages() {}
