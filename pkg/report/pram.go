package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/estimate"
	"github.com/pramkit/pramkit/pkg/pram"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/report/chart"
	"github.com/pramkit/pramkit/pkg/table"
)

// maxBars is how many cells a distribution chart shows: the largest
// estimates when the domain has more.
const maxBars = 40

// maxRows is how many cells a distribution table lists.
const maxRows = 500

func (o *Options) sample(s *Section, in table.Reader) error {
	var sm release.Sample
	if err := sm.Decode(in.Meta(), in.Name()); err != nil {
		return err
	}
	s.Kind = "Sample (pramkit sample)"
	s.What = fmt.Sprintf("A coordinated random sample: m = %d of the table's n = %d rows (%.2f %%), chosen by a shared secret so that curators holding other columns of the same people sample the same rows.", sm.M, sm.N, 100*float64(sm.M)/float64(sm.N))
	s.Privacy = "None by itself: the rows are the people's true values. Keep this file with its curator; only a perturbed release of it (encrypt, then perturb) may leave."
	var names []string
	for _, f := range in.Schema().Fields() {
		names = append(names, f.Name)
	}
	s.Facts = append(s.Facts, Fact{"table rows n", itoa(sm.N)}, Fact{"sampled rows m", itoa(sm.M)},
		Fact{"rows identified by", in.Meta()[release.KeySampleID]}, Fact{"columns", strings.Join(names, ", ")})
	return nil
}

func (o *Options) encrypted(s *Section, in table.Reader) error {
	var e release.Encrypted
	if err := e.Decode(in.Meta(), in.Name()); err != nil {
		return err
	}
	s.Kind = "Encrypted sample (pramkit encrypt)"
	s.What = fmt.Sprintf("A curator's sample of m = %d of n = %d rows, each cell replaced by its codebook index plus a pad modulo the column's size k, ready for the server that perturbs it.", e.M, e.N)
	if e.Pad == "prf" {
		s.Privacy = "The cells reveal nothing practical without the curator's key: the pads come from a keyed pseudo-random function (computational secrecy). Its release after perturb carries the privacy guarantee."
	} else {
		s.Privacy = "The cells reveal nothing without the curator's key: each pad is a uniform one-time pad, so every cell is uniform whatever the value. Its release after perturb carries the privacy guarantee."
	}
	s.Facts = append(s.Facts, Fact{"table rows n", itoa(e.N)}, Fact{"sampled rows m", itoa(e.M)}, Fact{"pads", e.Pad})
	s.Blocks = append(s.Blocks, columnsBlock(e.Columns))
	return nil
}

func columnsBlock(cols []release.Column) Block {
	t := &Table{Caption: "Columns", Head: []string{"column", "values k", "codebook hash (SHA-256)", "key id", "pads"}, Numeric: []bool{false, true}}
	for _, c := range cols {
		t.Rows = append(t.Rows, []string{c.Name, strconv.FormatUint(uint64(c.K), 10), c.CodebookHash, c.KeyID, c.Pad})
	}
	return Block{Table: t}
}

// gammaFacts describe a γ-diagonal release and return the privacy
// sentence.
func gammaFacts(s *Section, g *release.GammaDiagonal, d pram.Domain) error {
	mech, err := pram.NewMechanism(g.Gamma, d)
	if err != nil {
		return fmt.Errorf("%s: %v", s.File, err)
	}
	keep := mech.KeepProbability()
	s.Privacy = fmt.Sprintf("Each released row equals the person's true value with probability %.3f, and is otherwise one of the other %d values at random; with the rows a secret sample of m = %d of n = %d people, ε = %s (Lin–Wang–Rane Theorem III.2: whatever one person's row, the chance of any release changes by at most a factor e^ε = %s).",
		keep, g.K-1, g.M, g.N, num(g.Epsilon), num(math.Exp(g.Epsilon)))
	if g.Releases > 1 || g.SampleReleases > 1 {
		s.Privacy += fmt.Sprintf(" This sample was released %d times: together they give ε = %s.", max(g.Releases, g.SampleReleases), num(g.EpsilonComposed))
	}
	s.Facts = append(s.Facts,
		Fact{"mechanism", "γ-diagonal PRAM (Lin–Wang–Rane): keep the true joint value with probability γ/(γ + K − 1), else any other value with 1/(γ + K − 1)"},
		Fact{"γ", num(g.Gamma)}, Fact{"ε of this release", num(g.Epsilon)},
		Fact{"probability a row is kept", share(keep)},
		Fact{"joint values K", strconv.FormatUint(g.K, 10)},
		Fact{"table rows n", itoa(g.N)}, Fact{"released rows m", itoa(g.M)},
		Fact{"releases of this sample", strconv.Itoa(max(g.Releases, g.SampleReleases, 1))})
	if g.EpsilonComposed > 0 {
		s.Facts = append(s.Facts, Fact{"composed ε (all releases)", num(g.EpsilonComposed)}, Fact{"composed γ", num(g.GammaComposed)})
	}
	return nil
}

// boundBlocks state the Theorem III.4 bound of this release and draw the
// bound against m for its n, K and ε, with this release's m and the
// optimum m* of estimate.NewPlan.
//
// gamma is the γ the estimators undo (estimationGamma): the bound is the
// combined perturbation's, the curve that of one release at this ε.
func boundBlocks(g *release.GammaDiagonal, gamma float64) ([]Block, error) {
	n, m := int(g.N), int(g.M)
	b, err := estimate.Bound(g.K, gamma, m)
	if err != nil {
		return nil, err
	}
	plan, err := estimate.NewPlan(n, g.K, g.Epsilon)
	if err != nil {
		return nil, err
	}
	text := fmt.Sprintf("Theorem III.4 (Lin–Wang–Rane) bounds the expected ℓ2 error of the inverse estimate of the table's distribution: E‖T̂ − t‖₂ ≤ (c√K + 1)/√m with c = 1 + K/(γ − 1); here %s. At ε = %s a larger m needs a smaller γ, so the bound is smallest at m* = %s (bound %s); this release has m = %d.",
		num(b), num(g.Epsilon), num(math.Round(plan.MStar)), num(plan.Bound), m)
	var xs, ys []float64
	const steps = 120
	for i := range steps + 1 {
		mm := math.Round(math.Exp(math.Log(float64(n)) * float64(i) / steps))
		if mm < 1 || (len(xs) > 0 && mm == xs[len(xs)-1]) {
			continue
		}
		gm, err := pram.GammaFromEpsilon(n, int(mm), g.Epsilon)
		if err != nil {
			return nil, err
		}
		bm, err := estimate.Bound(g.K, gm, int(mm))
		if err != nil {
			continue // γ rounds to 1 at this m: no bound
		}
		xs, ys = append(xs, mm), append(ys, bm)
	}
	blocks := []Block{{Heading: "Accuracy: the Theorem III.4 bound", Text: text}}
	if len(xs) >= 2 {
		bl, err := linesBlock(chart.Lines{
			Title:  fmt.Sprintf("Error bound against m (n = %d, K = %d, ε = %s)", n, g.K, num(g.Epsilon)),
			XLabel: "released rows m", YLabel: "bound on E‖T̂ − t‖₂", LogX: true, LogY: true,
			Lines:  []chart.Line{{Name: "Theorem III.4 bound", X: xs, Y: ys}},
			Points: []chart.Point{{Name: fmt.Sprintf("this release, m = %d", m), X: float64(m), Y: b}, {Name: fmt.Sprintf("m* = %d", plan.M), X: float64(plan.M), Y: plan.Bound}},
		}, "The bound on the expected error at every m for this release's ε; the markers show this release and the optimum m*.")
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, bl)
	}
	return blocks, nil
}

func (o *Options) perturbed(s *Section, in table.Reader) error {
	meta := in.Meta()
	if meta[release.KeyMechanism] != release.MechanismGamma {
		return fmt.Errorf("%s: mechanism %q is not one a report knows (gamma-diagonal, bitflip, ddps); write it with this pramkit", in.Name(), meta[release.KeyMechanism])
	}
	var g release.GammaDiagonal
	if err := g.Decode(meta, in.Name()); err != nil {
		return err
	}
	cols, err := release.ReadColumns(meta, in.Name(), "perturb")
	if err != nil {
		return err
	}
	d, err := domainOf(cols)
	if err != nil {
		return fmt.Errorf("%s: %v", in.Name(), err)
	}
	s.Kind = "γ-diagonal release, still encrypted (pramkit perturb)"
	s.What = fmt.Sprintf("The server's release: the curators' encrypted samples joined row by row and perturbed by γ-diagonal PRAM on the %d columns jointly. The cells are still padded: decrypt with the curators' keys turns them into labels, and estimate (or this report, on decrypt's output) recovers the distributions.", len(cols))
	if err := gammaFacts(s, &g, d); err != nil {
		return err
	}
	s.Blocks = append(s.Blocks, columnsBlock(cols))
	gamma, err := estimationGamma(meta, in.Name(), &g, d.Size())
	if err != nil {
		return err
	}
	if gamma != g.Gamma {
		s.Facts = append(s.Facts, Fact{"combined γ of the perturbations", num(gamma)})
	}
	if lb, err := o.ledgerBlock(g.Fingerprint); err != nil {
		return err
	} else if lb != nil {
		s.Blocks = append(s.Blocks, *lb)
	}
	bb, err := boundBlocks(&g, gamma)
	if err != nil {
		return err
	}
	s.Blocks = append(s.Blocks, bb...)
	return nil
}

func domainOf(cols []release.Column) (pram.Domain, error) {
	ks := make([]uint32, len(cols))
	for j, c := range cols {
		ks[j] = c.K
	}
	return pram.NewDomain(ks)
}

func (o *Options) decrypted(s *Section, in table.Reader) error {
	meta := in.Meta()
	var d release.Decrypted
	if err := d.Decode(meta, in.Name()); err != nil {
		return err
	}
	cols, err := release.ReadColumns(meta, in.Name(), "decrypt")
	if err != nil {
		return err
	}
	names := make([]string, len(cols))
	for j, c := range cols {
		names[j] = c.Name
	}
	cb, err := d.Codebook.Select(names)
	if err != nil {
		return fmt.Errorf("%s: %v; decrypt the release again", in.Name(), err)
	}
	s.Facts = append(s.Facts, codebookFacts(cb)...)
	if d.Release == nil {
		s.Kind = "Decrypted sample, never perturbed (decrypt --unperturbed)"
		s.What = fmt.Sprintf("A curator's check of its key: the encrypted sample of m = %d rows decrypted without perturbation.", d.M)
		s.Privacy = "NONE: these are the people's true values. Do not publish this file."
		return nil
	}
	g := d.Release
	s.Kind = "γ-diagonal release, decrypted (pramkit decrypt)"
	if release.IsCountTable(meta) {
		s.Kind = "γ-diagonal release, as a count table (estimate --tabulate)"
	}
	s.What = fmt.Sprintf("The published sanitized sample: m = %d rows of the %d columns %s, perturbed jointly by γ-diagonal PRAM and decrypted to labels. It estimates the distribution of the whole table (n = %d rows).", g.M, len(cols), strings.Join(names, ", "), g.N)
	dom, err := domainOf(cols)
	if err != nil {
		return fmt.Errorf("%s: %v", in.Name(), err)
	}
	if err := gammaFacts(s, g, dom); err != nil {
		return err
	}
	if lb, err := o.ledgerBlock(g.Fingerprint); err != nil {
		return err
	} else if lb != nil {
		s.Blocks = append(s.Blocks, *lb)
	}
	gamma, err := estimationGamma(meta, in.Name(), g, dom.Size())
	if err != nil {
		return err
	}
	if gamma != g.Gamma {
		s.Facts = append(s.Facts, Fact{"combined γ of the perturbations", num(gamma)})
	}
	if dom.Size() > MaxCells {
		s.Blocks = append(s.Blocks, Block{Heading: "Estimated distribution", Text: fmt.Sprintf("The joint domain has K = %d values, more than a report draws (%d); estimate the distribution with estimate --columns or --marginal.", dom.Size(), MaxCells)})
	} else if err := o.pramEstimates(s, in, g, gamma, cb, names, dom); err != nil {
		return err
	}
	bb, err := boundBlocks(g, gamma)
	if err != nil {
		return err
	}
	s.Blocks = append(s.Blocks, bb...)
	return nil
}

// view is one distribution shown: the joint or a marginal.
type view struct {
	labels      []string
	est, lo, hi []float64
	obs, truth  []float64 // truth nil without --truth
	l2          float64   // ‖est − truth‖₂, NaN without --truth
}

// pramEstimates counts the release, runs the default estimator (the exact
// maximum-likelihood estimate, estimate.MLE) with the Wilson intervals of
// estimate.InverseInterval, as estimate does, and shows the joint and each
// column's marginal.
func (o *Options) pramEstimates(s *Section, in table.Reader, g *release.GammaDiagonal, gamma float64, cb *codebook.Codebook, names []string, dom pram.Domain) error {
	ccols := make([]*codebook.Column, len(names))
	encs := make([]*codebook.Encoder, len(names))
	for j, n := range names {
		c, _ := cb.Column(n)
		ccols[j] = c
		var err error
		if encs[j], err = c.Encoder(codebook.Policy{}); err != nil {
			return err
		}
	}
	K := int(dom.Size())
	dense := make([]int64, K)
	x := make([]uint32, len(names))
	err := scanRows(in, names, func(vals []table.Values, i int, w int64, row int64) error {
		for j, e := range encs {
			v, err := e.Index(vals[j].String(i))
			if err != nil {
				return &table.DataError{File: in.Name(), Row: row, Column: names[j], Err: fmt.Errorf("%v; the release was edited: decrypt it again", err)}
			}
			x[j] = v
		}
		gi, err := dom.Encode(x)
		if err != nil {
			return err
		}
		dense[gi] += w
		return nil
	})
	if err != nil {
		return err
	}
	var m int64
	for _, c := range dense {
		m += c
	}
	if m != g.M {
		return fmt.Errorf("%s: %d rows, but its metadata says m = %d; the release was cut or edited (a part of a release? estimate merges parts): decrypt it again", in.Name(), m, g.M)
	}
	truthDense, truthN, err := o.truthCounts(names, ccols)
	if err != nil {
		return err
	}
	joint, err := o.pramView(dense, gamma, uint64(K), joint(ccols), truthDense, truthN)
	if err != nil {
		return fmt.Errorf("%s: %v", in.Name(), err)
	}
	title := "Joint distribution of " + strings.Join(names, " × ")
	if err := s.addView(title, strings.Join(names, ", "), joint, o.Level); err != nil {
		return err
	}
	if len(names) > 1 {
		for j, n := range names {
			md, mt := marginalCounts(dense, dom, j), []int64(nil)
			if truthDense != nil {
				mt = marginalCounts(truthDense, dom, j)
			}
			kp := uint64(ccols[j].K())
			v, err := o.pramView(md, pram.RestrictGamma(gamma, uint64(K), kp), kp, ccols[j].Labels(), mt, truthN)
			if err != nil {
				return fmt.Errorf("%s: column %s: %v", in.Name(), n, err)
			}
			if err := s.addView("Marginal distribution of "+n, n, v, o.Level); err != nil {
				return err
			}
		}
	}
	return nil
}

// joint lists the labels of every joint value, first column most
// significant (pram.Domain's order), joined by ", ".
func joint(cols []*codebook.Column) []string {
	labels := []string{""}
	for j, c := range cols {
		var next []string
		for _, l := range labels {
			for _, v := range c.Labels() {
				if j == 0 {
					next = append(next, v)
				} else {
					next = append(next, l+", "+v)
				}
			}
		}
		labels = next
	}
	return labels
}

// marginalCounts sums dense joint counts onto column j.
func marginalCounts(dense []int64, dom pram.Domain, j int) []int64 {
	ks := dom.Alphabets()
	inner := 1
	for _, k := range ks[j+1:] {
		inner *= int(k)
	}
	out := make([]int64, ks[j])
	for g, c := range dense {
		out[(g/inner)%int(ks[j])] += c
	}
	return out
}

// pramView estimates one distribution from its release counts: the exact
// MLE (estimate.MLE), Wilson intervals (estimate.InverseInterval), the
// observed frequencies, and the truth when given.
func (o *Options) pramView(dense []int64, gamma float64, K uint64, labels []string, truth []int64, truthN int64) (*view, error) {
	c, err := estimate.CountsFromDense(dense)
	if err != nil {
		return nil, err
	}
	v := &view{labels: labels, obs: make([]float64, K), l2: math.NaN()}
	m := float64(c.M())
	for g, n := range dense {
		v.obs[g] = float64(n) / m
	}
	if !(gamma > 1) {
		return nil, fmt.Errorf("γ′ = %v: the release says nothing about these columns alone", gamma)
	}
	em, err := estimate.MLE(c, gamma, estimate.EMOptions{})
	if err != nil {
		return nil, err
	}
	if v.est, err = em.Estimate.Dense(); err != nil {
		return nil, err
	}
	iv, err := estimate.InverseInterval(c, gamma, o.Level)
	if err != nil {
		return nil, err
	}
	v.lo, v.hi = make([]float64, K), make([]float64, K)
	for g := range v.lo {
		v.lo[g], v.hi[g] = iv.RestLo, iv.RestHi
	}
	for i, g := range iv.Index {
		v.lo[g], v.hi[g] = iv.Lo[i], iv.Hi[i]
	}
	if truth != nil {
		v.truth = make([]float64, K)
		for g, n := range truth {
			v.truth[g] = float64(n) / float64(truthN)
		}
		if v.l2, err = estimate.L2Slice(v.est, v.truth); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// addView adds a distribution's chart (the maxBars largest estimates
// when there are more) and table (the maxRows largest).
func (s *Section) addView(title, labelHead string, v *view, level float64) error {
	K := len(v.est)
	show := sortedTop(v.est, maxBars)
	if K <= maxBars {
		show = show[:0]
		for g := range K {
			show = append(show, g)
		}
	}
	cats := make([]string, len(show))
	pick := func(x []float64) []float64 {
		out := make([]float64, len(show))
		for i, g := range show {
			out[i] = x[g]
		}
		return out
	}
	for i, g := range show {
		cats[i] = v.labels[g]
	}
	series := []chart.Series{
		{Name: fmt.Sprintf("estimate (MLE) with %g %% interval", 100*level), Values: pick(v.est), Lo: pick(v.lo), Hi: pick(v.hi)},
		{Name: "observed in the release", Values: pick(v.obs)},
	}
	if v.truth != nil {
		series = append(series, chart.Series{Name: "truth (--truth)", Values: pick(v.truth)})
	}
	caption := "Estimated shares of the whole table next to the shares observed in the released rows (perturbed, so flattened towards uniform)."
	if K > maxBars {
		caption = fmt.Sprintf("The %d largest of %d estimated shares. ", maxBars, K) + caption
	}
	if v.truth != nil {
		caption += fmt.Sprintf(" ℓ2 error of the estimate against the truth: %s.", num(v.l2))
	}
	b, err := barsBlock(chart.Bars{Title: title, ValueLabel: "share of rows", Categories: cats, Series: series}, caption)
	if err != nil {
		return err
	}
	b.Heading = title
	s.Blocks = append(s.Blocks, b)
	t := &Table{Caption: title, Head: []string{labelHead, "estimate", "interval low", "interval high", "observed"}, Numeric: []bool{false, true, true, true, true, true}}
	if v.truth != nil {
		t.Head = append(t.Head, "truth")
	}
	rows := make([]int, 0, min(K, maxRows))
	if K <= maxRows {
		for g := range K {
			rows = append(rows, g)
		}
	} else {
		rows = sortedTop(v.est, maxRows)
		t.Note = fmt.Sprintf("The %d largest of %d estimates; estimate lists them all.", maxRows, K)
	}
	for _, g := range rows {
		r := []string{v.labels[g], share(v.est[g]), share(v.lo[g]), share(v.hi[g]), share(v.obs[g])}
		if v.truth != nil {
			r = append(r, share(v.truth[g]))
		}
		t.Rows = append(t.Rows, r)
	}
	s.Blocks = append(s.Blocks, Block{Table: t})
	return nil
}

// estimationGamma is the γ the estimators undo: a file perturbed r ≥ 2
// times (releases = r) went through the product of r γ-diagonal
// perturbations, itself γ-diagonal with pram.CombineGammas of every γ_i
// (the "gammas" list, or for r = 2 the product and the last γ), as
// estimate does.
func estimationGamma(meta table.Meta, name string, g *release.GammaDiagonal, K uint64) (float64, error) {
	if g.Releases <= 1 {
		return g.Gamma, nil
	}
	h, err := release.ReadHistory(meta, name)
	if err != nil {
		return 0, err
	}
	gammas := h.Gammas
	if len(gammas) != g.Releases {
		if g.Releases > 2 {
			return 0, fmt.Errorf("%s was perturbed %d times and its metadata keeps only the product of the γ's, which does not determine the combined perturbation: report on the first or second release", name, g.Releases)
		}
		if gammas, err = pram.TwoGammas(g.GammaComposed, g.Gamma); err != nil {
			return 0, fmt.Errorf("%s: %v; the release was damaged: decrypt it again", name, err)
		}
	}
	gamma, err := pram.CombineGammas(K, gammas)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return gamma, nil
}
