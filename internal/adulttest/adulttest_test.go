package adulttest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadReadsEveryAdultRow(t *testing.T) {
	// adult.names: 32561 training and 16281 test instances.
	if got := len(Load(t, "data")); got != 32561 {
		t.Errorf("adult.data: %d rows, want 32561", got)
	}
	test := Load(t, "test")
	if got := len(test); got != 16281 {
		t.Errorf("adult.test: %d rows, want 16281", got)
	}
	if inc := test[0][14]; inc != "<=50K" {
		t.Errorf("test income %q, want <=50K without the trailing period", inc)
	}
}

// A test that skips for want of Adult appends its name to the file named
// by $PRAMKIT_ADULT_SKIPS, which `make test` counts.
func TestDirRecordsSkip(t *testing.T) {
	repo := t.TempDir() // a repo with no Adult beside it or in it
	if err := os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "skips")
	t.Chdir(repo)
	t.Setenv("ADULT_DIR", "")
	t.Setenv("CI", "")
	t.Setenv(SkipLogEnv, log)
	for _, name := range []string{"one", "two"} {
		t.Run(name, func(t *testing.T) {
			Dir(t)
			t.Error("Dir found Adult in an empty repo")
		})
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if want := "TestDirRecordsSkip/one\nTestDirRecordsSkip/two\n"; string(b) != want {
		t.Errorf("skip log %q, want %q", b, want)
	}
}
