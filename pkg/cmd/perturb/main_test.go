package perturb_test

import (
	"os"
	"testing"

	"github.com/pramkit/pramkit/pkg/cmd/encrypt/encfile/encfiletest"
)

// TestMain keeps perturb's release ledger out of the user's state
// directory.
func TestMain(m *testing.M) { os.Exit(encfiletest.IsolateState(m)) }
