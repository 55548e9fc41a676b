package estimate

import (
	"math"
	"runtime/debug"
	"testing"
)

// collectNot turns the collector off only under a memory limit and
// without GOGC in the environment, and puts the old setting back.
func TestCollectNotNeedsAMemoryLimit(t *testing.T) {
	t.Setenv("GOGC", "")
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(100))

	debug.SetMemoryLimit(64 << 20)
	restore := collectNot()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("under a memory limit: GOGC %d while counting, want off (-1)", got)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC %d after the count, want 100 back", got)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	restore = collectNot()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("without a memory limit: GOGC %d while counting, want 100 kept", got)
	}
	restore()

	t.Setenv("GOGC", "150")
	debug.SetMemoryLimit(64 << 20)
	restore = collectNot()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set: GOGC %d while counting, want it kept", got)
	}
	restore()
}
