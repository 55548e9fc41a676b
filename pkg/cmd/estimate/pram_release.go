package estimate

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/pram"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// pramRelease is what runPRAM knows about a decrypted gamma-diagonal release:
// its columns in joint order, their codebook, and the privacy parameters.
type pramRelease struct {
	name    string
	meta    table.Meta
	names   []string           // release columns, in the joint order of the domain
	cb      *codebook.Codebook // its columns in that order: label(j, x) is Columns[j].Label(x)
	dom     pram.Domain        // G = Z_{k_1} × … × Z_{k_d}
	fileCol []int              // fileCol[j]: position of column j in the file

	// gammaLast is the γ of the (last) perturbation, from the metadata or
	// --gamma; gamma is the γ of all perturbations combined, the one the
	// estimators undo (equal unless the sample was re-perturbed).
	gammaLast, gamma float64
	releases         int
	gammaProduct     float64 // Γ = Π γ_i over the releases

	n, m        int64 // full-table rows and released rows, for ε
	epsilon     float64
	epsComposed float64 // when releases > 1 or sampleReleases > 1
	// sampleReleases counts all releases of the sample that perturb knew
	// of (its ledger included), when more than releases.
	sampleReleases int
	// codebookItem is the SHA-256 of the metadata's codebook text
	// (release.CodebookDigest; "" if it has none), which meta then drops unless a
	// count table will carry it (--tabulate): a codebook of 1M labels is
	// 10 MB of JSON besides its parsed labels (issue 11: peak RSS ≤ 100
	// MB whatever the cardinality), and parts of the release only need to
	// show the same text (partItem).
	codebookItem string
}

// partItem is the metadata item key as parts of one release must share
// it: the codebook by its sum (its text may be gone, see codebookSum),
// any other item as it is.
func (rel *pramRelease) partItem(key string) (string, bool) {
	if key == release.KeyCodebook {
		return rel.codebookItem, rel.codebookItem != ""
	}
	v, ok := rel.meta[key]
	return v, ok
}

// label is the codebook label of value x of column j. The codebook's own
// (no []string per column: 16 MB at 1M labels).
func (rel *pramRelease) label(j int, x uint32) string { return rel.cb.Columns[j].Label(int(x)) }

// labelOf is column j's labels by code, false past the last: the
// codebook's own (table.Coder.InOrder).
func (rel *pramRelease) labelOf(j int) func(x uint32) (string, bool) {
	c := &rel.cb.Columns[j]
	return func(x uint32) (string, bool) {
		if uint64(x) >= uint64(c.K()) {
			return "", false
		}
		return c.Label(int(x)), true
	}
}

// pramWarnf prints a warning on stderr.
func (o *Options) pramWarnf(format string, args ...any) {
	o.Streams.Warnf("estimate", format, args...)
}

// openPRAMRelease reads and checks the metadata of a decrypted release: its
// stage, columns, codebook and K, and γ with its history.
func (o *Options) openPRAMRelease(in table.Reader) (*pramRelease, error) {
	name, meta := in.Name(), in.Meta()
	switch stage := meta[release.KeyStage]; stage {
	case "decrypt", "":
	case "perturb":
		return nil, fmt.Errorf("%s is still encrypted (stage perturb): decrypt it first, e.g. decrypt --key alice.key --key bob.key %s | estimate", name, name)
	default:
		return nil, fmt.Errorf("%s is not a decrypted release (stage %s): estimate reads the output of decrypt", name, stage)
	}
	// γ, ε, n, m and the release counter, as far as the metadata has them
	// (flags may supply the rest): in range and consistent, so that an
	// edited γ is refused rather than estimated with and reported as
	// another ε. --gamma, -n and -m override values of a consistent file.
	if err := release.CheckGammaDiagonal(meta, name); err != nil {
		return nil, err
	}
	rel := &pramRelease{name: name, meta: meta}

	// Columns: the metadata's joint order, else the file's.
	var cols []release.Column
	if _, ok := meta[release.KeyColumns]; ok {
		if err := meta.JSON(release.KeyColumns, "", &cols); err != nil {
			return nil, fmt.Errorf("%s: %v; the release was damaged: decrypt it again", name, err)
		}
		if len(cols) == 0 {
			return nil, fmt.Errorf("%s: the metadata lists no columns; the release was damaged: decrypt it again", name)
		}
	} else {
		for _, f := range in.Schema().Fields() {
			if f.Name == release.CountColumn && release.IsCountTable(meta) {
				continue // a count table's counts, not a released column
			}
			cols = append(cols, release.Column{Name: f.Name})
		}
	}
	schema := in.Schema()
	for _, c := range cols {
		rel.names = append(rel.names, c.Name)
		idx := schema.FieldIndices(c.Name)
		if len(idx) == 0 {
			return nil, fmt.Errorf("%s: the metadata lists column %q but the file has no such column (it has %s); the release was edited: decrypt it again", name, c.Name, strings.Join(pramFieldNames(in), ", "))
		}
		rel.fileCol = append(rel.fileCol, idx[0])
	}

	// Codebook: --codebook overrides the metadata's.
	var cb *codebook.Codebook
	var err error
	item, metaCB := meta[release.KeyCodebook]
	if metaCB {
		rel.codebookItem = release.CodebookDigest(item)
		if !o.Tabulate && o.Codebook == "" {
			// Parsed, the text is needed neither to compare parts (the
			// digest is) nor for a count table's metadata: taken out of
			// the reader's Meta, its only holder, it is freed before the
			// label tables are built (codebook.Parse; 45 MB at 4M labels).
			delete(meta, release.KeyCodebook)
		}
	}
	switch {
	case o.Codebook != "":
		if cb, err = codebook.Load(o.Codebook); err != nil {
			return nil, err
		}
	case metaCB:
		text := item
		item = "" // (not live while the text is parsed)
		if cb, err = codebook.ParseString(text); err != nil {
			return nil, fmt.Errorf("%s: the codebook in the metadata is not valid (%v); decrypt the release again, or pass --codebook FILE", name, err)
		}
	default:
		return nil, fmt.Errorf("%s: no %q in the metadata: pass --codebook FILE, the codebook the curators encrypted with", name, "codebook")
	}
	if rel.cb, err = cb.Select(rel.names); err != nil {
		return nil, fmt.Errorf("%s: the codebook does not cover the release (%v): pass the --codebook the release was made with", name, err)
	}
	ks := make([]uint32, len(cols))
	for j, c := range rel.cb.Columns {
		ks[j] = uint32(c.K())
		if cols[j].K != 0 && cols[j].K != ks[j] {
			return nil, fmt.Errorf("%s: column %q has k = %d values in the release but %d in the codebook: K does not match the codebook; pass the --codebook the release was made with", name, c.Name(), cols[j].K, ks[j])
		}
		if h := cols[j].CodebookHash; h != "" {
			one, _ := rel.cb.Select([]string{c.Name()})
			if one.Hash() != h {
				return nil, fmt.Errorf("%s: the codebook of column %q differs from the one the release was encrypted with (hash mismatch): pass the --codebook the curators used", name, c.Name())
			}
		}
	}
	if o.Codebook != "" && metaCB {
		// Warn only when the override changes something.
		if mc, err := codebook.ParseString(item); err != nil {
			o.pramWarnf("--codebook %s replaces the unreadable codebook in %s's metadata", o.Codebook, name)
		} else if sel, err := mc.Select(rel.names); err != nil || sel.Hash() != rel.cb.Hash() {
			o.pramWarnf("--codebook %s overrides the codebook in %s's metadata", o.Codebook, name)
		}
	}
	if rel.dom, err = pram.NewDomain(ks); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if s, ok := meta[release.KeyJointSize]; ok && s != fmt.Sprint(rel.dom.Size()) {
		return nil, fmt.Errorf("%s: the metadata says K = %s joint values but the codebook gives %s = %d: K does not match the codebooks; pass the --codebook the release was made with", name, s, pramDomainText(rel), rel.dom.Size())
	}
	if err := o.pramReleaseGamma(rel, meta); err != nil {
		return nil, err
	}
	if metaCB && !o.Tabulate {
		delete(meta, release.KeyCodebook) // (the reader's Meta is its only holder)
	}
	return rel, nil
}

// pramReleaseGamma reads γ (or --gamma) and the release history, and derives
// the combined γ of a re-perturbed sample.
func (o *Options) pramReleaseGamma(rel *pramRelease, meta table.Meta) error {
	name := rel.name
	g, err := meta.Float(release.KeyGamma, "--gamma G")
	var me *table.MissingError
	switch {
	case o.cmd.Flags().Changed("gamma"):
		if err == nil && g != o.pramOpts().Gamma {
			o.pramWarnf("--gamma %v overrides γ = %v in %s's metadata", o.pramOpts().Gamma, g, name)
		}
		g = o.pramOpts().Gamma
	case errors.As(err, &me):
		return fmt.Errorf("%s: %v (the γ the server perturbed with)", name, err)
	case err != nil:
		return fmt.Errorf("%s: %v; the release was damaged: decrypt it again, or pass --gamma G", name, err)
	case !(g > 1) || math.IsInf(g, 0):
		return fmt.Errorf("%s: the metadata says γ = %v, but γ-diagonal PRAM needs a finite γ > 1; the release was damaged: pass --gamma G", name, g)
	}
	rel.gammaLast, rel.gamma, rel.releases, rel.gammaProduct = g, g, 1, g
	if _, ok := meta[release.KeyReleases]; !ok {
		return nil
	}
	r, err := meta.Int(release.KeyReleases, "")
	if err != nil || r < 1 || r > math.MaxInt32 {
		return fmt.Errorf("%s: the release counter in the metadata is not valid; the release was damaged: decrypt it again", name)
	}
	rel.releases = int(r)
	if r == 1 {
		return nil
	}
	prod, err := meta.Float(release.KeyGammaComposed, "")
	if err != nil || !(prod >= g) || math.IsInf(prod, 0) {
		return fmt.Errorf("%s: release %d of its sample has no valid %q in the metadata; the release was damaged: decrypt it again", name, r, "gamma_composed")
	}
	rel.gammaProduct = prod
	// The file went through r perturbations; the estimators undo their
	// product, which is γ-diagonal (pram.CombineGammas). That needs every
	// γ_i: the "gammas" list, or for r = 2 Γ and the last γ.
	var gammas []float64
	if _, ok := meta[release.KeyGammas]; ok {
		hist, err := release.ReadHistory(meta, name)
		if err != nil {
			return err
		}
		gammas = hist.Gammas
		if last := gammas[len(gammas)-1]; !o.cmd.Flags().Changed("gamma") && last != g {
			return fmt.Errorf("%s: the metadata's γ = %v is not the last of its %q %v; the release was damaged: decrypt it again", name, g, release.KeyGammas, gammas)
		}
		gammas[len(gammas)-1] = g // --gamma overrides the last perturbation's γ
	} else {
		if r > 2 {
			return fmt.Errorf("%s was perturbed %d times (release %d of the same sample), and its metadata keeps only the product of the γ's (it was made before perturb recorded the list %q), which does not determine the combined perturbation: estimate from the first or second release", name, r, r, release.KeyGammas)
		}
		// Two perturbations: γ₁ = Γ/γ₂, then γ₂.
		if gammas, err = pram.TwoGammas(prod, g); err != nil {
			return fmt.Errorf("%s: the metadata's γ = %v and gamma_composed = %v imply a first γ ≤ 1; the release was damaged: decrypt it again", name, g, prod)
		}
	}
	if rel.gamma, err = pram.CombineGammas(rel.dom.Size(), gammas); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// pramDomainText is "education (16) × income (2)".
func pramDomainText(rel *pramRelease) string {
	parts := make([]string, len(rel.names))
	for j, n := range rel.names {
		parts[j] = fmt.Sprintf("%s (%d)", n, rel.cb.Columns[j].K())
	}
	return strings.Join(parts, " × ")
}

// pramFieldNames lists the file's column names, for messages.
func pramFieldNames(in table.Reader) []string {
	var out []string
	for _, f := range in.Schema().Fields() {
		out = append(out, f.Name)
	}
	return out
}

// pramDenseCounts is the largest K counted in a plain array (512 KiB) rather
// than a hash map.
const pramDenseCounts = 1 << 16

// pramStrides returns the mixed-radix weights w_j = k_{j+1}·…·k_d, so that
// g(x) = Σ_j x_j·w_j (pram.Domain's numbering).
func pramStrides(d pram.Domain) []uint64 {
	ks := d.Alphabets()
	w := make([]uint64, len(ks))
	s := uint64(1)
	for j := len(ks) - 1; j >= 0; j-- {
		w[j] = s
		s *= uint64(ks[j])
	}
	return w
}

// account settles n and m (metadata or flags) and computes ε.
func (rel *pramRelease) account(o *Options, rows int64) error {
	f := o.cmd.Flags()
	meta := func(key, flag string, override int64, changed bool) (int64, bool, error) {
		v, err := rel.metaInt(key, flag)
		var me *table.MissingError
		switch {
		case changed:
			if err == nil && v != override {
				o.pramWarnf("%s %d overrides %s = %d in %s's metadata", flag[:2], override, key, v, rel.name)
			}
			return override, true, nil
		case errors.As(err, &me):
			return 0, false, nil
		case err != nil:
			return 0, false, err
		}
		return v, true, nil
	}
	n, ok, err := meta("n", "-n N", o.pramOpts().N, f.Changed("rows"))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: no %q in the metadata: pass -n N, the number of rows of the full table the sample was drawn from", rel.name, "n")
	}
	m, ok, err := meta("m", "-m M", o.pramOpts().M, f.Changed("sample-size"))
	if err != nil {
		return err
	}
	if !ok {
		o.pramWarnf("%s: no %q in the metadata: taking m = %d, the rows in the file (pass -m M if the release had more)", rel.name, "m", rows)
		m = rows
	}
	if rows != m {
		return fmt.Errorf("%s has %d rows but m = %d rows were released: the release is truncated or was edited; decrypt it again (or pass -m %d if the metadata is wrong)", rel.name, rows, m, rows)
	}
	if m > n {
		return fmt.Errorf("%s: m = %d released rows but n = %d rows in the full table: a sample needs n ≥ m; pass the right -n N", rel.name, m, n)
	}
	rel.n, rel.m = n, m
	if rel.epsilon, err = pram.EpsilonFromGamma(int(n), int(m), rel.gammaLast); err != nil {
		return fmt.Errorf("%s: %w", rel.name, err)
	}
	if rel.releases > 1 {
		if rel.epsComposed, err = pram.ComposedEpsilonProduct(int(n), int(m), rel.gammaProduct); err != nil {
			return fmt.Errorf("%s: %w", rel.name, err)
		}
	}
	// Other releases of the sample, made from other copies of its
	// encrypted files, are not in this file's history; perturb found them
	// in its release ledger and recorded their count and composed ε (for
	// the metadata's n and m).
	if _, ok := rel.meta[release.KeySampleReleases]; ok {
		sr, err1 := rel.meta.Int(release.KeySampleReleases, "")
		ec, err2 := rel.meta.Float(release.KeyEpsilonComposed, "")
		if err1 != nil || err2 != nil || sr < 2 || !(ec > 0) || math.IsInf(ec, 0) {
			return fmt.Errorf("%s: the metadata's sample_releases and epsilon_composed are not valid; the release was damaged: decrypt it again", rel.name)
		}
		if int(sr) > rel.releases {
			rel.sampleReleases = int(sr)
			rel.epsComposed = max(rel.epsComposed, ec)
		}
	}
	return nil
}

// metaInt reads an integer metadata item of the release.
func (rel *pramRelease) metaInt(key, flag string) (int64, error) {
	v, err := rel.meta.Int(key, flag)
	var me *table.MissingError
	if err != nil && !errors.As(err, &me) {
		return 0, fmt.Errorf("%s: %v; the release was damaged: decrypt it again, or pass %s", rel.name, err, flag)
	}
	return v, err
}
