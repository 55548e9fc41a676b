// Package ledger is the release ledger of perturb: one JSON line per
// γ-diagonal release, keyed by the sample fingerprint, so that releasing
// the same sample again (from another copy of its encrypted files, in
// another run, by another cron job sharing the ledger) is noticed and its
// privacy loss composed (SPEC §3.6; pram.ComposedEpsilonProduct).
//
// A release's privacy loss depends on every earlier release of the same
// sample, which the output file alone cannot know: two runs on the same
// encrypted files each write a file that looks like a first release. The
// ledger is the record that survives between runs.
//
// Concurrency: Open takes an exclusive advisory lock (flock(2)) on the
// ledger file and holds it until Close, so a caller's look-up, its work
// and its Append form one critical section: of two processes releasing
// the same sample at once, the second waits, then sees the first's entry.
// The lock is advisory: it binds programs that take it (every perturb),
// not editors.
package ledger
