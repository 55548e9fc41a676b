package estimate

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sync/atomic"
)

// A tally of millions of observed joint values does not stay in memory:
// once its map holds pramSpillAt values, they are sorted and written to a
// run on disk, and the map starts again empty. At the end the runs are
// merged, summing the counts of a value found in several, into the
// observed values in increasing order — which is all a streamed estimate
// (estimatePRAMStream) and a count table need, read twice. Memory is then
// the map (at most pramSpillAt values, ~40 bytes each with its keys
// sorted to spill: ~5 MB; at 2^18 values it was ~10 MB, a fifth of an
// Arrow release's live heap at 1M labels, for half as many runs) and a
// 32 KiB buffer a run. On disk a value
// takes its distance to the run's previous one and its count as uvarints:
// 2.6 bytes at K = 7M and 3M observed values (7.9 MB), up to 10 when K
// is near 2^62.
// The runs share one temporary file, removed as soon as it is created, so
// a killed run leaves nothing behind.

// pramSpillAt is how many observed values a spillable tally holds in
// memory before it spills them to a run (a variable: tests lower it).
var pramSpillAt = 1 << 17

// pramCell is an observed joint value g and its count n.
type pramCell struct {
	g uint64
	n int64
}

// pramRuns are a tally's spilled runs: each a sorted sequence of cells,
// coded as uvarint(g − previous g), uvarint(n), one after the other in f.
type pramRuns struct {
	f    *os.File
	w    *bufio.Writer
	ends []int64 // the end offset of each run
	size int64
	keys []uint64 // sorting scratch, reused
}

// spill writes the cells of m (leaving out zero counts, a count table's
// explicit zeros) as one more run, and empties m.
func (r *pramRuns) spill(m map[uint64]int64) error {
	if r.f == nil {
		f, err := os.CreateTemp("", "pramkit-estimate-*")
		if err != nil {
			return fmt.Errorf("a temporary file for the counts: %w (set TMPDIR to a directory with room)", err)
		}
		// Unlinked at once: the file lives while it is open, and goes
		// when the process ends, however it ends.
		if err := os.Remove(f.Name()); err != nil {
			f.Close()
			return fmt.Errorf("the temporary file for the counts: %w", err)
		}
		r.f, r.w = f, bufio.NewWriterSize(f, 1<<16)
	}
	r.keys = r.keys[:0]
	for g, n := range m {
		if n != 0 {
			r.keys = append(r.keys, g)
		}
	}
	slices.Sort(r.keys)
	var prev uint64
	var tmp [2 * binary.MaxVarintLen64]byte
	for _, g := range r.keys {
		k := binary.PutUvarint(tmp[:], g-prev)
		k += binary.PutUvarint(tmp[k:], uint64(m[g]))
		if _, err := r.w.Write(tmp[:k]); err != nil {
			return fmt.Errorf("writing the counts to a temporary file: %w (set TMPDIR to a directory with room)", err)
		}
		r.size += int64(k)
		prev = g
	}
	r.ends = append(r.ends, r.size)
	clear(m)
	pramSpills.Add(1)
	return nil
}

// pramSpills counts the runs spilled, for tests.
var pramSpills atomic.Int64

// close removes the runs.
func (r *pramRuns) close() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

// pramRun reads one run.
type pramRun struct {
	r   *bufio.Reader
	g   uint64 // the current cell
	n   int64
	end bool
}

func (u *pramRun) advance() error {
	d, err := binary.ReadUvarint(u.r)
	if errors.Is(err, io.EOF) {
		u.end = true
		return nil
	}
	n, err2 := binary.ReadUvarint(u.r)
	if err != nil || err2 != nil {
		return fmt.Errorf("reading back the counts from the temporary file: %w", errors.Join(err, err2))
	}
	u.g += d
	u.n = int64(n)
	return nil
}

// pramRunHeap orders runs by their current value.
type pramRunHeap []*pramRun

func (h pramRunHeap) Len() int           { return len(h) }
func (h pramRunHeap) Less(i, j int) bool { return h[i].g < h[j].g }
func (h pramRunHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *pramRunHeap) Push(x any)        { *h = append(*h, x.(*pramRun)) }
func (h *pramRunHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// pramCells walks a tally's observed values in increasing order: a dense
// array, a map's sorted keys, or merged runs.
type pramCells struct {
	dense []int64
	i     int
	keys  []uint64
	m     map[uint64]int64
	runs  pramRunHeap
	err   error
}

// cells returns a fresh walk over t's observed values. The tally must be
// done counting; for a spilled one, the rest of its map was spilled by
// finish.
func (t *pramTally) cells() (*pramCells, error) {
	switch {
	case t.dense != nil:
		return &pramCells{dense: t.dense}, nil
	case t.runs == nil:
		if t.keys == nil {
			t.keys = slices.Sorted(maps.Keys(t.sparse))
		}
		return &pramCells{keys: t.keys, m: t.sparse}, nil
	}
	r := t.runs
	if err := r.w.Flush(); err != nil {
		return nil, fmt.Errorf("writing the counts to a temporary file: %w", err)
	}
	c := &pramCells{}
	var start int64
	for _, end := range r.ends {
		u := &pramRun{r: bufio.NewReaderSize(io.NewSectionReader(r.f, start, end-start), 32<<10)}
		start = end
		if err := u.advance(); err != nil {
			return nil, err
		}
		if !u.end {
			c.runs = append(c.runs, u)
		}
	}
	heap.Init(&c.runs)
	return c, nil
}

// next returns the next observed value with its count (≥ 1), or false at
// the end or on an error (see err).
func (c *pramCells) next() (pramCell, bool) {
	switch {
	case c.dense != nil:
		for c.i < len(c.dense) {
			g := c.i
			c.i++
			if n := c.dense[g]; n != 0 {
				return pramCell{uint64(g), n}, true
			}
		}
		return pramCell{}, false
	case c.m != nil:
		for c.i < len(c.keys) {
			g := c.keys[c.i]
			c.i++
			if n := c.m[g]; n != 0 {
				return pramCell{g, n}, true
			}
		}
		return pramCell{}, false
	}
	for len(c.runs) > 0 && c.err == nil {
		out := pramCell{g: c.runs[0].g}
		for len(c.runs) > 0 && c.runs[0].g == out.g {
			u := c.runs[0]
			out.n += u.n
			if c.err = u.advance(); c.err != nil {
				return pramCell{}, false
			}
			if u.end {
				heap.Pop(&c.runs)
			} else {
				heap.Fix(&c.runs, 0)
			}
		}
		if out.n != 0 {
			return out, true
		}
	}
	return pramCell{}, false
}
