// Package cmdtest supports the tests of the pramkit commands: it runs a
// command in-process the way its Main does, checks the way a bad
// invocation must fail (exit code, a one-line message, no output file) and
// reads tables back.
//
// It lives in internal/ rather than next to one command because every
// command's tests use it (estimate's as much as perturb's), and a test of
// estimate should not import a package of encrypt to run itself;
// internal/releasetest keeps what is about encrypt's files
// (sample-stage tables, codebooks) and forwards Run and ReadTable here.
package cmdtest
