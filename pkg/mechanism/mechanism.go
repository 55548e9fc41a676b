// Package mechanism is pramkit's one table of mechanisms: every mechanism
// that makes a release (perturb's gamma-diagonal, bitflip and ddps,
// anonymize's diverted, anatomy and global) is described here once, by a
// line of Table: its name, the command that makes its releases, the kind
// of release estimate reads it as, and the flags it owns in that command
// and in estimate.
//
// The model is miller's table of verbs (transformers/aaa_transformer_table.go),
// with one difference forced by Go's import graph: a mechanism's steps (the
// perturb or anonymize step that makes a release, the estimate step that
// reads it) and its help text are functions and strings of the command
// packages, which import this one, so they cannot sit in this table without
// a cycle. Each command therefore holds one table of its steps
// (perturb.mechanisms, anonymize.steps, estimate.kinds), one line per
// mechanism naming a step value that the mechanism's own file of the
// command defines, and each command's tests check that its table and this
// one name the same mechanisms, so that a line missing on either side fails
// a test instead of a run. A mechanism's own flags are parsed into its own
// options struct, also in its file, which the command's Options hold by
// name (Options, OptionsOf) without a field per mechanism. What a
// mechanism is — its name, owner, kind and flags — is written here only,
// and every check of which flag belongs to which mechanism (Refuse,
// Owners) is derived from it.
//
// Adding a mechanism, say a randomized response "rr" made by perturb and
// read by estimate as a kind of its own (its kind is its name), takes four
// new files (each with its _test.go) and one table entry in each of three
// existing files:
//
//	pkg/release/rr.go          MechanismRR and the release's typed metadata
//	pkg/rr/rr.go               the mechanism's mathematics
//	pkg/cmd/perturb/rr.go      rrOptions, rrOpts, addRRFlags, runRR, rrHelp,
//	                           rrExample, and rrStep, which gathers them
//	pkg/cmd/estimate/rr.go     the same for the estimator, gathered in rrKind
//	pkg/mechanism/mechanism.go one Table entry: name, maker, kind, flags
//	pkg/cmd/perturb/perturb.go one mechanisms line: rrStep,
//	pkg/cmd/estimate/help.go   one kinds line: rrKind,
//
// plus an end-to-end script; the scripts and tests that spell out today's
// list of mechanisms in a usage line or a help text (estimate-help.txtar,
// mechanism-flags.txtar, perturb's TestFlagsOfOtherMechanismsRefused) then
// see the new name there, as users will. A mechanism estimate reads as an
// existing kind (a fourth anonymize mechanism answering count queries) adds
// no line to estimate's table, but the count-query estimator has a case per
// mechanism (counts.go) that it must extend.
package mechanism

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/pramkit/pramkit/pkg/release"
)

// The commands that make releases.
const (
	Perturb   = "perturb"
	Anonymize = "anonymize"
)

// The kinds of release estimate reads (`estimate help KIND`) that several
// mechanisms share or whose name is not a mechanism's. A mechanism that
// estimate reads as a kind of its own (bitflip, ddps) has its name as its
// kind, so that adding one needs no constant here.
const (
	KindPRAM   = "pram"
	KindCounts = "counts"
)

// Descriptor is one mechanism.
type Descriptor struct {
	// Name is the value of --mechanism and of the release metadata's
	// mechanism key.
	Name string
	// Maker is the command that makes its releases: Perturb or Anonymize.
	Maker string
	// Kind is the kind of release estimate reads it as: KindPRAM,
	// KindCounts, or its own Name.
	Kind string
	// Flags are the maker's flags that apply to this mechanism; a flag
	// listed by some mechanisms of a maker is refused with any other.
	// Flags listed by none (--epsilon, -o, --seed…) are every
	// mechanism's.
	Flags []string
	// EstimateFlags are estimate's flags that apply to releases of this
	// mechanism and not to every release (--method, --level and --columns
	// are some kinds'); the same rule refuses them on other releases, and
	// `estimate help KIND` lists a kind's.
	EstimateFlags []string
}

// Table is every mechanism, in the order of the pipeline's stages: perturb's
// (default first), then anonymize's (default first).
var Table = []Descriptor{
	{release.MechanismGamma, Perturb, KindPRAM,
		[]string{"gamma", "allow-recompose", "ledger", "no-ledger", "noise-key"},
		[]string{"marginal", "gamma", "rows", "sample-size", "ci", "replicates", "max-iter", "tol", "truth-id", "method", "level", "columns", "tabulate"}},
	{release.MechanismBitflip, Perturb, release.MechanismBitflip,
		[]string{"lie", "columns", "codebook"},
		[]string{"anonymity", "anonymity-samples", "anonymity-max-bits", "level", "columns", "tabulate"}},
	{release.MechanismDDPS, Perturb, release.MechanismDDPS,
		[]string{"column", "pi-s", "pi-bot", "non-participant", "codebook"},
		[]string{"round-two", "columns", "tabulate"}},
	{release.MechanismDiverted, Anonymize, KindCounts,
		[]string{"grouping"},
		[]string{"query", "queries", "decoy", "ibu-stop", "ibu-tol", "ibu-max-iter", "columns", "tabulate"}},
	{release.MechanismAnatomy, Anonymize, KindCounts,
		[]string{"groups", "group-column", "grouping"},
		[]string{"query", "queries", "groups", "columns", "tabulate"}},
	{release.MechanismGlobal, Anonymize, KindCounts,
		[]string{"p"},
		[]string{"query", "queries", "columns", "tabulate"}},
}

// Lookup returns the mechanism named name.
func Lookup(name string) (Descriptor, bool) {
	i := slices.IndexFunc(Table, func(d Descriptor) bool { return d.Name == name })
	if i < 0 {
		return Descriptor{}, false
	}
	return Table[i], true
}

// Names are the names of maker's mechanisms in Table's order; maker ""
// gives every mechanism's.
func Names(maker string) []string {
	var names []string
	for _, d := range Table {
		if maker == "" || d.Maker == maker {
			names = append(names, d.Name)
		}
	}
	return names
}

// OfKind are the names of the mechanisms estimate reads as kind.
func OfKind(kind string) []string {
	var names []string
	for _, d := range Table {
		if d.Kind == kind {
			names = append(names, d.Name)
		}
	}
	return names
}

// Choices are the names of maker's mechanisms as a sentence says them:
// "gamma-diagonal, bitflip or ddps".
func Choices(maker string) string { return orList(Names(maker)) }

// Unknown is the usage message for a --mechanism that maker does not have.
func Unknown(maker, name string) string {
	return fmt.Sprintf("unknown --mechanism %q: choose %s", name, Choices(maker))
}

// Owners maps each flag that some mechanisms own to their names, in
// Table's order: the maker's flags (estimate false) or estimate's flags
// of every mechanism (estimate true, maker ignored).
func Owners(maker string, estimate bool) map[string][]string {
	owners := map[string][]string{}
	for _, d := range Table {
		flags := d.EstimateFlags
		if !estimate {
			if d.Maker != maker {
				continue
			}
			flags = d.Flags
		}
		for _, f := range flags {
			owners[f] = append(owners[f], d.Name)
		}
	}
	return owners
}

// Refuse returns a usage message for the first flag given on fs (in fs's
// order) that belongs to other mechanisms of maker than chosen, and ""
// when there is none. A flag of another mechanism would otherwise be
// silently ignored, and the release would not be the one asked for.
func Refuse(maker, chosen string, fs *pflag.FlagSet) string {
	owners := Owners(maker, false)
	msg := ""
	fs.VisitAll(func(f *pflag.Flag) {
		mechs, owned := owners[f.Name]
		if msg != "" || !owned || !f.Changed || slices.Contains(mechs, chosen) {
			return
		}
		that := "that mechanism"
		if len(mechs) > 1 {
			that = "one of those mechanisms"
		}
		msg = fmt.Sprintf("--%s belongs to --mechanism %s, not %s; drop it or choose %s", f.Name, orList(mechs), chosen, that)
	})
	return msg
}

// RefuseEstimate is Refuse for estimate, whose mechanism is the release's
// (named file): a flag that applies to other kinds of release only.
func RefuseEstimate(file, mech string, fs *pflag.FlagSet) string {
	owners := Owners("", true)
	msg := ""
	fs.VisitAll(func(f *pflag.Flag) {
		mechs, owned := owners[f.Name]
		if msg != "" || !owned || !f.Changed || slices.Contains(mechs, mech) {
			return
		}
		msg = fmt.Sprintf("--%s applies to %s releases only, but %s is %s %s release", f.Name, strings.Join(mechs, ", "), file, article(mech), mech)
	})
	return msg
}

// article is "an" before a vowel, else "a": "an anatomy release".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// orList writes names as "a", "a or b", "a, b or c".
func orList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
