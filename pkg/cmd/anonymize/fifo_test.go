//go:build unix

package anonymize

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/pramkit/pramkit/pkg/cli"
)

// TestTwoPassReadsANamedPipeOnce: a named pipe (mkfifo, or bash's
// <(…), /dev/fd/N) can be read only once, so the two-pass mechanisms copy
// it to a private temporary file as they do standard input, and give the
// output they give on the file. Before, pass 2 reopened the pipe and
// waited for a writer that never came: a cron job hung.
func TestTwoPassReadsANamedPipeOnce(t *testing.T) {
	_, in, cb, _ := testTable(t, []int{300, 260, 250, 240, 200, 150, 101})
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, mech := range []string{"diverted", "anatomy"} {
		dir := t.TempDir()
		fifo := filepath.Join(dir, "in.fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		args := []string{"--mechanism", mech, "--sensitive", "s", "--l", "4", "--codebook", cb, "--seed", "9", "--insecure-seed"}
		wantArgs := append(append([]string{}, args...), in, "-o", filepath.Join(dir, "want.csv"))
		if mech == "anatomy" {
			wantArgs = append(wantArgs, "--groups", filepath.Join(dir, "want-groups.csv"))
		}
		runBatched(t, 0, nil, wantArgs...)
		go func() {
			f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			f.Write(data)
			f.Close()
		}()
		done := make(chan int, 1)
		var out, errb bytes.Buffer
		go func() {
			s := &cli.Streams{In: bytes.NewReader(nil), Out: &out, Err: &errb}
			cmd := NewCmd(s, nil)
			got := append(append([]string{}, args...), fifo, "-o", filepath.Join(dir, "got.csv"))
			if mech == "anatomy" {
				got = append(got, "--groups", filepath.Join(dir, "got-groups.csv"))
			}
			done <- cli.Run(cmd, got, s)
		}()
		select {
		case code := <-done:
			if code != 0 {
				t.Fatalf("%s from a named pipe: exit %d: %s", mech, code, errb.String())
			}
		case <-time.After(20 * time.Second):
			// Unblock the second open so the goroutine can end.
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				f.Close()
			}
			t.Fatalf("%s from a named pipe: still running after 20 s (a second pass waiting on the pipe)", mech)
		}
		wantData, _ := os.ReadFile(filepath.Join(dir, "want.csv"))
		gotData, _ := os.ReadFile(filepath.Join(dir, "got.csv"))
		if !bytes.Equal(gotData, wantData) || len(wantData) == 0 {
			t.Errorf("%s: a named pipe gives another output (%d bytes) than the file (%d bytes)", mech, len(gotData), len(wantData))
		}
	}
}
