package cli

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestSoftMemoryLimit: Run puts every tool under MemoryLimit, unless
// GOMEMLIMIT is set or a lower limit is in force.
func TestSoftMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOMEMLIMIT", "")
	debug.SetMemoryLimit(1 << 40)
	SoftMemoryLimit()
	if got := debug.SetMemoryLimit(-1); got != MemoryLimit {
		t.Errorf("limit %d, want %d", got, MemoryLimit)
	}
	debug.SetMemoryLimit(MemoryLimit / 2)
	SoftMemoryLimit()
	if got := debug.SetMemoryLimit(-1); got != MemoryLimit/2 {
		t.Errorf("a lower limit was raised to %d", got)
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(1 << 40)
	SoftMemoryLimit()
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("with GOMEMLIMIT set the limit became %d", got)
	}
}

// waitLimit runs collections until the limit in force satisfies ok (the
// limiter adjusts it from a finalizer, after a collection) or 5 s pass.
func waitLimit(ok func(int64) bool) int64 {
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		time.Sleep(time.Millisecond)
		if got := debug.SetMemoryLimit(-1); ok(got) || time.Now().After(deadline) {
			return got
		}
	}
}

// TestLimiterGivesALargeLiveHeapHeadroom: under a base limit of 8 MiB, a
// live heap of 32 MiB (a large codebook's state) raises the limit to
// itself plus heapGap, so that allocating 256 MiB more, 64 KiB at a time,
// takes a bounded number of collections — under the bare 8 MiB limit the
// runtime collected again as soon as it finished (thousands of cycles); a
// live heap of 56 MiB gets heapBudget (64 MiB), which it is below, and
// one of 64 MiB (and a little more) 1.25 times itself; the limit
// comes back to the base once the heap is let go; and a limit set by
// someone else is left alone.
func TestLimiterGivesALargeLiveHeapHeadroom(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOMEMLIMIT", "")
	const base = 8 << 20
	debug.SetMemoryLimit(math.MaxInt64)
	LowerMemoryLimit(base)
	if got := MemoryLimitBase(); got != base {
		t.Fatalf("base %d, want %d", got, base)
	}
	for _, tc := range []struct{ live, want int64 }{
		{32 << 20, 32<<20 + heapGap},
		{56 << 20, heapBudget},
		{64 << 20, 80 << 20},
	} {
		got, held := limitHolding(tc.live, tc.want)
		if !nearLimit(got, tc.want) {
			t.Fatalf("limit %d MiB with %d MiB live over a base of %d MiB, want %d MiB", got>>20, tc.live>>20, base>>20, tc.want>>20)
		}
		if tc.live == 32<<20 {
			before := numGC()
			var sink []byte
			for range 256 << 20 / (64 << 10) {
				sink = make([]byte, 64<<10)
				sink[0] = 1
			}
			if n := numGC() - before; n > 100 {
				t.Errorf("%d collections to allocate 256 MiB with %d MiB live", n, tc.live>>20)
			}
			runtime.KeepAlive(sink)
		}
		runtime.KeepAlive(held)
		held = nil
		if got := waitLimit(func(l int64) bool { return l == base }); got != base {
			t.Errorf("limit %d once the heap was let go, want the base %d", got, base)
		}
	}
	debug.SetMemoryLimit(123 << 20)
	for range 10 {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := debug.SetMemoryLimit(-1); got != 123<<20 {
		t.Errorf("a limit set by someone else became %d", got)
	}
}

// limitHolding holds live bytes until the limit in force reaches want (or
// 5 s pass), and returns it and the bytes, for the caller to keep alive.
func limitHolding(live, want int64) (int64, []byte) {
	held := make([]byte, live)
	for i := range held {
		held[i] = byte(i)
	}
	return waitLimit(func(l int64) bool { return l >= want }), held
}

// nearLimit reports whether limit got is want, or up to 1.5 MiB more: the
// live heap is a little more than what a test holds.
func nearLimit(got, want int64) bool { return got >= want && got <= want+3<<19 }

// numGC is the number of collections so far.
func numGC() uint32 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.NumGC
}

// TestLowerMemoryBudgetKeepsAGap: under LowerMemoryBudget(24 MiB) a live
// heap of 40 MiB gets itself plus heapGap (52 MiB), not the 60 MiB that
// heapBudget would let 1.5 times it have, and one of 56 MiB gets
// heapBudget, not itself plus heapGap (68 MiB).
func TestLowerMemoryBudgetKeepsAGap(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer func() {
		lim.mu.Lock()
		lim.budget = 0
		lim.mu.Unlock()
	}()
	t.Setenv("GOMEMLIMIT", "")
	const base = 24 << 20
	debug.SetMemoryLimit(math.MaxInt64)
	LowerMemoryBudget(base)
	for _, tc := range []struct{ live, want int64 }{
		{40 << 20, 40<<20 + heapGap},
		{56 << 20, heapBudget},
	} {
		got, held := limitHolding(tc.live, tc.want)
		if !nearLimit(got, tc.want) {
			t.Errorf("limit %d MiB with %d MiB live under a budget of %d MiB, want %d MiB", got>>20, tc.live>>20, base>>20, tc.want>>20)
		}
		runtime.KeepAlive(held)
		held = nil
		if got := waitLimit(func(l int64) bool { return l == base }); got != base {
			t.Errorf("limit %d once the heap was let go, want the base %d", got, base)
		}
	}
}
