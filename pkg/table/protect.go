package table

import (
	"fmt"
	"os"
	"path/filepath"
)

// checkDestination refuses an output path that would destroy something the
// run or the user needs, in one place for every output (-o, --groups,
// --key-out, --save-codebook, --new-secret): one of opt.Inputs (the run's
// inputs and its other outputs, key files included) or their sidecars; and
// any existing key or secret file, recognised by content, at the path or,
// for a CSV output (withSidecar), at the sidecar it would replace. A key
// output with NoClobber off (--force) may replace a key file, and only that.
func checkDestination(path string, opt WriteOptions, withSidecar bool) error {
	flag := opt.Flag
	if flag == "" {
		flag = "-o"
	}
	targets := []string{path}
	if withSidecar {
		targets = append(targets, sidecarPath(path))
	}
	for _, in := range opt.Inputs {
		if IsStdio(in) {
			continue
		}
		for _, t := range targets {
			switch {
			case samePath(t, in) && t == path:
				return fmt.Errorf("%s: the output is also an input; write to another file", path)
			case samePath(t, in):
				return fmt.Errorf("%s: writing it would replace %s, which this run reads or writes; choose another output name", path, in)
			case samePath(t, sidecarPath(in)):
				return fmt.Errorf("%s: is the metadata sidecar of %s, which this run reads or writes; refusing to overwrite it with %s; choose another output name", t, in, flag)
			}
		}
	}
	for _, t := range targets {
		k := keyKind(t)
		if k == NotKey || (opt.Key && !opt.NoClobber && (k == KeyFile || k == KeySidecar)) {
			continue
		}
		if t != path {
			return fmt.Errorf("%s: its sidecar %s is %s; refusing to overwrite it with %s; choose another output name", path, t, k, flag)
		}
		return fmt.Errorf("%s: is %s; refusing to overwrite it with %s; choose another output name", t, k, flag)
	}
	return nil
}

// samePath reports whether a and b name the same file: the same inode when
// both exist, else the same absolute path.
func samePath(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(sa, sb)
	}
	if errA == nil || errB == nil {
		return false // one exists, the other does not
	}
	aa, err1 := filepath.Abs(a)
	ab, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == ab
}

// outputPerm is the permission a new output is created with, before the
// umask narrows it: opt.Perm (0666 when 0, like a shell redirection), never
// wider than any input it is computed from, so rows or keys read from an
// owner-only file are not written to a world-readable one. Secrets (a
// sampling secret, a PRF key) only select or key the computation and never
// reach the output, so their mode does not count; key files do (decrypt's
// output is the plaintext they protect).
func outputPerm(opt WriteOptions) os.FileMode {
	perm := opt.Perm
	if perm == 0 {
		perm = 0o666
	}
	for _, in := range opt.Inputs {
		if IsStdio(in) {
			continue
		}
		st, err := os.Stat(in)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		if k := secretKind(in, st.Size()); k != NotKey {
			continue
		}
		perm &= st.Mode().Perm()
	}
	return perm
}
