package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/table"
)

// seedCmd is a command that draws one number from its --seed source and
// reports it, with --insecure-seed when guarded.
func seedCmd(guarded bool, got *uint64, s *Seed) *cobra.Command {
	cmd := &cobra.Command{Use: "tool", RunE: func(c *cobra.Command, _ []string) error {
		*got = s.Rand(c).Uint64()
		return nil
	}}
	AddSeedFlag(cmd, s)
	if guarded {
		AddInsecureSeedFlag(cmd, s)
	}
	return Root(cmd)
}

// draw runs a fresh command with args and returns its draw, stderr and
// exit code.
func draw(t *testing.T, guarded bool, args ...string) (uint64, string, int) {
	t.Helper()
	var got uint64
	var errb bytes.Buffer
	st := &Streams{Out: &bytes.Buffer{}, Err: &errb}
	code := Run(seedCmd(guarded, &got, &Seed{}), args, st)
	return got, errb.String(), code
}

func TestSeedAloneDoesNotFixGuardedRandomness(t *testing.T) {
	a, errs, code := draw(t, true, "--seed", "1")
	b, _, _ := draw(t, true, "--seed", "1")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if a == b {
		t.Error("two guarded runs with --seed 1 drew the same number: the seed reached privacy-protecting randomness (chance 2^-64)")
	}
	want := "tool: warning: --seed does not fix secrets, pads, keys or the mechanism's noise, which come from crypto/rand; add --insecure-seed to fix them too (FOR TESTS ONLY)\n"
	if errs != want {
		t.Errorf("stderr %q, want %q", errs, want)
	}
}

func TestInsecureSeedReproducesAndWarns(t *testing.T) {
	a, errs, code := draw(t, true, "--seed", "1", "--insecure-seed")
	b, _, _ := draw(t, true, "--seed", "1", "--insecure-seed")
	if code != ExitOK || a != b {
		t.Fatalf("exit %d, draws %d and %d: --insecure-seed must reproduce", code, a, b)
	}
	if c, _, _ := draw(t, true, "--seed", "2", "--insecure-seed"); c == a {
		t.Error("seeds 1 and 2 drew the same number")
	}
	want := "tool: warning: --insecure-seed: the output is reproducible by anyone who knows the seed; never publish it\n"
	if errs != want {
		t.Errorf("stderr %q, want %q", errs, want)
	}
}

func TestInsecureSeedNeedsSeed(t *testing.T) {
	_, errs, code := draw(t, true, "--insecure-seed")
	if code != ExitUsage || !strings.HasPrefix(errs, "tool: --insecure-seed needs --seed N") {
		t.Errorf("exit %d, stderr %q; want a usage error", code, errs)
	}
}

func TestUnguardedSeedStillReproduces(t *testing.T) {
	// estimate's --seed (bootstrap, Monte Carlo) protects nothing.
	a, errs, _ := draw(t, false, "--seed", "1")
	b, _, _ := draw(t, false, "--seed", "1")
	if a != b || errs != "" {
		t.Errorf("draws %d and %d, stderr %q: an unguarded --seed must reproduce silently", a, b, errs)
	}
	if _, errs, code := draw(t, false, "--insecure-seed"); code != ExitUsage || !strings.Contains(errs, "unknown flag") {
		t.Errorf("exit %d, stderr %q: --insecure-seed exists only where it guards something", code, errs)
	}
}

func TestInsecureSeedHelpSaysWhatItCosts(t *testing.T) {
	var got uint64
	cmd := seedCmd(true, &got, &Seed{})
	if u := cmd.Flags().Lookup("insecure-seed").Usage; !strings.Contains(u, "FOR TESTS ONLY") {
		t.Errorf("--insecure-seed help %q", u)
	}
	if u := cmd.Flags().Lookup("seed").Usage; !strings.Contains(u, "together with --insecure-seed") || !strings.Contains(u, "FOR TESTS AND EXPERIMENTS ONLY") {
		t.Errorf("--seed help %q does not point at --insecure-seed", u)
	}
}

func TestMarkAndCarryInsecureSeed(t *testing.T) {
	out := table.Meta{}
	(&Seed{}).Mark(out)
	if _, ok := out[InsecureSeedKey]; ok {
		t.Error("Mark without --insecure-seed marked the output")
	}
	(&Seed{Insecure: true}).Mark(out)
	if out[InsecureSeedKey] != "true" {
		t.Errorf("Mark with --insecure-seed: %v", out)
	}

	var errb bytes.Buffer
	st := &Streams{Err: &errb}
	out = table.Meta{}
	if CarryInsecureSeed(st, "perturb", "a.csv", table.Meta{"stage": "encrypt"}, out) || errb.Len() > 0 || len(out) > 0 {
		t.Errorf("an unmarked input was carried: out %v, stderr %q", out, errb.String())
	}
	if !CarryInsecureSeed(st, "perturb", "a.csv", table.Meta{InsecureSeedKey: "true"}, out) {
		t.Fatal("a marked input was not reported")
	}
	if out[InsecureSeedKey] != "true" {
		t.Errorf("the mark was not carried: %v", out)
	}
	want := "perturb: warning: a.csv was made with --insecure-seed: anyone who knows the seed can undo it; never publish what comes from it\n"
	if errb.String() != want {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
	if !CarryInsecureSeed(st, "estimate", "b.csv", table.Meta{InsecureSeedKey: "true"}, nil) {
		t.Error("a nil output must be allowed (warn only)")
	}
}
