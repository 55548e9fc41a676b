package cli

import (
	"os"
	"runtime/debug"
)

// MemoryLimit is the soft memory limit every tool runs under unless
// GOMEMLIMIT says otherwise (issue 11: at most 100 MB peak RSS per stage
// at any N). What a streaming stage holds live is bounded and small — the
// chunks in flight of the CSV reader and of pkg/pipeline, a Parquet batch
// being encoded, the shuffle's budget: 15 to 40 MiB — but Go lets the heap
// grow to twice the live size between collections, which put the peaks at
// 120 to 260 MB on 1M rows. Under the limit the collector runs earlier
// when the heap nears it; the text of the binary (~25 MB resident) comes
// on top. A stage whose live heap outgrew the limit would only collect
// more often (the runtime caps the collector at half the CPU), never fail.
const MemoryLimit = 64 << 20

// SoftMemoryLimit sets MemoryLimit, unless GOMEMLIMIT is set (it wins) or
// a lower limit is already in force. Run calls it, so it is set in one
// place for all tools.
func SoftMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if cur := debug.SetMemoryLimit(-1); cur > MemoryLimit {
		debug.SetMemoryLimit(MemoryLimit)
	}
}
