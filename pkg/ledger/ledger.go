package ledger

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Entry is one release, one JSON line of the ledger.
type Entry struct {
	// Fingerprint identifies the sample (the sample stage's fingerprint of
	// its secret, n and m). Required.
	Fingerprint string `json:"fingerprint"`
	// SampleID is the sample's "sample_id" metadata item, when it has one.
	SampleID string `json:"sample_id,omitempty"`
	// N and M are the sample's full-table and sampled row counts.
	N int64 `json:"n"`
	M int64 `json:"m"`
	// Gamma and Epsilon are this release's γ and its ε alone
	// (Lin–Wang–Rane Theorem III.2).
	Gamma   float64 `json:"gamma"`
	Epsilon float64 `json:"epsilon"`
	// EpsilonComposed is the ε of all releases of the sample up to and
	// including this one; equal to Epsilon for a first release.
	EpsilonComposed float64 `json:"epsilon_composed"`
	// Releases counts the releases of the sample, this one included.
	Releases int `json:"releases"`
	// Time is when the release was recorded, RFC 3339 in UTC.
	Time time.Time `json:"time"`
	// Output is the release file's path ("-" for standard output).
	Output string `json:"output"`
	// ToolVersion is the pramkit build that made the release.
	ToolVersion string `json:"tool_version"`
	// NoiseID identifies the keyed noise of a perturb --noise-key release
	// (release.NoiseID; public): a later run with the same NoiseID draws
	// the same offsets on the same sample, so it is a retry of this
	// release, not a new one.
	NoiseID string `json:"noise_id,omitempty"`
}

// check refuses an entry that could not be composed later.
func (e *Entry) check() error {
	switch {
	case e.Fingerprint == "":
		return errors.New("no fingerprint")
	case !(e.Gamma > 1):
		return fmt.Errorf("γ = %v is not > 1", e.Gamma)
	case e.Releases < 1:
		return fmt.Errorf("releases = %d is not ≥ 1", e.Releases)
	case e.Time.IsZero():
		return errors.New("no time")
	}
	return nil
}

// DefaultPath is where perturb keeps the ledger unless told otherwise:
// $XDG_STATE_HOME/pramkit/releases.jsonl when XDG_STATE_HOME is an absolute
// path (the XDG Base Directory specification ignores a relative one), else
// $HOME/.local/state/pramkit/releases.jsonl.
func DefaultPath() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "pramkit", "releases.jsonl"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", errors.New("neither XDG_STATE_HOME nor HOME is set, so the release ledger has no default place")
	}
	return filepath.Join(home, ".local", "state", "pramkit", "releases.jsonl"), nil
}

// Ledger is an open, locked ledger file.
type Ledger struct {
	path string
	f    *os.File
}

// Open opens (creating it, mode 0600, and its directory, mode 0700, when
// missing) the ledger at path and takes its exclusive lock, waiting for
// another holder to close it. wait, when not nil, is called once before
// waiting, so that the caller can say why it stalls.
func Open(path string, wait func()) (*Ledger, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("release ledger: %w", err)
	}
	// The lock is the open file's: a ledger replaced at its path (an
	// editor, sed -i, cp and mv) while another run locked the old file is
	// another file, so it is opened again until the file locked is the
	// one at the path.
	for range 100 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("release ledger: %w", err)
		}
		if err := lock(f, wait); err != nil {
			f.Close()
			return nil, fmt.Errorf("release ledger %s: cannot lock it: %w", path, err)
		}
		l := &Ledger{path: path, f: f}
		if err := l.stillAtPath(); err == nil {
			return l, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("release ledger %s: it is replaced again and again while this run opens it; stop what rewrites it and run again", path)
}

// stillAtPath checks that the locked file is the one at the ledger's
// path: a ledger replaced while a run held the old file's lock would take
// that run's record in a file nobody reads, and another run, locking the
// new file, would not wait for it.
func (l *Ledger) stillAtPath() error {
	a, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("release ledger %s: %w", l.path, err)
	}
	b, err := os.Stat(l.path)
	if err != nil || !os.SameFile(a, b) {
		return fmt.Errorf("release ledger %s: it was replaced or removed while this run held it (another program rewrote it); nothing was released: run again", l.path)
	}
	return nil
}

// Path is the ledger file's path.
func (l *Ledger) Path() string { return l.path }

// Close releases the lock and closes the file.
func (l *Ledger) Close() error {
	return l.f.Close() // closing the descriptor drops its flock
}

// Lookup returns the entries of fingerprint in the order they were
// appended. A line that is not an entry is an error naming the ledger and
// the line: a damaged ledger must not silently forget releases.
func (l *Ledger) Lookup(fingerprint string) ([]Entry, error) {
	if _, err := l.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("release ledger %s: %w", l.path, err)
	}
	var out []Entry
	br := bufio.NewReader(l.f)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) && len(b) == 0 {
			return out, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("release ledger %s: %w", l.path, err)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		// Unknown fields are allowed, so that a newer perturb's records
		// still read; a missing required field is not.
		var e Entry
		derr := json.Unmarshal(b, &e)
		if derr == nil {
			derr = e.check()
		}
		if derr == nil && !bytes.HasSuffix(b, []byte("\n")) {
			derr = errors.New("the line is cut short")
		}
		if derr != nil {
			return nil, fmt.Errorf("release ledger %s, line %d: not a release record (%v): repair or delete that line (each line is one JSON release record written by perturb), or pass --ledger FILE to use another ledger", l.path, line, derr)
		}
		if e.Fingerprint == fingerprint {
			out = append(out, e)
		}
	}
}

// Append writes e as one line and syncs the file. On failure the ledger is
// truncated back to its previous size, so a half-written line never stays.
// The returned Undo removes the line again (while the ledger is still
// open): the caller records a release before committing its output, and
// undoes the record if the commit fails.
func (l *Ledger) Append(e Entry) (undo func() error, err error) {
	e.Time = e.Time.UTC().Truncate(time.Second)
	if err := e.check(); err != nil {
		return nil, fmt.Errorf("ledger.Append: %w", err)
	}
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("ledger.Append: %w", err)
	}
	if err := l.stillAtPath(); err != nil {
		return nil, err
	}
	st, err := l.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("release ledger %s: %w", l.path, err)
	}
	size := st.Size()
	undo = func() error {
		if err := l.f.Truncate(size); err != nil {
			return fmt.Errorf("release ledger %s: could not remove the record of a failed release: %w; delete its last line by hand", l.path, err)
		}
		return l.f.Sync()
	}
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		undo()
		return nil, fmt.Errorf("release ledger %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		undo()
		return nil, fmt.Errorf("release ledger %s: %w", l.path, err)
	}
	return undo, nil
}
