package tools

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pramkit/pramkit/pkg/cli"
)

// The table names each command by its cobra name, and it lists exactly the
// tools that have a cmd/<tool> one-liner (go install …/cmd/...@latest), so
// the multi-call binary and the separate installs hold the same tools.
func TestTableMatchesCommands(t *testing.T) {
	s := &cli.Streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
	for _, tool := range All {
		if got := tool.New(s).Name(); got != tool.Name {
			t.Errorf("table entry %q builds command %q", tool.Name, got)
		}
		if tool.Main == nil {
			t.Errorf("%s has no Main", tool.Name)
		}
		if got, ok := Lookup(tool.Name); !ok || got.Name != tool.Name {
			t.Errorf("Lookup(%q) = %q, %v", tool.Name, got.Name, ok)
		}
	}
	if _, ok := Lookup("pramkit"); ok {
		t.Error("Lookup(pramkit) found a tool")
	}
	dirs, err := os.ReadDir(filepath.Join("..", "..", "..", "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, d := range dirs {
		if d.IsDir() && d.Name() != "pramkit" {
			cmds = append(cmds, d.Name())
		}
	}
	names := slices.Clone(Names())
	slices.Sort(names)
	if !slices.Equal(cmds, names) {
		t.Errorf("cmd/ holds %v, the table %v", cmds, names)
	}
}
