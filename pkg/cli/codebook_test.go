package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInferCodebookReadsTheFileAndSavesIt(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "t.csv")
	os.WriteFile(in, []byte("sex,job\nM,b\nF,?\nM,a\n"), 0o644)
	save := filepath.Join(dir, "cb.json")
	c := &CodebookFlags{Infer: true, Save: save, Missing: "?"}
	cb, err := c.Load(&Streams{}, in, []string{"job", "sex"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cb.Columns[0].Labels(), ","); got != "a,b,?" {
		t.Errorf("job categories %q, want a,b,? (sorted, missing last)", got)
	}
	if got := strings.Join(cb.Columns[1].Labels(), ","); got != "F,M" {
		t.Errorf("sex categories %q", got)
	}
	back, err := (&CodebookFlags{Path: save}).Load(&Streams{}, in, nil)
	if err != nil || back.Hash() != cb.Hash() {
		t.Fatalf("saved codebook differs: %v", err)
	}
}

func TestCodebookFlagsRefuseAmbiguousOrImpossibleRequests(t *testing.T) {
	cases := []struct {
		name string
		c    CodebookFlags
		in   string
		want string
	}{
		{"both", CodebookFlags{Path: "x.json", Infer: true}, "t.csv", "either --codebook or --infer-codebook"},
		{"neither", CodebookFlags{}, "t.csv", "a codebook is needed"},
		{"infer from stdin", CodebookFlags{Infer: true}, "-", "give a file, not standard input"},
	}
	for _, tc := range cases {
		_, err := tc.c.Load(&Streams{}, tc.in, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || ExitCode(err) != ExitUsage {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
}
