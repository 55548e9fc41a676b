package cli

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestReleasableMappingsAreTheExecutablesReadOnlyOnes: of a process's
// mappings, ReleaseInitPages drops only the executable's, never a
// writable one (its data, which the run has written), and its read-only
// data only when it is static (elsewhere that may be relocated RELRO).
func TestReleasableMappingsAreTheExecutablesReadOnlyOnes(t *testing.T) {
	maps := []byte(`00400000-01844000 r-xp 00000000 fe:00 10012002 /work/bin/pramkit
01844000-02ceb000 r--p 01444000 fe:00 10012002 /work/bin/pramkit
02ceb000-032c8000 rw-p 028eb000 fe:00 10012002 /work/bin/pramkit
032c8000-0330a000 rw-p 00000000 00:00 0
c000000000-c004000000 rw-p 00000000 00:00 0
7f0000000000-7f0000020000 r-xp 00000000 fe:00 77 /lib/x86_64-linux-gnu/libc.so.6
7f0000020000-7f0000030000 r--p 00020000 fe:00 77 /lib/x86_64-linux-gnu/libc.so.6
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
7ffd00030000-7ffd00032000 r-xp 00000000 00:00 0 [vdso]
`)
	for _, tc := range []struct {
		static bool
		want   []mapping
	}{
		{true, []mapping{{0x400000, 0x1844000 - 0x400000}, {0x1844000, 0x2ceb000 - 0x1844000}}},
		{false, []mapping{{0x400000, 0x1844000 - 0x400000}}},
	} {
		got := releasableMappings(maps, "/work/bin/pramkit", tc.static)
		if !slices.Equal(got, tc.want) {
			t.Errorf("static %v: %x, want %x", tc.static, got, tc.want)
		}
	}
	if got := releasableMappings(maps, "/work/bin/other", true); len(got) != 0 {
		t.Errorf("another executable's maps: %x, want none", got)
	}
}

// TestReleaseInitPagesLowersResidentCode: in a fresh process (this test
// binary, re-run) the executable's code that is resident after start-up
// is mostly unmapped by ReleaseInitPages, and the process runs on (it
// prints after the call, from code that faults back in).
func TestReleaseInitPagesLowersResidentCode(t *testing.T) {
	if os.Getenv("PRAMKIT_INITPAGES_CHILD") != "" {
		before, err := exeCodeRSS()
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		ReleaseInitPages()
		after, err := exeCodeRSS()
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Printf("code resident: %d kB before, %d kB after\n", before, after)
		os.Exit(0)
	}
	c := exec.Command(os.Args[0], "-test.run=^TestReleaseInitPagesLowersResidentCode$")
	c.Env = append(os.Environ(), "PRAMKIT_INITPAGES_CHILD=1")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var before, after int
	for _, line := range strings.Split(string(out), "\n") {
		if _, err := fmt.Sscanf(line, "code resident: %d kB before, %d kB after", &before, &after); err == nil {
			break
		}
	}
	if before == 0 {
		t.Fatalf("the child printed no resident sizes:\n%s", out)
	}
	// What the child touches after the call (reading smaps, printing)
	// comes back: a fraction of start-up's.
	if after > before/2 {
		t.Errorf("code resident %d kB after ReleaseInitPages, %d before: want under half", after, before)
	}
	t.Logf("%s", out)
}

// exeCodeRSS is the resident kB of this process's executable mappings of
// its own file.
func exeCodeRSS() (int, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	total, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = len(fields) >= 6 && fields[5] == exe && strings.Contains(fields[1], "x")
			continue
		}
		if in && len(fields) > 1 && fields[0] == "Rss:" {
			kb, _ := strconv.Atoi(fields[1])
			total += kb
		}
	}
	return total, sc.Err()
}

// TestStaticExecutableTellsBuilds: a CGO_ENABLED=0 build (as make build
// links the tools) is one whose read-only data ReleaseInitPages may drop;
// a position-independent one (-buildmode=pie) is not.
func TestStaticExecutableTellsBuilds(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		flags  []string
		static bool
	}{
		{"exe", nil, true},
		{"pie", []string{"-buildmode=pie"}, false},
	} {
		bin := filepath.Join(dir, tc.name)
		c := exec.Command("go", append(append([]string{"build"}, tc.flags...), "-o", bin, src)...)
		c.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
		if out, err := c.CombinedOutput(); err != nil {
			t.Skipf("cannot build here: %v\n%s", err, out)
		}
		if got := staticExecutable(bin); got != tc.static {
			t.Errorf("%s build: static %v, want %v", tc.name, got, tc.static)
		}
	}
}
