package estimate

import (
	"os"
	"testing"

	"github.com/pramkit/pramkit/internal/releasetest"
	"github.com/pramkit/pramkit/pkg/table"
)

// TestMain keeps perturb's release ledger out of the user's state
// directory, and sends every batch through reused memory
// (table.PoolAllBuffersForTests).
func TestMain(m *testing.M) {
	table.PoolAllBuffersForTests()
	os.Exit(releasetest.IsolateState(m))
}
