package cli

import (
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePageBytes is the size of an x86-64 (and arm64 4K-granule)
// transparent huge page.
const hugePageBytes = 2 << 20

// AdviseHugePages asks Linux to back the first MemoryLimit bytes of heap
// that the run will use with transparent huge pages (2 MiB) instead of
// 4 KiB pages.
//
// Why: every 4 KiB page of heap is zeroed and mapped by a page fault the
// first time it is touched, and a streaming stage touches its whole heap
// (tens of MB) over and over as the collector recycles it — once per page
// in all. On the 2-core VMs this project is measured on a fault costs
// ~12 µs (a huge-page fault ~0.25 µs per 4 KiB): perturb and decrypt on
// 10M rows took 8,300 faults, a fifth of their time. Go stopped asking
// for huge pages itself in 1.21.1 (golang/go#63334, RSS growth of
// long-lived servers whose heap shrinks and grows); a pramkit run is a
// batch job whose heap stays within its memory limit, so the huge pages
// it touches are ones it would have touched in small pages anyway.
//
// How: the runtime maps heap address space when the heap grows, with a
// fresh mmap that drops any advice, so the space is mapped first — by
// allocating MemoryLimit bytes, which Go takes from fresh, untouched
// memory — then advised MADV_HUGEPAGE, then given back with
// debug.FreeOSMemory (untouched, it was never resident), with the
// collector off until then, so that the allocation does not start a
// collection of its own before FreeOSMemory's (one less: ~1 ms of every
// run, `--version` 10.2 -> 9.0 ms). Later
// allocations reuse that space, lowest addresses first. Heap beyond it
// (a stage whose live heap outgrew the limit) keeps small pages.
//
// It does nothing under GODEBUG=disablethp=1 (the runtime's own switch
// against huge pages) or when the kernel has no transparent huge pages;
// it only advises, so a kernel set to "never" ignores it.
//
// Only the first call does anything: the space is mapped once per process.
func AdviseHugePages() { hugePagesOnce.Do(adviseHugePages) }

var hugePagesOnce sync.Once

func adviseHugePages() {
	if slices.Contains(strings.Split(os.Getenv("GODEBUG"), ","), "disablethp=1") {
		return
	}
	// No collection for b alone: allocating it would start one, marked
	// while b is live, before FreeOSMemory's own.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	b := make([]byte, MemoryLimit)
	// The whole huge pages inside b: madvise wants page-aligned bounds.
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & (hugePageBytes - 1))
	n := (len(b) - off) &^ (hugePageBytes - 1)
	// The advice is a hint: a kernel without THP answers EINVAL, and the
	// run goes on in small pages.
	_ = unix.Madvise(b[off:off+n], unix.MADV_HUGEPAGE)
	debug.FreeOSMemory() // b is dead: its span goes back, unresident
}
