//go:build !unix

package cli

// handleSignals does nothing where POSIX signals do not exist.
func handleSignals() (stop func()) { return func() {} }

func isBrokenPipe(error) bool { return false }
