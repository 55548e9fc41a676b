//go:build unix

package table

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOutputOntoAFIFOIsRefused: a FIFO at the output's path is refused at
// Create, and stays: a rename would have replaced it by a file of rows
// (as root, -o /dev/null replaced the device).
func TestOutputOntoAFIFOIsRefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo.csv")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(fifo, StringSchema([]string{"a"}), Meta{"stage": "x"}, WriteOptions{}); err == nil || !strings.Contains(err.Error(), "is not a regular file") {
		t.Errorf("%v, want the FIFO refused", err)
	}
	if st, err := os.Stat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO is gone: %v", err)
	}
}
