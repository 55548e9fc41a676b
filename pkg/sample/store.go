package sample

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/pramkit/pramkit/pkg/table"
)

// Budget is the bytes of kept rows a sampler holds in memory (estimated:
// cells, their headers and the item, as allocated); past it the rows go to
// sorted runs in temporary files. 16 MiB keeps a sample run within the
// tools' 100 MB whatever m: the heap of 1M kept rows of three short cells
// was 220 MB. It is a variable so that tests can make samplers spill.
var Budget int64 = 16 << 20

// Dir is where samplers make their private folder of runs; "" means
// os.TempDir(). A variable so that tests can point it elsewhere.
var Dir = ""

// mergeWidth is how many runs of one level are merged into one run of the
// next: runs of level L hold about mergeWidth^L spills' rows, every row is
// rewritten once per level (log_16 of the spills: twice for 10M rows of
// seven columns), and there are at most mergeWidth−1 runs per level, so
// the final merge reads a few dozen files whatever the rows.
const mergeWidth = 16

// runBuffer is the read and write buffer of a run file.
const runBuffer = 32 << 10

// store holds the rows a sampler keeps, in (priority, index) order once
// sorted: in memory up to Budget bytes, then as sorted runs in files of a
// private folder (mode 0700, files 0600, each unlinked as soon as it is
// open, so that a killed process leaves at most an empty folder). The
// rows are the curator's own input rows, which are on its disk already.
//
// Memory: at most Budget bytes of rows (plus one row), plus a 32 KiB
// buffer per run while runs are merged.
type store struct {
	mem   []Item
	bytes int64 // estimated bytes of mem
	dir   string
	runs  []run
	// runRows is the rows in runs.
	runRows int64
	made    int    // run files made, to name the next
	forget  func() // unregisters dir from table.TrackTemp
}

// run is a file of rows in (priority, index) order.
type run struct {
	f     *os.File
	level int // 0 for a spill, L+1 for a merge of runs of level L
	rows  int64
}

// rows is the number of rows kept.
func (s *store) rows() int64 { return s.runRows + int64(len(s.mem)) }

// itemBytes estimates the memory of a kept row: the Item, the row's
// slice and each cell's header and bytes (rounded to 8 as allocated).
func itemBytes(it Item) int64 {
	b := int64(48 + 24 + 16*cap(it.Row))
	for _, c := range it.Row {
		b += int64(len(c)+7) &^ 7
	}
	return b
}

// add keeps it. When the rows in memory pass Budget, keep(p) — false for
// priorities that can no longer be sampled — prunes them, and if more
// than half the budget is left they are written out as a sorted run.
func (s *store) add(it Item, keep func(Priority) bool) error {
	s.mem = append(s.mem, it)
	s.bytes += itemBytes(it)
	if s.bytes <= Budget {
		return nil
	}
	s.prune(keep)
	if s.bytes <= Budget/2 {
		return nil
	}
	return s.spill(keep)
}

// prune drops the rows in memory whose priority keep refuses.
func (s *store) prune(keep func(Priority) bool) {
	s.mem = slices.DeleteFunc(s.mem, func(it Item) bool {
		if keep(it.Priority) {
			return false
		}
		s.bytes -= itemBytes(it)
		return true
	})
}

// spill writes the rows in memory to a new sorted run of level 0, then
// merges mergeWidth runs of one level into one of the next while there
// are that many.
func (s *store) spill(keep func(Priority) bool) error {
	slices.SortFunc(s.mem, cmpItem)
	r, err := s.writeRun([]source{&memSource{items: s.mem}}, 0, keep)
	if err != nil {
		return err
	}
	s.runs = append(s.runs, r)
	s.runRows += r.rows
	clear(s.mem)
	s.mem, s.bytes = s.mem[:0], 0
	for {
		level := s.runs[len(s.runs)-1].level
		first := len(s.runs) - mergeWidth
		if first < 0 || s.runs[first].level != level {
			return nil
		}
		// The last mergeWidth runs are all of this level: runs are made in
		// order, and a level's runs are merged as soon as there are
		// mergeWidth of them, so levels do not increase along s.runs.
		var srcs []source
		for _, r := range s.runs[first:] {
			rs, err := newRunSource(r.f)
			if err != nil {
				return s.ioError(err)
			}
			srcs = append(srcs, rs)
		}
		merged, err := s.writeRun(srcs, level+1, keep)
		if err != nil {
			return err
		}
		for _, r := range s.runs[first:] {
			r.f.Close()
			s.runRows -= r.rows
		}
		s.runs = append(s.runs[:first], merged)
		s.runRows += merged.rows
	}
}

// writeRun merges srcs into a new run of the given level, keeping the
// rows keep accepts.
func (s *store) writeRun(srcs []source, level int, keep func(Priority) bool) (run, error) {
	f, err := s.newRun()
	if err != nil {
		return run{}, err
	}
	w := bufio.NewWriterSize(f, runBuffer)
	var buf []byte
	var n int64
	err = mergeSources(srcs, func(r record) (bool, error) {
		if !keep(r.pri) {
			return false, nil // every later row has a larger priority
		}
		buf = appendRecord(buf[:0], r)
		n++
		_, err := w.Write(buf)
		return true, err
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		f.Close()
		return run{}, s.ioError(err)
	}
	return run{f: f, level: level, rows: n}, nil
}

// newRun makes an unlinked run file in the store's private folder.
func (s *store) newRun() (*os.File, error) {
	if s.dir == "" {
		dir, err := os.MkdirTemp(Dir, "pramkit-sample-")
		if err != nil {
			return nil, s.ioError(err)
		}
		// Removed if a signal ends the run (the runs in it are unlinked
		// already; the folder would stay).
		if s.forget, err = table.TrackTemp(dir); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.dir = dir
	}
	s.made++
	name := filepath.Join(s.dir, fmt.Sprintf("run-%d", s.made))
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, s.ioError(err)
	}
	if err := os.Remove(name); err != nil {
		f.Close()
		return nil, s.ioError(err)
	}
	return f, nil
}

func (s *store) ioError(err error) error {
	dir := s.dir
	if dir == "" {
		dir = Dir
		if dir == "" {
			dir = os.TempDir()
		}
	}
	return fmt.Errorf("keeping the sample's rows in temporary files in %s (set TMPDIR to a folder with room): %w", dir, err)
}

// each calls f with the kept rows in (priority, index) order until f
// returns false or an error.
func (s *store) each(f func(Item) (bool, error)) error {
	return s.merged(func(r record) (bool, error) {
		it, err := r.toItem()
		if err != nil {
			return false, err
		}
		return f(it)
	})
}

// eachPriority calls f with the priority of every kept row (rows read
// back from runs are not decoded).
func (s *store) eachPriority(f func(Priority)) error {
	return s.merged(func(r record) (bool, error) {
		f(r.pri)
		return true, nil
	})
}

// merged calls f with the kept rows as records, in (priority, index)
// order, until f returns false or an error. A run that does not read back
// is reported with the folder it is in.
func (s *store) merged(f func(record) (bool, error)) error {
	slices.SortFunc(s.mem, cmpItem)
	srcs := []source{&memSource{items: s.mem}}
	for _, r := range s.runs {
		rs, err := newRunSource(r.f)
		if err != nil {
			return s.ioError(err)
		}
		srcs = append(srcs, rs)
	}
	err := mergeSources(srcs, f)
	if errors.Is(err, errBadRun) {
		return s.ioError(err)
	}
	return err
}

// close removes the runs and the private folder.
func (s *store) close() error {
	for _, r := range s.runs {
		r.f.Close()
	}
	s.runs = nil
	if s.dir == "" {
		return nil
	}
	err := os.RemoveAll(s.dir)
	s.dir = ""
	s.forget()
	return err
}

// A run file holds rows in (priority, index) order, each as: priority
// (Hi, Lo, 8 bytes big-endian each), uvarint index, uvarint length of the
// rest, then the rest: uvarint cell count and each cell as uvarint length
// and bytes. A merge into another run copies the rest as it is; only the
// rows given to each are decoded.
func appendItem(b []byte, it Item) []byte {
	b = appendKey(b, it.Priority, it.Index)
	n := uvarintLen(uint64(len(it.Row)))
	for _, c := range it.Row {
		n += uvarintLen(uint64(len(c))) + len(c)
	}
	b = binary.AppendUvarint(b, uint64(n))
	b = binary.AppendUvarint(b, uint64(len(it.Row)))
	for _, c := range it.Row {
		b = binary.AppendUvarint(b, uint64(len(c)))
		b = append(b, c...)
	}
	return b
}

func appendKey(b []byte, p Priority, idx int64) []byte {
	b = binary.BigEndian.AppendUint64(b, p.Hi)
	b = binary.BigEndian.AppendUint64(b, p.Lo)
	return binary.AppendUvarint(b, uint64(idx))
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// record is a row on its way through a merge: an Item from memory, or the
// encoded cells of a row read from a run (rest, valid until the source's
// next call).
type record struct {
	pri  Priority
	idx  int64
	item *Item
	rest []byte
}

// appendRecord appends r in the run format.
func appendRecord(b []byte, r record) []byte {
	if r.item != nil {
		return appendItem(b, *r.item)
	}
	b = appendKey(b, r.pri, r.idx)
	b = binary.AppendUvarint(b, uint64(len(r.rest)))
	return append(b, r.rest...)
}

// item returns r as an Item; a row read from a run is decoded, its cells
// sharing one string.
func (r record) toItem() (Item, error) {
	if r.item != nil {
		return *r.item, nil
	}
	it := Item{Priority: r.pri, Index: r.idx}
	all := string(r.rest)
	b := r.rest
	cells, k := binary.Uvarint(b)
	if k <= 0 || cells > uint64(len(b)) {
		return it, errBadRun
	}
	it.Row = make([]string, cells)
	off := k
	for j := range it.Row {
		n, k := binary.Uvarint(b[off:])
		if k <= 0 || n > uint64(len(b)-off-k) {
			return it, errBadRun
		}
		off += k
		it.Row[j] = all[off : off+int(n)]
		off += int(n)
	}
	return it, nil
}

// source is a stream of rows in (priority, index) order.
type source interface {
	next() (record, bool, error)
}

type memSource struct {
	items []Item
	i     int
}

func (m *memSource) next() (record, bool, error) {
	if m.i == len(m.items) {
		return record{}, false, nil
	}
	it := &m.items[m.i]
	m.i++
	return record{pri: it.Priority, idx: it.Index, item: it}, true, nil
}

type runSource struct {
	r   *bufio.Reader
	buf []byte
}

// newRunSource reads run f from its start.
func newRunSource(f *os.File) (*runSource, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return &runSource{r: bufio.NewReaderSize(f, runBuffer)}, nil
}

// errBadRun is what a run file that does not read back as written gives.
var errBadRun = errors.New("a temporary run file does not read back as written")

func (rs *runSource) next() (record, bool, error) {
	var pri [16]byte
	if _, err := io.ReadFull(rs.r, pri[:]); err == io.EOF {
		return record{}, false, nil
	} else if err != nil {
		return record{}, false, errBadRun
	}
	idx, err := binary.ReadUvarint(rs.r)
	if err != nil {
		return record{}, false, errBadRun
	}
	n, err := binary.ReadUvarint(rs.r)
	if err != nil || n > 1<<32 {
		return record{}, false, errBadRun
	}
	if uint64(cap(rs.buf)) < n {
		rs.buf = make([]byte, n)
	}
	rs.buf = rs.buf[:n]
	if _, err := io.ReadFull(rs.r, rs.buf); err != nil {
		return record{}, false, errBadRun
	}
	return record{pri: Priority{binary.BigEndian.Uint64(pri[:8]), binary.BigEndian.Uint64(pri[8:])}, idx: int64(idx), rest: rs.buf}, true, nil
}

// mergeSources calls f with the rows of srcs in (priority, index) order
// until f returns false or an error, or the rows end.
func mergeSources(srcs []source, f func(record) (bool, error)) error {
	h := mergeHeap{}
	for _, s := range srcs {
		r, ok, err := s.next()
		if err != nil {
			return err
		}
		if ok {
			h = append(h, head{r, s})
		}
	}
	heap.Init(&h)
	for len(h) > 0 {
		more, err := f(h[0].r)
		if err != nil || !more {
			return err
		}
		r, ok, err := h[0].src.next()
		if err != nil {
			return err
		}
		if ok {
			h[0].r = r
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return nil
}

type head struct {
	r   record
	src source
}

type mergeHeap []head

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	a, b := h[i].r, h[j].r
	return a.pri.Less(b.pri) || a.pri == b.pri && a.idx < b.idx
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(head)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
