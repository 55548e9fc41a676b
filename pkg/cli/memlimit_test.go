package cli

import (
	"runtime/debug"
	"testing"
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
