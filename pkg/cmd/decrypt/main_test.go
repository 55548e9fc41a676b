package decrypt_test

import (
	"os"
	"testing"

	"github.com/pramkit/pramkit/internal/releasetest"
)

// TestMain keeps perturb's release ledger out of the user's state
// directory.
func TestMain(m *testing.M) { os.Exit(releasetest.IsolateState(m)) }
