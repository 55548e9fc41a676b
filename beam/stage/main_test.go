package stage

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

// TestMain initialises Beam (flags, worker mode) with Prism, the in-process
// runner, as the default.
func TestMain(m *testing.M) { ptest.MainWithDefault(m, "prism") }
