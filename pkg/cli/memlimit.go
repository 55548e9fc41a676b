package cli

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// MemoryLimit is the soft memory limit every tool runs under unless
// GOMEMLIMIT says otherwise (issue 11: at most 100 MB peak RSS per stage
// at any N). What a streaming stage holds live is bounded and small — the
// chunks in flight of the CSV reader and of pkg/pipeline, a Parquet batch
// being encoded, the shuffle's budget: 15 to 40 MiB — but Go lets the heap
// grow to twice the live size between collections, which put the peaks at
// 120 to 260 MB on 1M rows. Under the limit the collector runs earlier
// when the heap nears it; the binary's pages come on top (33–37 MB
// resident at the peaks measured before ReleaseInitPages, about 10 MB
// less since: decrypt's file-backed RSS mid-run went 26 → 18 MB). A stage whose live heap outgrows the limit gets headroom above
// it (see limiter).
const MemoryLimit = 64 << 20

// SoftMemoryLimit sets MemoryLimit, unless GOMEMLIMIT is set (it wins) or
// a lower limit is already in force. Run calls it, so it is set in one
// place for all tools.
func SoftMemoryLimit() { LowerMemoryLimit(MemoryLimit) }

// LowerMemoryLimit puts the run under limit bytes (with limiter's
// headroom), unless GOMEMLIMIT is set or a lower limit is in force: a tool
// that holds less live than most sets a lower one (anonymize's A′).
func LowerMemoryLimit(limit int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	lim.mu.Lock()
	defer lim.mu.Unlock()
	cur := debug.SetMemoryLimit(-1)
	if cur == lim.set && lim.base > 0 {
		cur = lim.base // the limit in force is ours, maybe raised: its base counts
	}
	if cur <= limit {
		return
	}
	lim.base, lim.set = limit, limit
	debug.SetMemoryLimit(limit)
	lim.once.Do(armLimiter)
}

// CodebookBudget is the memory budget (LowerMemoryBudget) of encrypt,
// decrypt and estimate of a PRAM release. At 1M labels their live heap
// is 33–44 MB (the codebook's labels, ~10 MB, its JSON in a metadata item
// to write, ~10 more, or an Arrow dictionary of it, and the chunks in
// flight); under MemoryLimit and heapBudget the heap grew to 64 MiB and
// the peak RSS was 95–105 MB, the binary's pages (33–37 MB, before
// ReleaseInitPages) on top.
const CodebookBudget = 52 << 20

// LowerMemoryBudget is LowerMemoryLimit that also lowers, to limit, the
// heap limiter lets a live heap above 3/4 of the limit grow to (heapBudget)
// — though never to less than that live heap plus heapGap, nor, for that,
// past heapBudget. A tool calls it when what it holds live is near the
// limit by design (encrypt, decrypt and estimate hold a 1M-label codebook,
// 16–26 MB, on top of their streaming state): under heapBudget such a run
// peaked at 95–105 MB of RSS (the binary's pages come on top, see
// heapBudget).
func LowerMemoryBudget(limit int64) {
	LowerMemoryLimit(limit)
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if os.Getenv("GOMEMLIMIT") == "" && (lim.budget == 0 || limit < lim.budget) {
		lim.budget = limit
	}
}

// MemoryLimitBase returns the limit SoftMemoryLimit or LowerMemoryLimit
// set last (before headroom), 0 if none.
func MemoryLimitBase() int64 {
	lim.mu.Lock()
	defer lim.mu.Unlock()
	return lim.base
}

// limiter gives a run whose live heap outgrew its memory limit headroom:
// after every collection in which the live heap passed 3/4 of the base
// limit, the limit becomes max(base, live + max(heapGap, live/4)), but no
// more than the budget (heapBudget, or less: LowerMemoryBudget) while the
// live heap is below heapBudget; otherwise it is base. Under a lowered
// budget a live heap near it still gets heapGap above it, up to
// heapBudget.
//
// Why: under a limit below the live heap the runtime collects again as
// soon as a collection ends, capped at half the CPU. Per-value state
// grows with a column's cardinality — a codebook of 1M labels is ~16 MB,
// anonymize's schedule and dealer for them ~40 MB more — and anonymize
// of 4M rows over 1M sensitive values ran ~1,400 collections, 13 to 21 s
// instead of 9.6 s. A run whose live heap stays below 3/4 of the base
// (every streaming stage at any number of rows) keeps the base limit:
// nothing changes for it.
//
// The headroom was 1.5 × live until 2026-11-29. A quarter is enough: the
// large live state is pointer-free (labels, offsets, the dealer's words),
// so a collection marks little, and at 2M labels the stages past the
// budget went from 97–132 MB of peak RSS to 82–100 MB, in the same times
// (anonymize A′ → CSV 109 → 97 MB, 6.8 → 5.7 s; perturb ddps → Parquet,
// with its codebook item made late, 132 → 82 MB, 3.3 → 3.9 s).
var lim struct {
	mu     sync.Mutex
	base   int64 // the limit asked for; 0: none
	set    int64 // the limit limiter (or LowerMemoryLimit) set last
	budget int64 // LowerMemoryBudget's; 0: heapBudget
	once   sync.Once
}

// heapBudget is the heap that keeps a run within issue 11's 100 MB of
// peak RSS: ~36 MB of it is not heap (the binary's text, stacks, the
// runtime's own). A live heap near it collects often but keeps the
// budget (--mechanism anatomy over 300k sensitive values: 96 MB in 18 s
// under the bare limit, 125 MB in 8.4 s with 1.5 times the live heap); a
// live heap past it has lost the budget, and gets the full headroom
// (limiter).
const heapBudget = 64 << 20

// heapGap is the least headroom above the live heap that a lowered budget
// leaves (LowerMemoryBudget): the runtime's own memory (stacks, metadata:
// 3–5 MB) counts against the limit too, and a live heap just under the
// budget would otherwise be collected after every few MB of allocation.
const heapGap = 12 << 20

// limiterSentinel is garbage whose finalizer runs once per collection
// (armLimiter re-arms it). It holds a pointer so that the tiny allocator,
// whose blocks die together, does not take it.
type limiterSentinel struct{ _ *int }

func armLimiter() {
	runtime.SetFinalizer(new(limiterSentinel), func(*limiterSentinel) {
		adjustLimit()
		armLimiter()
	})
}

// adjustLimit sets the limit as limiter says, unless someone else
// (GOMEMLIMIT, debug.SetMemoryLimit) set it since.
func adjustLimit() {
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if lim.base == 0 || debug.SetMemoryLimit(-1) != lim.set {
		return
	}
	want := lim.base
	if live := liveHeap(); live > lim.base*3/4 {
		want = max(want, live+max(heapGap, live/4))
		if live < heapBudget {
			budget := int64(heapBudget)
			if lim.budget > 0 {
				budget = max(lim.budget, min(live+heapGap, heapBudget))
			}
			want = max(lim.base, min(want, budget))
		}
	}
	if want != lim.set {
		debug.SetMemoryLimit(want)
		lim.set = want
	}
}

// liveHeap is the heap the last collection found live.
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}
