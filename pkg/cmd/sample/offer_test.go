package sample

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/cmdtest"
	"github.com/pramkit/pramkit/pkg/table"
)

// offerModes runs f under every way of offering rows that must agree: the
// sequential loop, and the parallel one on 1 and 2 cores with the reader's
// batches and with batches of 100 and 997 rows ($PRAMKIT_BATCH_ROWS), with
// kept rows' cells from built columns and from the records' text
// (offerRowText); f returns the run's output (files and messages).
func offerModes(t *testing.T, f func(mode string) string) {
	t.Helper()
	defer func(p int, s, r bool) {
		runtime.GOMAXPROCS(p)
		offerSerial, offerRowText = s, r
	}(runtime.GOMAXPROCS(0), offerSerial, offerRowText)
	offerSerial = true
	want := f("serial")
	offerSerial = false
	for _, procs := range []int{1, 2} {
		for _, chunk := range []int{0, 100, 997} {
			offerRowText = chunk != 100 // the text with the reader's batches and with 997 rows
			runtime.GOMAXPROCS(procs)
			if chunk == 0 {
				t.Setenv(table.BatchRowsEnv, "")
				os.Unsetenv(table.BatchRowsEnv)
			} else {
				t.Setenv(table.BatchRowsEnv, fmt.Sprint(chunk))
			}
			mode := fmt.Sprintf("GOMAXPROCS=%d chunk=%d rowtext=%v", procs, chunk, offerRowText)
			if got := f(mode); got != want {
				t.Errorf("%s: output differs from the sequential loop's:\n%.2000s\nwant\n%.2000s", mode, got, want)
			}
		}
	}
}

// readOutputs returns the files a run wrote, concatenated.
func readOutputs(t *testing.T, paths ...string) string {
	t.Helper()
	var b strings.Builder
	for _, p := range paths {
		for _, suffix := range []string{"", ".meta.json"} {
			c, err := os.ReadFile(p + suffix)
			if err != nil && suffix == "" {
				t.Fatal(err)
			}
			b.Write(c)
		}
	}
	return b.String()
}

// Priorities computed in parallel give the sequential loop's sample byte
// for byte — by position and by id, -m and --fraction, one input and
// several — whatever the core count and the chunk size.
func TestParallelOfferIsTheSequential(t *testing.T) {
	dir := shardFixture(t, 5000, []int{1234, 1300})
	sec := filepath.Join(dir, "sec")
	shards := []string{filepath.Join(dir, "s0.csv"), filepath.Join(dir, "s1.csv"), filepath.Join(dir, "s2.csv")}
	runs := 0
	for i, args := range [][]string{
		{"-m", "50", filepath.Join(dir, "all.csv")},
		{"-m", "700", "--id", "pid", "--with-priority", filepath.Join(dir, "all.csv")},
		{"--fraction", "0.1", "--id", "pid", "--keep-id", filepath.Join(dir, "all.csv")},
		append([]string{"-m", "300"}, shards...),
		append([]string{"-m", "40", "--id", "pid"}, shards...),
	} {
		offerModes(t, func(mode string) string {
			runs++
			out := filepath.Join(dir, fmt.Sprintf("out%d-%d.csv", i, runs))
			res := cmdtest.Run(build, nil, append([]string{"--secret", sec, "-o", out}, args...)...)
			if res.Code != 0 {
				t.Fatalf("%s: sample %v: exit %d: %s", mode, args, res.Code, res.Stderr)
			}
			return readOutputs(t, out) + res.Stderr
		})
	}
}

// A bad id — empty, or repeated — is reported as the sequential loop
// reports it (the same rows and file), also when the reader has moved on
// to a later chunk or file.
func TestParallelOfferReportsBadIDsAsTheSequential(t *testing.T) {
	dir := t.TempDir()
	sec := cmdtest.WriteFile(t, dir, "sec", strings.Repeat("5a", 32)+"\n")
	var a, b []string
	for i := range 3000 {
		a = append(a, fmt.Sprintf("p%d,%d", i, i%7))
		b = append(b, fmt.Sprintf("q%d,%d", i, i%5))
	}
	b[2500] = ",1"      // an empty id in the second file's row 2501
	b[2900] = "p17,2"   // a repeat of the first file's id p17
	b[1000] = b[999][:] // and of the row before
	fa := cmdtest.WriteFile(t, dir, "a.csv", "pid,x\n"+strings.Join(a, "\n")+"\n")
	fb := cmdtest.WriteFile(t, dir, "b.csv", "pid,x\n"+strings.Join(b, "\n")+"\n")
	for _, args := range [][]string{
		{"-m", "6000", "--id", "pid", fa, fb},
		{"-m", "5000", "--id", "pid", fb},
		{"-m", "6000", "--id", "pid", fa, fb[:len(fb)-4] + "x.csv"},
	} {
		if args[len(args)-1] != fb && args[len(args)-1] != fa {
			// b without the empty id: only the repeated ones are left.
			c := append([]string(nil), b...)
			c[2500] = "q2500,1"
			cmdtest.WriteFile(t, dir, "bx.csv", "pid,x\n"+strings.Join(c, "\n")+"\n")
		}
		offerModes(t, func(mode string) string {
			res := cmdtest.Run(build, nil, append([]string{"--secret", sec, "-o", filepath.Join(dir, "out.csv")}, args...)...)
			if res.Code != 1 {
				t.Errorf("%s: sample %v: exit %d, want 1: %s", mode, args, res.Code, res.Stderr)
			}
			return res.Stderr
		})
	}
}
