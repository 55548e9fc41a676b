package cli

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestHeapIsAdvisedHugePages: after AdviseHugePages, heap that the run
// allocates lies in memory advised MADV_HUGEPAGE (the "hg" flag of its
// mapping in /proc/self/smaps), and under GODEBUG=disablethp=1 it does
// not. Each case runs in a fresh process (this test binary, re-run), since
// the advice covers the heap space of a process that has just started.
func TestHeapIsAdvisedHugePages(t *testing.T) {
	if os.Getenv("PRAMKIT_HUGEPAGES_CHILD") != "" {
		AdviseHugePages()
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
		godebug string
		advised bool
	}{
		{"", true},
		{"disablethp=1", false},
	} {
		c := exec.Command(os.Args[0], "-test.run=^TestHeapIsAdvisedHugePages$")
		c.Env = append(os.Environ(), "PRAMKIT_HUGEPAGES_CHILD=1", "GODEBUG="+tc.godebug)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("GODEBUG=%q: %v\n%s", tc.godebug, err, out)
		}
		var flags []string
		for _, line := range strings.Split(string(out), "\n") {
			if f, ok := strings.CutPrefix(line, "flags: "); ok {
				flags = strings.Fields(f)
			}
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
