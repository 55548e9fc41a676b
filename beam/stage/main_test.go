package stage

import (
	"fmt"
	"os"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

// TestMain initialises Beam (flags, worker mode) with Prism, the in-process
// runner, as the default, and gives the tests a temporary folder of their
// own (PrivateTempDir), removed at the end with what Prism left in it.
func TestMain(m *testing.M) {
	restore, err := PrivateTempDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, "a private temporary folder:", err)
		os.Exit(1)
	}
	code := ptest.MainRetWithDefault(m, "prism")
	restore()
	os.Exit(code)
}
