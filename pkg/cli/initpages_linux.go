package cli

import (
	"bufio"
	"bytes"
	"debug/elf"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// ReleaseInitPages unmaps the pages of the program's code (and, in a
// static binary, of its read-only data) that the process has touched so
// far, at start-up: what the stage then runs is mapped back as it runs.
//
// Why: the multi-call binary holds every tool, report's plotting fonts
// and Beam's SDK — about 20 MB of code and 22 MB of read-only data. The
// runtime and some 240 package initialisers touch pages all over them,
// and the kernel maps each fault's neighbourhood along with it
// (fault-around, whole large folios), so a process had 25 MB of the
// binary resident before it read a row: a quarter of issue 11's 100 MB,
// most of it code the stage never runs. Those pages are clean copies of
// the file in the page cache: MADV_DONTNEED unmaps them, and a later touch
// maps a page back from the cache, a minor fault without I/O. Peak RSS
// went down by 10 to 13 MB (decrypt → CSV on 10M rows 81 → 71 MB,
// estimate on Parquet 42 → 32, anonymize A′ → Parquet at 1M values
// 100 → 87–90), for about 1 ms of faults.
//
// Only the executable's mappings that are not writable are touched, and
// the read-only data only when the executable is statically linked and
// not position-independent (as make build links it, CGO_ENABLED=0):
// otherwise a read-only mapping may hold data the dynamic loader
// relocated (RELRO), which MADV_DONTNEED would reset to the file's bytes.
// Code is never relocated. It does nothing where /proc/self is not
// readable. Only the first call does anything.
func ReleaseInitPages() { initPagesOnce.Do(releaseInitPages) }

var initPagesOnce sync.Once

func releaseInitPages() {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	for _, m := range releasableMappings(maps, exe, staticExecutable(exe)) {
		// By address: these pages are no Go memory. An error leaves
		// them mapped, and the run goes on.
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, m.addr, m.len, unix.MADV_DONTNEED)
	}
}

// releasableMappings returns, from the text of /proc/self/maps, the
// mappings of the file exe that ReleaseInitPages may drop: its
// executable ones, and when static is true its other read-only ones.
func releasableMappings(maps []byte, exe string, static bool) []mapping {
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// "lo-hi perms offset dev inode path"
		f := bytes.Fields(sc.Bytes())
		if len(f) < 6 || string(f[5]) != exe || len(f[1]) < 3 || f[1][0] != 'r' || f[1][1] == 'w' {
			continue
		}
		if f[1][2] != 'x' && !static {
			continue
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(string(lo), 16, 64)
		b, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || b <= a {
			continue
		}
		out = append(out, mapping{uintptr(a), uintptr(b - a)})
	}
	return out
}

// mapping is a range of the address space: addr, len bytes.
type mapping struct{ addr, len uintptr }

// staticExecutable reports whether the ELF file at path is an executable
// of fixed addresses (ET_EXEC) that nothing relocates: no PT_INTERP, no
// PT_DYNAMIC, and no PT_GNU_RELRO (a static C runtime applies its own
// relocations to such a segment at start-up, then makes it read-only:
// a static cgo build has one; Go's own linker, for make build, has none).
func staticExecutable(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC {
		return false
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC || p.Type == elf.PT_GNU_RELRO {
			return false
		}
	}
	return true
}
