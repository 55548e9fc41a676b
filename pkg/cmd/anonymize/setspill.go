package anonymize

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/table"
)

// setSpill holds Anatomy's set types (each one's ℓ values' labels and
// groups) in a private temporary file, so that the sensitive table can be
// written after the plan and the codebook are gone. The table's writer
// holds its metadata, the codebook's JSON (10 MB at 1M values, and as
// much again while it is encoded), and the plan's Dealer 15 MB more at
// 1M values, the codebook 16: together they kept the live heap at the
// memory limit for 4 s of back-to-back collections (runAnatomy). The
// file takes a label and its length a value and a group count per type:
// 33 MB at 1M values of 7 bytes.
type setSpill struct {
	dir    string
	forget func()
	path   string
	l      int
}

// spillSets writes column 0's set types of plan (Plan.EachSet), with the
// values' labels label(v), to a private temporary file in $TMPDIR; remove
// removes it.
func spillSets(plan *anonymize.Plan, l int, label func(int) string) (s *setSpill, err error) {
	dir, err := os.MkdirTemp("", "pramkit-anonymize-*")
	if err != nil {
		return nil, fmt.Errorf("cannot make a temporary folder for the groups' value sets: %w", err)
	}
	// The sets are about the sensitive values: a signal must not leave them.
	forget, err := table.TrackTemp(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s = &setSpill{dir: dir, forget: forget, path: filepath.Join(dir, "sets"), l: l}
	defer func() {
		if err != nil {
			s.remove()
		}
	}()
	f, err := os.OpenFile(s.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot keep the groups' value sets in a temporary file: %w", err)
	}
	w := bufio.NewWriter(f)
	var buf []byte
	err = plan.EachSet(0, func(_ int, vals []uint32, _, groups int64) error {
		buf = binary.AppendUvarint(buf[:0], uint64(groups))
		for _, v := range vals {
			lab := label(int(v))
			buf = binary.AppendUvarint(buf, uint64(len(lab)))
			buf = append(buf, lab...)
		}
		_, err := w.Write(buf)
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("cannot keep the groups' value sets in a temporary file (in %s; set TMPDIR to a folder with room): %w", os.TempDir(), err)
	}
	return s, nil
}

// each calls fn with the set types in the order written: type t's values'
// labels, its first group (the groups of the types before it) and its
// groups.
func (s *setSpill) each(fn func(t int, labels []string, base, groups int64) error) error {
	f, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("cannot read back the groups' value sets: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	labels := make([]string, s.l)
	var lab []byte
	var base int64
	for t := 0; ; t++ {
		groups, err := binary.ReadUvarint(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		for j := range labels {
			if err != nil {
				break
			}
			var n uint64
			if n, err = binary.ReadUvarint(r); err != nil {
				break
			}
			lab = slices.Grow(lab[:0], int(n))[:n]
			if _, err = io.ReadFull(r, lab); err != nil {
				break
			}
			labels[j] = string(lab)
		}
		if err != nil {
			return fmt.Errorf("cannot read back the groups' value sets: %w", err)
		}
		if err := fn(t, labels, base, int64(groups)); err != nil {
			return err
		}
		base += int64(groups)
	}
}

// remove removes the file and its folder.
func (s *setSpill) remove() {
	os.RemoveAll(s.dir)
	s.forget()
}
