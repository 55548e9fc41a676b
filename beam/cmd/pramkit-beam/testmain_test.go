package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/pramkit/pramkit/beam/stage"
)

// TestMain gives the tests a temporary folder of their own
// (stage.PrivateTempDir), removed at the end with the files Prism's
// loopback workers leave in it: the tests that call stage functions
// directly, not through run, would leave them in the system's.
func TestMain(m *testing.M) {
	restore, err := stage.PrivateTempDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, "a private temporary folder:", err)
		os.Exit(1)
	}
	code := m.Run()
	restore()
	os.Exit(code)
}
