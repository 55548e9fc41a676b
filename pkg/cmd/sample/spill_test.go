package sample

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/sample"
)

// TestSpilledSampleWritesTheSameFile: a sample whose rows go through run
// files (a 512-byte memory budget) is byte for byte the one held in
// memory: -m by position and by id, --fraction, and a --merge of shards.
func TestSpilledSampleWritesTheSameFile(t *testing.T) {
	dir := shardFixture(t, 3000, []int{1000, 1800})
	in := func(name string) string { return filepath.Join(dir, name) }
	sec := in("sec")
	for k, nk := range []int{1000, 800, 1200} {
		mustRun(t, "--secret", sec, "--id", "pid", "--with-priority", "-m", fmt.Sprint(min(900, nk)), in(fmt.Sprintf("s%d.csv", k)), "-o", in(fmt.Sprintf("shard%d.csv", k)))
	}
	cases := [][]string{
		{"--secret", sec, "-m", "2000", in("all.csv")},
		{"--secret", sec, "--id", "pid", "-m", "300", in("all.csv")},
		{"--secret", sec, "--fraction", "0.4", in("all.csv")},
		{"--merge", "--secret", sec, "-m", "900", in("shard0.csv"), in("shard1.csv"), in("shard2.csv")},
	}
	for i, args := range cases {
		mem, spilled := in(fmt.Sprintf("mem%d.csv", i)), in(fmt.Sprintf("spilled%d.csv", i))
		mustRun(t, append(args, "-o", mem)...)
		budget, tmp := sample.Budget, sample.Dir
		sample.Budget, sample.Dir = 512, t.TempDir()
		mustRun(t, append(args, "-o", spilled)...)
		sample.Budget, sample.Dir = budget, tmp
		sameFiles(t, spilled, mem)
	}
}

// TestSpillWithoutRoomFailsCleanly: when the kept rows must go to run
// files and their folder cannot be made, sample fails with one line that
// names the folder and says to set TMPDIR, and writes no sample.
func TestSpillWithoutRoomFailsCleanly(t *testing.T) {
	dir := shardFixture(t, 3000, []int{1000, 1800})
	in := func(name string) string { return filepath.Join(dir, name) }
	budget, tmp := sample.Budget, sample.Dir
	defer func() { sample.Budget, sample.Dir = budget, tmp }()
	sample.Budget, sample.Dir = 512, in("no-such-dir")
	out := in("s.csv")
	res := cmdtest.Run(build, nil, "--secret", in("sec"), "-m", "2000", in("all.csv"), "-o", out)
	msg := strings.TrimSpace(res.Stderr)
	if res.Code == 0 || !strings.Contains(msg, "set TMPDIR") || !strings.Contains(msg, in("no-such-dir")) ||
		strings.Contains(msg, "sample: sample:") || strings.Contains(msg, "\n") {
		t.Errorf("exit %d, stderr %q; want one line naming the folder and TMPDIR, sample named once", res.Code, res.Stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was written", out)
	}
}
