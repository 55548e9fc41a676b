package release

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/pramkit/pramkit/pkg/pram"
	"github.com/pramkit/pramkit/pkg/table"
)

// MechanismGamma is the "mechanism" item of a γ-diagonal release.
const MechanismGamma = "gamma-diagonal"

// gammaFix is what to do about a damaged γ-diagonal release.
const gammaFix = "re-run perturb"

// GammaDiagonal is the metadata of a γ-diagonal PRAM release: perturb's
// output (stage "perturb", still encrypted) and decrypt's (stage
// "decrypt", which adds the codebook).
type GammaDiagonal struct {
	Stage string // StagePerturb or StageDecrypt
	Sample
	// K = k_1·…·k_d, the size of the joint domain; 1 ≤ K ≤ 2^62.
	K uint64
	// Gamma is the γ > 1 of this (the last) perturbation, Epsilon its
	// privacy level, ε = ln((n + m(γ − 1))/n) (Theorem III.2).
	Gamma, Epsilon float64
	// Releases counts the γ-diagonal releases of the sample, ≥ 1.
	Releases int
	// GammaComposed Γ = γ_1·…·γ_r and EpsilonComposed
	// ε_r = ln((n + m(Γ − 1))/n) (pram.ComposedEpsilon), recorded when
	// Releases > 1; 0 otherwise.
	GammaComposed, EpsilonComposed float64
	// SampleReleases counts the releases of the sample that perturb's
	// release ledger knew of, this one included, when there were more
	// than one; 0 otherwise. EpsilonComposed then covers them all.
	SampleReleases int
}

// Encode stores the release's items (not the columns, pad kind or codebook,
// which ReadColumns/SetColumns and decrypt write).
func (g GammaDiagonal) Encode(meta table.Meta) {
	meta["stage"] = g.Stage
	meta["mechanism"] = MechanismGamma
	g.Sample.Encode(meta)
	meta.SetInt("K", int64(g.K))
	meta.SetFloat("gamma", g.Gamma)
	meta.SetFloat("epsilon", g.Epsilon)
	meta.SetInt("releases", int64(g.Releases))
	delete(meta, KeyGammaComposed)
	delete(meta, KeyEpsilonComposed)
	delete(meta, KeySampleReleases)
	if g.Releases > 1 {
		meta.SetFloat(KeyGammaComposed, g.GammaComposed)
	}
	if g.Releases > 1 || g.SampleReleases > 0 {
		meta.SetFloat(KeyEpsilonComposed, g.EpsilonComposed)
	}
	if g.SampleReleases > 0 {
		meta.SetInt(KeySampleReleases, int64(g.SampleReleases))
	}
}

// Decode reads a γ-diagonal release's items and checks them:
//
//   - stage "perturb" or "decrypt", mechanism "gamma-diagonal";
//   - 1 ≤ m ≤ n, a fingerprint, 1 ≤ K ≤ 2^62 and, when the "columns" item
//     lists the alphabets, K = k_1·…·k_d;
//   - γ finite > 1, and ε = ln((n + m(γ − 1))/n) (Theorem III.2);
//   - releases ≥ 1; after the first, Γ = gamma_composed finite > γ and
//     epsilon_composed = ε_r for Γ and r (pram.ComposedEpsilon).
func (g *GammaDiagonal) Decode(meta table.Meta, file string) error {
	f := newFields(meta, file, gammaFix)
	g.Stage = f.str("stage")
	if f.err == nil && g.Stage != StagePerturb && g.Stage != StageDecrypt {
		f.failf("stage", "metadata %q = %q is not a γ-diagonal release (want %q or %q)", "stage", g.Stage, StagePerturb, StageDecrypt)
	}
	if mech := f.str("mechanism"); f.err == nil && mech != MechanismGamma {
		f.failf("mechanism", "metadata %q = %q is not a γ-diagonal release (want %q)", "mechanism", mech, MechanismGamma)
	}
	g.Sample.decode(f)
	K := f.int("K")
	g.Gamma = f.float("gamma")
	g.Epsilon = f.float("epsilon")
	r := f.int("releases")
	if f.err != nil {
		return f.err
	}
	switch {
	case K < 1 || uint64(K) > pram.MaxJointSize:
		f.outOfRange("K", K, "a joint domain has 1 ≤ K ≤ 2^62 values")
	case !(g.Gamma > 1) || !finite(g.Gamma):
		f.outOfRange("gamma", g.Gamma, "γ-diagonal PRAM needs a finite γ > 1 (γ = 1 releases the rows unchanged)")
	case !(g.Epsilon > 0) || !finite(g.Epsilon):
		f.outOfRange("epsilon", g.Epsilon, "ε must be a finite number > 0")
	case r < 1 || r > maxInt32:
		f.outOfRange("releases", r, "a release counter is ≥ 1")
	}
	if f.err != nil {
		return f.err
	}
	g.K, g.Releases = uint64(K), int(r)
	g.checkColumns(f)
	n, m := int(g.N), int(g.M)
	eps, err := pram.EpsilonFromGamma(n, m, g.Gamma)
	if err != nil {
		f.failf("gamma", "%v", err)
		return f.err
	}
	if !agree(g.Epsilon, eps) {
		f.mismatch("epsilon", g.Epsilon, "γ = %v, n = %d, m = %d (ε = ln((n + m(γ−1))/n) = %v)", g.Gamma, n, m, eps)
	}
	g.GammaComposed, g.EpsilonComposed, g.SampleReleases = 0, 0, 0
	if f.has("sample_releases") {
		// perturb's ledger knew of releases of this sample made from other
		// copies of the files: ε_composed then covers them too and is
		// checked against what the file alone implies.
		return g.checkSampleReleases(f, n, m)
	}
	if g.Releases == 1 {
		// A single release records no composition; a stray item must
		// agree with γ and ε all the same.
		if f.has("gamma_composed") {
			if gc := f.float("gamma_composed"); f.err == nil && !agree(gc, g.Gamma) {
				f.mismatch("gamma_composed", gc, "γ = %v of the only release (releases = 1)", g.Gamma)
			}
		}
		if f.has("epsilon_composed") {
			if ec := f.float("epsilon_composed"); f.err == nil && !agree(ec, g.Epsilon) {
				f.mismatch("epsilon_composed", ec, "ε = %v of the only release (releases = 1)", g.Epsilon)
			}
		}
		return f.err
	}
	g.GammaComposed = f.float("gamma_composed")
	g.EpsilonComposed = f.float("epsilon_composed")
	if f.err != nil {
		return f.err
	}
	switch {
	case !finite(g.GammaComposed) || !(g.GammaComposed > g.Gamma):
		f.outOfRange("gamma_composed", g.GammaComposed, fmt.Sprintf("the product Γ of the γ of %d releases is finite and > the last γ = %v", g.Releases, g.Gamma))
	case !finite(g.EpsilonComposed):
		f.outOfRange("epsilon_composed", g.EpsilonComposed, "ε_r must be finite")
	}
	if f.err != nil {
		return f.err
	}
	// Γ^{1/r}, as perturb passes it (ComposedEpsilon takes one γ used r times).
	ec, err := pram.ComposedEpsilon(n, m, math.Exp(math.Log(g.GammaComposed)/float64(g.Releases)), g.Releases)
	if err != nil {
		f.failf("gamma_composed", "%v", err)
		return f.err
	}
	if !agree(g.EpsilonComposed, ec) {
		f.mismatch("epsilon_composed", g.EpsilonComposed, "Γ = %v, r = %d, n = %d, m = %d (ε_r = ln((n + m(Γ−1))/n) = %v)", g.GammaComposed, g.Releases, n, m, ec)
	}
	return f.err
}

// checkSampleReleases checks the items perturb writes when its release
// ledger counted earlier releases of the sample: sample_releases ≥ releases,
// and epsilon_composed at least the composition of this file's own chain
// (Γ over its releases; ε for a single perturbation), equal to it when the
// ledger knew of no other release.
func (g *GammaDiagonal) checkSampleReleases(f *fields, n, m int) error {
	sr := f.int("sample_releases")
	ec := f.float("epsilon_composed")
	gc := g.Gamma
	if g.Releases > 1 {
		gc = f.float("gamma_composed")
	}
	if f.err != nil {
		return f.err
	}
	switch {
	case sr < int64(g.Releases) || sr > maxInt32:
		f.outOfRange("sample_releases", sr, fmt.Sprintf("the releases of the sample are at least this file's releases = %d", g.Releases))
	case g.Releases > 1 && (!finite(gc) || !(gc > g.Gamma)):
		f.outOfRange("gamma_composed", gc, fmt.Sprintf("the product Γ of the γ of %d releases is finite and > the last γ = %v", g.Releases, g.Gamma))
	case !finite(ec) || !(ec > 0):
		f.outOfRange("epsilon_composed", ec, "ε_r must be a finite number > 0")
	}
	if f.err != nil {
		return f.err
	}
	chain, err := pram.ComposedEpsilon(n, m, math.Exp(math.Log(gc)/float64(g.Releases)), g.Releases)
	if err != nil {
		f.failf("gamma_composed", "%v", err)
		return f.err
	}
	if sr == int64(g.Releases) && !agree(ec, chain) {
		f.mismatch("epsilon_composed", ec, "Γ = %v, r = %d, n = %d, m = %d (ε_r = ln((n + m(Γ−1))/n) = %v)", gc, g.Releases, n, m, chain)
		return f.err
	}
	if ec < chain*(1-1e-9) {
		f.mismatch("epsilon_composed", ec, "Γ = %v over this file's %d release(s) of %d of the sample, n = %d, m = %d (ε_r ≥ ln((n + m(Γ−1))/n) = %v)", gc, g.Releases, sr, n, m, chain)
		return f.err
	}
	if g.Releases > 1 {
		g.GammaComposed = gc
	}
	g.EpsilonComposed = ec
	g.SampleReleases = int(sr)
	return nil
}

// checkColumns checks K = k_1·…·k_d when the "columns" item lists the
// alphabets (its full validation is the readers').
func (g *GammaDiagonal) checkColumns(f *fields) {
	if !f.has("columns") {
		return
	}
	var cols []Column
	f.json("columns", &cols)
	if f.err != nil || len(cols) == 0 {
		return
	}
	var prod uint64 = 1
	for _, c := range cols {
		hi, lo := bits.Mul64(prod, uint64(c.K))
		if hi != 0 || lo > pram.MaxJointSize {
			f.failf("columns", "the alphabets in metadata %q multiply to more than 2^62", "columns")
			return
		}
		prod = lo
	}
	if prod != g.K {
		f.failf("K", "metadata %q = %d does not match the product of the columns' alphabets k_1·…·k_d = %d", "K", g.K, prod)
	}
}

// CheckGammaDiagonal checks the γ-diagonal items that meta has, for readers
// that let flags supply missing ones (estimate's --gamma, -n, -m): each item
// present must parse and be in range, and each rule of Decode whose items
// are all present must hold. The stage, fingerprint and the K = Π k_j rule
// are left to the caller.
func CheckGammaDiagonal(meta table.Meta, file string) error {
	f := newFields(meta, file, gammaFix)
	if f.has("mechanism") {
		if mech := f.str("mechanism"); mech != MechanismGamma {
			f.failf("mechanism", "metadata %q = %q is not a γ-diagonal release (want %q)", "mechanism", mech, MechanismGamma)
		}
	}
	// Optional items: NaN or −1 when absent.
	num := func(key string) float64 {
		if !f.has(key) {
			return math.NaN()
		}
		return f.float(key)
	}
	count := func(key string) int64 {
		if !f.has(key) {
			return -1
		}
		return f.int(key)
	}
	n, m, K, r := count("n"), count("m"), count("K"), count("releases")
	gamma, eps := num("gamma"), num("epsilon")
	gc, ec := num("gamma_composed"), num("epsilon_composed")
	if f.err != nil {
		return f.err
	}
	has := f.has
	switch {
	case has("n") && n < 1:
		f.outOfRange("n", n, "a table has n ≥ 1 rows")
	case has("m") && m < 1:
		f.outOfRange("m", m, "a sample needs m ≥ 1")
	case has("n") && has("m") && m > n:
		f.outOfRange("m", m, fmt.Sprintf("a sample needs 1 ≤ m ≤ n = %d", n))
	case has("K") && (K < 1 || uint64(K) > pram.MaxJointSize):
		f.outOfRange("K", K, "a joint domain has 1 ≤ K ≤ 2^62 values")
	case has("gamma") && (!(gamma > 1) || !finite(gamma)):
		f.outOfRange("gamma", gamma, "γ-diagonal PRAM needs a finite γ > 1 (γ = 1 releases the rows unchanged)")
	case has("epsilon") && (!(eps > 0) || !finite(eps)):
		f.outOfRange("epsilon", eps, "ε must be a finite number > 0")
	case has("releases") && (r < 1 || r > maxInt32):
		f.outOfRange("releases", r, "a release counter is ≥ 1")
	case has("gamma_composed") && (!finite(gc) || !(gc > 1)):
		f.outOfRange("gamma_composed", gc, "the product Γ of the γ of the releases is finite and > 1")
	case has("epsilon_composed") && (!finite(ec) || !(ec > 0)):
		f.outOfRange("epsilon_composed", ec, "ε_r must be a finite number > 0")
	}
	if f.err != nil || !has("n") || !has("m") {
		return f.err
	}
	if has("gamma") && has("epsilon") {
		want, err := pram.EpsilonFromGamma(int(n), int(m), gamma)
		if err == nil && !agree(eps, want) {
			f.mismatch("epsilon", eps, "γ = %v, n = %d, m = %d (ε = ln((n + m(γ−1))/n) = %v)", gamma, n, m, want)
		}
	}
	// With sample_releases beyond this file's releases, perturb's ledger
	// counted other copies' releases too: ε_r is then only bounded below.
	sr := count("sample_releases")
	if has("releases") && r > 1 && has("gamma_composed") && has("epsilon_composed") {
		want, err := pram.ComposedEpsilon(int(n), int(m), math.Exp(math.Log(gc)/float64(r)), int(r))
		if err == nil && sr > r && ec < want*(1-1e-9) {
			f.mismatch("epsilon_composed", ec, "Γ = %v over this file's %d releases of %d of the sample, n = %d, m = %d (ε_r ≥ ln((n + m(Γ−1))/n) = %v)", gc, r, sr, n, m, want)
		} else if err == nil && sr <= r && !agree(ec, want) {
			f.mismatch("epsilon_composed", ec, "Γ = %v, r = %d, n = %d, m = %d (ε_r = ln((n + m(Γ−1))/n) = %v)", gc, r, n, m, want)
		}
	}
	return f.err
}
