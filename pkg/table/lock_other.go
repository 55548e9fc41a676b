//go:build !unix

package table

// lockDir does nothing where flock(2) does not exist: the digest in the
// sidecar still makes readers refuse a mismatched pair.
func lockDir(string, bool) func() { return func() {} }
