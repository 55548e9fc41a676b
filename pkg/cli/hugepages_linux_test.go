package cli

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestHeapIsAdvisedHugePages: after AdviseHugePages, heap that the run
// allocates lies in memory advised MADV_HUGEPAGE (the "hg" flag of its
// mapping in /proc/self/smaps), and under GODEBUG=disablethp=1 it does
// not. The advice costs one collection (FreeOSMemory's; none under
// disablethp=1), not a second one started by its 64 MiB allocation, and
// leaves GOGC as it found it. Each case runs in a fresh process (this test
// binary, re-run), since the advice covers the heap space of a process
// that has just started.
func TestHeapIsAdvisedHugePages(t *testing.T) {
	if os.Getenv("PRAMKIT_HUGEPAGES_CHILD") != "" {
		debug.SetGCPercent(150)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		AdviseHugePages()
		runtime.ReadMemStats(&after)
		fmt.Printf("collections: %d\ngcpercent: %d\n", after.NumGC-before.NumGC, debug.SetGCPercent(100))
		heap := make([]byte, 16<<20)
		for i := 0; i < len(heap); i += 4096 {
			heap[i] = 1
		}
		flags, huge, err := mappingOf(uintptr(unsafe.Pointer(&heap[len(heap)/2])))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Printf("flags: %s\nAnonHugePages: %d kB\n", flags, huge)
		os.Exit(0)
	}
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("this kernel has no transparent huge pages")
	}
	for _, tc := range []struct {
		godebug     string
		advised     bool
		collections string
	}{
		{"", true, "1"},
		{"disablethp=1", false, "0"},
	} {
		c := exec.Command(os.Args[0], "-test.run=^TestHeapIsAdvisedHugePages$")
		c.Env = append(os.Environ(), "PRAMKIT_HUGEPAGES_CHILD=1", "GODEBUG="+tc.godebug)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("GODEBUG=%q: %v\n%s", tc.godebug, err, out)
		}
		var flags []string
		var collections, gcpercent string
		for _, line := range strings.Split(string(out), "\n") {
			if f, ok := strings.CutPrefix(line, "flags: "); ok {
				flags = strings.Fields(f)
			}
			if n, ok := strings.CutPrefix(line, "collections: "); ok {
				collections = n
			}
			if p, ok := strings.CutPrefix(line, "gcpercent: "); ok {
				gcpercent = p
			}
		}
		if collections != tc.collections || gcpercent != "150" {
			t.Errorf("GODEBUG=%q: AdviseHugePages ran %s collections and left GOGC at %s, want %s and 150\n%s", tc.godebug, collections, gcpercent, tc.collections, out)
		}
		if flags == nil {
			t.Fatalf("GODEBUG=%q: the child printed no flags:\n%s", tc.godebug, out)
		}
		if got := slices.Contains(flags, "hg"); got != tc.advised {
			t.Errorf("GODEBUG=%q: heap mapping advised for huge pages = %v, want %v\n%s", tc.godebug, got, tc.advised, out)
		}
		t.Logf("GODEBUG=%q:\n%s", tc.godebug, out)
	}
}

// mappingOf returns the VmFlags and AnonHugePages (kB) of the mapping of
// this process that contains address a.
func mappingOf(a uintptr) (flags string, hugeKB int, err error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	in := false
	found := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			lo, hi, _ := strings.Cut(fields[0], "-")
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(a) >= l && uint64(a) < h
			found = found || in
			continue
		}
		if !in {
			continue
		}
		switch {
		case strings.HasPrefix(line, "VmFlags:"):
			flags = strings.TrimPrefix(line, "VmFlags:")
		case strings.HasPrefix(line, "AnonHugePages:") && len(fields) > 1:
			hugeKB, _ = strconv.Atoi(fields[1])
		}
	}
	if err := sc.Err(); err != nil {
		return "", 0, err
	}
	if !found {
		return "", 0, fmt.Errorf("no mapping contains %#x", a)
	}
	return flags, hugeKB, nil
}
