package ledger

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func entry(fp string, gamma float64) Entry {
	return Entry{Fingerprint: fp, N: 100, M: 10, Gamma: gamma, Epsilon: 0.5, EpsilonComposed: 0.5, Releases: 1,
		Time: time.Date(2026, 11, 24, 21, 0, 0, 123, time.FixedZone("x", 3600)), Output: "out.parquet", ToolVersion: "test"}
}

func TestAppendLookup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "pramkit", "releases.jsonl")
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, e := range []Entry{entry("a", 2), entry("b", 3), entry("a", 4)} {
		if _, err := l.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := l.Lookup("a")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Gamma != 2 || got[1].Gamma != 4 {
		t.Fatalf("Lookup(a) = %+v, want γ 2 then 4", got)
	}
	if got[0].Time.Location() != time.UTC || got[0].Time.Nanosecond() != 0 {
		t.Errorf("time %v: want UTC whole seconds", got[0].Time)
	}
	if none, err := l.Lookup("c"); err != nil || len(none) != 0 {
		t.Errorf("Lookup(c) = %v, %v; want nothing", none, err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"time":"2026-11-24T20:00:00Z"`) {
		t.Errorf("time not RFC 3339 UTC in %s", b)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("ledger mode %v, want 0600", st.Mode().Perm())
	}
	dst, _ := os.Stat(filepath.Dir(path))
	if dst.Mode().Perm() != 0o700 {
		t.Errorf("ledger directory mode %v, want 0700", dst.Mode().Perm())
	}
}

func TestUndo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.jsonl")
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(entry("a", 2)); err != nil {
		t.Fatal(err)
	}
	undo, err := l.Append(entry("a", 3))
	if err != nil {
		t.Fatal(err)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	got, err := l.Lookup("a")
	if err != nil || len(got) != 1 || got[0].Gamma != 2 {
		t.Fatalf("after undo: %+v, %v; want the first entry only", got, err)
	}
}

func TestAppendRefusesBadEntry(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "l.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e := entry("", 2)
	if _, err := l.Append(e); err == nil {
		t.Error("Append without fingerprint: no error")
	}
	e = entry("a", 1)
	if _, err := l.Append(e); err == nil {
		t.Error("Append with γ = 1: no error")
	}
}

func TestMalformedLine(t *testing.T) {
	good := `{"fingerprint":"a","n":100,"m":10,"gamma":2,"epsilon":0.1,"epsilon_composed":0.1,"releases":1,"time":"2026-11-24T20:00:00Z","output":"o","tool_version":"v","future_field":1}`
	for _, tc := range []struct{ name, content, line string }{
		{"not JSON", good + "\n\nhello\n", "line 3"},
		{"trailing garbage", good + "\n" + good + " x\n", "line 2"},
		{"missing gamma", `{"fingerprint":"a","releases":1,"time":"2026-11-24T20:00:00Z"}` + "\n", "line 1"},
		{"cut short", good + "\n" + good, "line 2"},
		{"bad time", strings.Replace(good, "2026-11-24T20:00:00Z", "yesterday", 1) + "\n", "line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "l.jsonl")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			_, err = l.Lookup("zzz")
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range []string{path, tc.line + ":", "repair or delete that line"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
	// The good line alone, with an unknown field, reads.
	path := filepath.Join(t.TempDir(), "l.jsonl")
	os.WriteFile(path, []byte(good+"\n"), 0o600)
	l, _ := Open(path, nil)
	defer l.Close()
	if got, err := l.Lookup("a"); err != nil || len(got) != 1 {
		t.Errorf("good line: %v, %v", got, err)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/x/state")
	t.Setenv("HOME", "/home/u")
	if p, _ := DefaultPath(); p != "/x/state/pramkit/releases.jsonl" {
		t.Errorf("with XDG_STATE_HOME: %s", p)
	}
	t.Setenv("XDG_STATE_HOME", "relative/state") // ignored, per the XDG spec
	if p, _ := DefaultPath(); p != "/home/u/.local/state/pramkit/releases.jsonl" {
		t.Errorf("with a relative XDG_STATE_HOME: %s", p)
	}
	t.Setenv("XDG_STATE_HOME", "")
	if p, _ := DefaultPath(); p != "/home/u/.local/state/pramkit/releases.jsonl" {
		t.Errorf("without XDG_STATE_HOME: %s", p)
	}
}

// releaseOnce is what perturb does: look up under the lock, refuse a
// known fingerprint, else append. It reports whether it released.
func releaseOnce(path, fp string, hold time.Duration) (bool, error) {
	l, err := Open(path, nil)
	if err != nil {
		return false, err
	}
	defer l.Close()
	prev, err := l.Lookup(fp)
	if err != nil || len(prev) > 0 {
		return false, err
	}
	time.Sleep(hold) // the perturbation itself: widen the race window
	_, err = l.Append(entry(fp, 2))
	return err == nil, err
}

// TestConcurrentCheckThenAppend: of many goroutines releasing the same
// sample at once, exactly one succeeds. Without the lock, all of them
// would pass the look-up during the sleep.
func TestConcurrentCheckThenAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.jsonl")
	const workers = 8
	var wg sync.WaitGroup
	results := make(chan bool, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := releaseOnce(path, "same", 20*time.Millisecond)
			if err != nil {
				t.Error(err)
			}
			results <- ok
		}()
	}
	wg.Wait()
	close(results)
	n := 0
	for ok := range results {
		if ok {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d goroutines released the same sample, want exactly 1", n)
	}
}

// TestTwoProcesses runs releaseOnce in two child processes (this test
// binary, re-executed) at once: exactly one releases.
func TestTwoProcesses(t *testing.T) {
	if path := os.Getenv("LEDGER_TEST_CHILD"); path != "" {
		ok, err := releaseOnce(path, "same", 300*time.Millisecond)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		fmt.Println("released:", ok)
		return
	}
	path := filepath.Join(t.TempDir(), "l.jsonl")
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for range 2 {
		c := exec.Command(os.Args[0], "-test.run=^TestTwoProcesses$")
		c.Env = append(os.Environ(), "LEDGER_TEST_CHILD="+path)
		var b strings.Builder
		c.Stdout, c.Stderr = &b, &b
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, c), append(outs, &b)
	}
	released := 0
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, outs[i])
		}
		switch {
		case strings.Contains(outs[i].String(), "released: true"):
			released++
		case !strings.Contains(outs[i].String(), "released: false"):
			t.Fatalf("child %d said:\n%s", i, outs[i])
		}
	}
	if released != 1 {
		t.Errorf("%d processes released the same sample, want exactly 1", released)
	}
	l, _ := Open(path, nil)
	defer l.Close()
	if got, _ := l.Lookup("same"); len(got) != 1 {
		t.Errorf("ledger has %d entries, want 1", len(got))
	}
}

// TestWaitCalled: a second opener is told it waits.
func TestWaitCalled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.jsonl")
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan bool, 1)
	done := make(chan error, 1)
	go func() {
		l2, err := Open(path, func() { waited <- true })
		if err == nil {
			l2.Close()
		}
		done <- err
	}()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("the second Open did not report waiting")
	}
	l.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestReplacedLedgerIsNotWrittenBehindItsBack: a ledger replaced at its
// path while a run holds the old file's lock (cp and mv, as an editor or
// sed -i does) refuses that run's record, which would go to a file nobody
// reads while another run, locking the new file, releases the same sample
// again; a run that opens it afterwards locks and writes the new file.
func TestReplacedLedgerIsNotWrittenBehindItsBack(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "l.jsonl")
	a, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Append(entry("x", 2)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path+".new", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Append(entry("x", 3)); err == nil || !strings.Contains(err.Error(), "was replaced or removed while this run held it") {
		t.Errorf("append to the replaced ledger: %v", err)
	}
	c, err := Open(path, nil) // the new file: not locked by a
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Append(entry("x", 4)); err != nil {
		t.Fatal(err)
	}
	got, err := c.Lookup("x")
	if err != nil || len(got) != 2 || got[0].Gamma != 2 || got[1].Gamma != 4 {
		t.Errorf("the new ledger: %+v, %v; want γ 2 then 4", got, err)
	}
}
