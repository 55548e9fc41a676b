package mechanism

import (
	"slices"
	"testing"

	"github.com/spf13/pflag"
)

// TestTableIsConsistent: names are unique, each mechanism has a known
// maker and a kind that is shared (pram, counts) or its own name, and no flag
// list repeats a flag.
func TestTableIsConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range Table {
		if seen[d.Name] || d.Name == "" {
			t.Errorf("mechanism name %q empty or twice in Table", d.Name)
		}
		seen[d.Name] = true
		if d.Maker != Perturb && d.Maker != Anonymize {
			t.Errorf("%s: maker %q", d.Name, d.Maker)
		}
		if d.Kind != d.Name && d.Kind != KindPRAM && d.Kind != KindCounts {
			t.Errorf("%s: kind %q", d.Name, d.Kind)
		}
		for _, flags := range [][]string{d.Flags, d.EstimateFlags} {
			if len(slices.Compact(slices.Sorted(slices.Values(flags)))) != len(flags) {
				t.Errorf("%s: a flag listed twice in %v", d.Name, flags)
			}
		}
	}
}

// flagSet has perturb's mechanism flags, as strings, with the given ones
// set.
func flagSet(t *testing.T, set ...string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	for _, name := range []string{"gamma", "lie", "pi-s", "codebook", "epsilon", "columns", "column"} {
		fs.String(name, "", "")
	}
	for _, name := range set {
		if err := fs.Set(name, "1"); err != nil {
			t.Fatal(err)
		}
	}
	return fs
}

func TestRefuse(t *testing.T) {
	tests := []struct {
		chosen string
		set    []string
		want   string
	}{
		{"gamma-diagonal", []string{"gamma", "epsilon"}, ""}, // its own flag, and a flag of all
		{"gamma-diagonal", []string{"pi-s", "lie"}, "--lie belongs to --mechanism bitflip, not gamma-diagonal; drop it or choose that mechanism"},
		{"gamma-diagonal", []string{"codebook"}, "--codebook belongs to --mechanism bitflip or ddps, not gamma-diagonal; drop it or choose one of those mechanisms"},
		{"bitflip", []string{"codebook", "columns", "lie"}, ""},
		{"ddps", []string{"codebook", "column", "pi-s"}, ""},
		{"ddps", []string{"columns"}, "--columns belongs to --mechanism bitflip, not ddps; drop it or choose that mechanism"},
		{"bitflip", []string{"gamma"}, "--gamma belongs to --mechanism gamma-diagonal, not bitflip; drop it or choose that mechanism"},
	}
	for _, tt := range tests {
		if got := Refuse(Perturb, tt.chosen, flagSet(t, tt.set...)); got != tt.want {
			t.Errorf("Refuse(%s, %v) = %q, want %q", tt.chosen, tt.set, got, tt.want)
		}
	}
}

func TestRefuseEstimate(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("query", "", "")
	fs.String("json", "", "")
	if got := RefuseEstimate("r.csv", "anatomy", fs); got != "" {
		t.Errorf("nothing set: %q", got)
	}
	_ = fs.Set("json", "1")
	_ = fs.Set("query", "a=b")
	if got := RefuseEstimate("r.csv", "global", fs); got != "" {
		t.Errorf("global's --query refused: %q", got)
	}
	want := "--query applies to diverted, anatomy, global releases only, but r.csv is a bitflip release"
	if got := RefuseEstimate("r.csv", "bitflip", fs); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestNamesAndUnknown(t *testing.T) {
	if got := Names(Perturb); !slices.Equal(got, []string{"gamma-diagonal", "bitflip", "ddps"}) {
		t.Errorf("Names(perturb) = %v", got)
	}
	if got := OfKind(KindCounts); !slices.Equal(got, []string{"diverted", "anatomy", "global"}) {
		t.Errorf("OfKind(counts) = %v", got)
	}
	if got, want := Unknown(Anonymize, "x"), `unknown --mechanism "x": choose diverted, anatomy or global`; got != want {
		t.Errorf("Unknown = %q, want %q", got, want)
	}
	if _, ok := Lookup("rr"); ok {
		t.Error("Lookup found rr")
	}
}

// TestOptionsOf: a mechanism's options are allocated once and found again
// under its name; another name has its own.
func TestOptionsOf(t *testing.T) {
	type rrOptions struct{ P float64 }
	var opts Options
	OptionsOf[rrOptions](&opts, "rr").P = 0.3
	if got := OptionsOf[rrOptions](&opts, "rr").P; got != 0.3 {
		t.Errorf("rr's P = %v after setting 0.3", got)
	}
	if got := OptionsOf[rrOptions](&opts, "other").P; got != 0 {
		t.Errorf("another mechanism's P = %v, want its own zero", got)
	}
	if len(opts) != 2 {
		t.Errorf("%d entries, want 2", len(opts))
	}
}
