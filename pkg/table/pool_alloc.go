package table

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// poolAllocator recycles the large buffers of a Parquet or Arrow IPC
// reader opened with ReadOptions.ReuseBuffers (readAllocator), and of the
// writers (bufferPool). pqarrow builds fresh buffers for every batch of
// every column, and a streaming caller releases them a moment later: with
// GoAllocator each was a new large allocation, zeroed, then collected.
// Here a released buffer goes back to a pool of its power-of-two size
// class and is handed out, cleared, to a later batch — estimate's count of
// a 10M-row Parquet release went from 0.60 to 0.43 s (user+sys 0.52 to
// 0.39 s, 55 collections instead of ~75, peak RSS 69 -> 75 MB; medians
// of 5 alternated runs on a loaded 2-core machine). Reuse is only safe when nothing keeps a slice or string of a
// released batch, which is what ReuseBuffers promises.
//
// small allocates the sizes outside the pooled range (decodeAllocator,
// whose cap is above poolMaxShift).
type poolAllocator struct{ small memory.Allocator }

const poolMaxShift = 26 // 64 MiB

// poolMinShift: buffers under 16 KiB are cheap to allocate, and are not
// pooled (PoolAllBuffersForTests lowers it). A Parquet page reader's
// buffers (a 16 KiB header buffer, then one the size of a page, tens of
// KiB) come fresh for every column chunk: pooled from 16 KiB up, decrypt
// of a 10M-row Parquet release collects 9 times instead of 14.
var poolMinShift = 14

// PoolAllBuffersForTests makes the readers and writers pool buffers of any
// size from 64 bytes up, not only large ones, until the returned function
// restores the default: tests of the stages, whose tables are small, then
// run every batch through reused memory, and a batch whose buffers went
// back to the pool while still in use shows as wrong output. Not safe to
// call while a reader or writer is open.
func PoolAllBuffersForTests() (restore func()) {
	old := poolMinShift
	poolMinShift = 6
	return func() { poolMinShift = old }
}

// PoolNoBuffersForTests makes the readers and writers pool nothing, until
// the returned function restores the default: a test's reference run then
// reads every batch into fresh memory, which no later batch can
// overwrite. Not safe to call while a reader or writer is open.
func PoolNoBuffersForTests() (restore func()) {
	old := poolMinShift
	poolMinShift = poolMaxShift + 1
	return func() { poolMinShift = old }
}

var bufferPools [poolMaxShift + 1]sync.Pool

// bufferPool is the pool of the buffers that the Parquet writer's pages,
// the writers' row groups (rowGroupBuf) and CSV batches read with
// ReuseBuffers are made in. Pooling the row groups' values, once thought
// not worth its memory, took perturb from 0.44–0.53 to 0.40–0.46 s and
// decrypt -> Parquet from 0.46–0.51 to 0.43–0.44 s on 2 cores (10M rows),
// with 3–5 MB less peak RSS: a fresh group's memory was zeroed and
// faulted in on one core and read on another.
var bufferPool = poolAllocator{memory.DefaultAllocator}

// readAllocator is what a Parquet or Arrow IPC reader decodes into: the
// pool when the caller promised to release its batches
// (ReadOptions.ReuseBuffers), else fresh memory. An Arrow IPC message's
// body is one buffer that the batch's arrays slice, freed when the batch
// and the reader have both let it go: pooled, perturb's 80 MB Arrow
// input (10M rows) no longer allocates 60 MB for the collector.
func readAllocator(opt ReadOptions) memory.Allocator {
	if opt.ReuseBuffers {
		return poolAllocator{decodeAllocator}
	}
	return decodeAllocator
}

func (a poolAllocator) Allocate(size int) []byte { return a.allocate(size, true) }

// allocate is Allocate; zero false leaves a pooled buffer's old bytes.
func (a poolAllocator) allocate(size int, zero bool) []byte {
	if size < 1<<poolMinShift || size > 1<<poolMaxShift {
		return a.small.Allocate(size)
	}
	s := bits.Len(uint(size - 1))
	if p, _ := bufferPools[s].Get().(*[]byte); p != nil {
		// Zeroed like GoAllocator's, up to the capacity, which a
		// Reallocate within it hands out.
		if zero {
			clear(*p)
		}
		return (*p)[:size]
	}
	return make([]byte, size, 1<<s)
}

func (a poolAllocator) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

// Free pools b if it is one of Allocate's (a power-of-two capacity in the
// pooled range; GoAllocator's buffers there have other capacities).
func (a poolAllocator) Free(b []byte) {
	c := cap(b)
	if c < 1<<poolMinShift || c > 1<<poolMaxShift || c&(c-1) != 0 {
		return
	}
	b = b[:c]
	bufferPools[bits.Len(uint(c-1))].Put(&b)
}
