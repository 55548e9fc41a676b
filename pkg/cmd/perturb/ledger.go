package perturb

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/ledger"
	"github.com/pramkit/pramkit/pkg/pram"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
	"github.com/pramkit/pramkit/pkg/version"
)

// The release ledger (package ledger) counts the γ-diagonal releases of
// each sample across runs, by sample fingerprint. Only gamma-diagonal
// uses it: bitflip and ddps are local mechanisms that each data owner runs
// on their own plaintext table, which has no sample fingerprint, and a
// fingerprint of the table's content would put a digest of private data
// in the ledger; they refuse --ledger and --no-ledger.

// openLedger opens and locks the ledger, or returns nil with --no-ledger.
func (o *Options) openLedger() (*ledger.Ledger, error) {
	g := o.gammaOpts()
	if g.NoLedger && o.cmd.Flags().Changed("ledger") {
		return nil, cli.Usagef("--ledger and --no-ledger contradict each other: give one")
	}
	return OpenLedger(g.Ledger, g.NoLedger, o.Streams)
}

// OpenLedger opens and locks the release ledger at path (ledger's default
// path when empty), or warns and returns nil under noLedger: perturb's
// ledger, warnings and errors, which pramkit-beam perturb shares so that
// the releases either makes are counted together.
func OpenLedger(path string, noLedger bool, streams *cli.Streams) (*ledger.Ledger, error) {
	if noLedger {
		streams.Warnf("perturb", "--no-ledger: releases of this sample are not counted; release each sample once, or use a ledger")
		return nil, nil
	}
	if path == "" {
		var err error
		if path, err = ledger.DefaultPath(); err != nil {
			return nil, fmt.Errorf("%v: pass --ledger FILE, or --no-ledger", err)
		}
	}
	return ledger.Open(path, func() {
		streams.Warnf("perturb", "waiting for another perturb to finish with the release ledger %s", path)
	})
}

// composeReleases accounts for earlier releases of the sample: those in
// the inputs' history (a perturbed table perturbed again) and those in the
// ledger. The two overlap (a chain's first release is in the ledger too)
// and neither need be complete (--no-ledger, another ledger), so the
// larger of the two counts and of the two products of γ's is taken: a
// lower bound on the true history that is exact when one of them is. A
// further release is refused unless --allow-recompose; otherwise its
// composed ε is printed.
func (o *Options) composeReleases(led *ledger.Ledger, ins []*gammaInput, p *gammaPlan) error {
	smp := ins[0].smp
	n, m := int(smp.N), int(smp.M)
	// Chain history: the inputs' earlier perturbations, at most
	// chainCount, with a product of γ's at most chainProd (taken over all
	// inputs, a conservative choice when they differ).
	chainCount, chainProd := p.hist.Releases-1, 1.0
	for _, in := range ins {
		chainProd = max(chainProd, in.hist.GammaProduct)
	}
	chain := []float64{}
	if chainProd > 1 {
		chain = []float64{chainProd} // only the product matters for ε
	}

	var prev []ledger.Entry
	if led != nil {
		var err error
		if prev, err = led.Lookup(smp.Fingerprint); err != nil {
			return err
		}
	}
	if p.noiseID != "" {
		// A recorded release with the same keyed noise (same key, sample
		// and γ) had the same offsets: this run is its retry and
		// publishes the same rows, so it is not a further release.
		before := len(prev)
		prev = slices.DeleteFunc(prev, func(e ledger.Entry) bool { return e.NoiseID == p.noiseID })
		p.retry = len(prev) < before
	}
	recorded := make([]float64, len(prev))
	for i, e := range prev {
		recorded[i] = e.Gamma
	}
	earlier := chain
	if logSum(recorded) > logSum(chain) {
		earlier = recorded
	}
	if chainCount == 0 && len(prev) == 0 {
		p.releases = 1
		return nil
	}
	p.releases = max(chainCount, len(prev)) + 1
	if math.IsInf(p.hist.GammaProduct, 0) {
		// gamma_composed, which older readers need, would not be a number.
		return fmt.Errorf("%s: the product of γ over its perturbations overflows: its privacy is spent; draw a new sample for a new release", ins[0].r.Name())
	}
	var err error
	if p.epsComposed, err = pram.ComposedEpsilonGammas(n, m, append(append([]float64(nil), earlier...), p.gamma)); err != nil {
		return err
	}
	if !o.gammaOpts().AllowRecompose {
		if chainCount == 0 {
			last := prev[len(prev)-1]
			return fmt.Errorf("this sample was already released (%d release(s) in the ledger %s, the last on %s to %s): another release composes to ε = %.6g (this release alone: ε = %.6g); pass --allow-recompose to release anyway, or draw a new sample (another --secret) for an independent release", len(prev), led.Path(), last.Time.Format(time.RFC3339), last.Output, p.epsComposed, p.epsilon)
		}
		var name string
		for _, in := range ins {
			if in.hist.Releases == chainCount {
				name = in.r.Name()
				break
			}
		}
		return fmt.Errorf("%s was already perturbed (release %d of this sample): another release of the same sample composes to ε = %.6g (this release alone: ε = %.6g); pass --allow-recompose to release anyway, or draw a new sample (another --secret) for an independent release", name, chainCount, p.epsComposed, p.epsilon)
	}
	o.Streams.Warnf("perturb", "release %d of the same sample: composed ε = %.6g (this release alone: ε = %.6g)", p.releases, p.epsComposed, p.epsilon)
	return nil
}

// logSum is ln Π g.
func logSum(g []float64) float64 {
	s := 0.0
	for _, x := range g {
		s += math.Log(x)
	}
	return s
}

// recordAndCommit records the release in the ledger, then commits the
// output, and removes the record if the commit fails before the data is
// published: a failed run does not count, and a run killed between the
// two over-counts rather than leaving a release the ledger does not know.
// A release to standard output is recorded before its first row
// (recordStream), and only committed here.
func (o *Options) recordAndCommit(led *ledger.Ledger, first *gammaInput, p gammaPlan, w table.Writer) error {
	if led == nil || p.retry || o.streamsOut() {
		return w.Commit() // a retry or a stream is recorded already
	}
	undo, err := o.record(led, first, p)
	if err != nil {
		return err
	}
	if err := w.Commit(); err != nil {
		if errors.Is(err, table.ErrDataPublished) {
			return err // the rows are out: the release counts
		}
		if uerr := undo(); uerr != nil {
			return fmt.Errorf("%v; and %v", err, uerr)
		}
		return err
	}
	return nil
}

// streamsOut says the release goes to standard output, where each row is
// out as soon as it is written: nothing can take it back.
func (o *Options) streamsOut() bool { return o.Output.Path == "" || table.IsStdio(o.Output.Path) }

// recordStream records a release to standard output before its first row
// is written, for good: a run that fails after some rows are out (a
// reader that stops, an input refused at its end) has released them, and
// the ledger over-counts rather than under-counts.
func (o *Options) recordStream(led *ledger.Ledger, first *gammaInput, p gammaPlan) error {
	if led == nil || p.retry || !o.streamsOut() {
		return nil
	}
	_, err := o.record(led, first, p)
	return err
}

// record appends the release to the ledger; undo removes the entry.
func (o *Options) record(led *ledger.Ledger, first *gammaInput, p gammaPlan) (undo func() error, err error) {
	out := "-"
	if path := o.Output.Path; path != "" && !table.IsStdio(path) {
		if abs, err := filepath.Abs(path); err == nil {
			out = abs
		} else {
			out = path
		}
	}
	eps := p.epsilon
	if p.releases > 1 {
		eps = p.epsComposed
	}
	return led.Append(ledger.Entry{
		Fingerprint:     first.smp.Fingerprint,
		SampleID:        first.r.Meta()[release.KeySampleID],
		N:               first.smp.N,
		M:               first.smp.M,
		Gamma:           p.gamma,
		Epsilon:         p.epsilon,
		EpsilonComposed: eps,
		Releases:        p.releases,
		Time:            time.Now(),
		Output:          out,
		ToolVersion:     version.String(),
		NoiseID:         p.noiseID,
	})
}
