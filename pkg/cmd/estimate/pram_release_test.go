package estimate

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestCodebookSumOfIsSHA256: the piecewise sum is the SHA-256 of the
// whole text, for texts shorter and longer than its buffer.
func TestCodebookSumOfIsSHA256(t *testing.T) {
	for _, n := range []int{0, 1, 32<<10 - 1, 32 << 10, 100<<10 + 7} {
		text := strings.Repeat("codebook", n/8+1)[:n]
		sum := sha256.Sum256([]byte(text))
		if got, want := codebookSumOf(text), "sha256:"+hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%d bytes: %s, want %s", n, got, want)
		}
	}
}
