package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pramkit/pramkit/beam/internal/beamtest"
	"github.com/pramkit/pramkit/internal/cmdtest"
)

// TestAnonymizeCommand runs pramkit-beam anonymize as the installed binary
// would (registration, --shard-rows, the anonymize flags after --) on
// Adult's education at ℓ′ = 3: 32561 rows lose 2, and 32559 rows at 10000
// per shard make 4 shards with N = 32559 in each one's metadata; a
// sensitive column the input lacks exits 1.
func TestAnonymizeCommand(t *testing.T) {
	_, dir := beamtest.AdultRelease(t)
	cb := filepath.Join(beamtest.MainRoot(t), "testdata", "adult", "codebook.json")
	t.Chdir(dir)
	os.Args = []string{"pramkit-beam", "anonymize", "--input", "adult.arrow", "--output", "pub", "--shard-rows", "10000",
		"--", "--sensitive", "education", "--l", "3", "--codebook", cb, "--seed", "1", "--insecure-seed"}
	if code := run(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	shards, _ := filepath.Glob("pub-*.arrow")
	if len(shards) != 4 {
		t.Fatalf("shards %v, want 4", shards)
	}
	rows := 0
	for _, s := range shards {
		_, part, meta := cmdtest.ReadTable(t, s)
		if meta["N"] != "32559" || meta["dropped"] != "2" || meta["mechanism"] != "diverted" {
			t.Errorf("%s: metadata %v", s, meta)
		}
		rows += len(part)
	}
	if rows != 32559 {
		t.Errorf("%d rows in the shards, want 32559", rows)
	}
	os.Args = []string{"pramkit-beam", "anonymize", "--input", "adult.arrow", "--output", "bad", "--", "--sensitive", "occupation", "--l", "3", "--codebook", cb}
	if code := run(); code != 1 {
		t.Errorf("a missing sensitive column: exit %d, want 1", code)
	}
}
