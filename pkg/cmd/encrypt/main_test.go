package encrypt_test

import (
	"os"
	"testing"

	"github.com/pramkit/pramkit/pkg/table"
)

// TestMain sends every batch through reused memory
// (table.PoolAllBuffersForTests): a batch whose buffers went back to the
// pool while still in use shows as wrong output.
func TestMain(m *testing.M) {
	table.PoolAllBuffersForTests()
	os.Exit(m.Run())
}
