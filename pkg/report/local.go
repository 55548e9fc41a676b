package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/pramkit/pramkit/pkg/bitflip"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/report/chart"
	"github.com/pramkit/pramkit/pkg/table"
)

// maxAnonymityBits bounds the record length for which a report computes
// A_p exactly with --truth (bitflip.Mechanism.Anonymity takes about
// 22·2^L bytes).
const maxAnonymityBits = 20

func (o *Options) bitflip(s *Section, in table.Reader) error {
	meta := in.Meta()
	var b release.Bitflip
	if err := b.Decode(meta, in.Name()); err != nil {
		return err
	}
	mech, err := bitflip.New(bitflip.Options{LieProbability: b.Lie, Bits: b.Bits})
	if err != nil {
		return fmt.Errorf("%s: %v", in.Name(), err)
	}
	l := b.Layout
	var cb *codebook.Codebook
	if c, ok := meta[release.KeyCodebook]; ok {
		if cb, err = codebook.ParseString(c); err != nil {
			return fmt.Errorf("%s: the codebook in the metadata is not valid (%v); randomize the original table again", in.Name(), err)
		}
		s.Facts = append(s.Facts, codebookFacts(cb)...)
	}
	var groups []string
	for j := range l.NumGroups() {
		g := l.Group(j)
		groups = append(groups, fmt.Sprintf("%s (%s, %d bits)", g.Name, g.Kind, g.Width()))
	}
	s.Kind = "Local release: bitflip (K-randomization, pramkit perturb --mechanism bitflip)"
	if release.IsCountTable(meta) {
		s.Kind = "Local release: bitflip, as a count table (estimate --tabulate)"
	}
	s.What = fmt.Sprintf("Each person's row encoded as L = %d bits (%s), every bit flipped independently with probability q = %s before release. Only the bits are published.", b.Bits, strings.Join(groups, "; "), num(b.Lie))
	s.Privacy = fmt.Sprintf("Each released bit equals the person's true bit with probability %s; ε = %s per bit, %s for a whole record (L bits), and %s between any two records the codebook allows.", num(1-b.Lie), num(b.EpsilonPerBit), num(b.EpsilonPerRecord), num(b.EpsilonEncoded))
	s.Facts = append(s.Facts,
		Fact{"mechanism", "bitflip (Zhilyaev–Zeber K-randomization): every bit flips with probability q"},
		Fact{"lie probability q", num(b.Lie)}, Fact{"bits L", fmt.Sprint(b.Bits)},
		Fact{"ε per bit", num(b.EpsilonPerBit)}, Fact{"ε per record", num(b.EpsilonPerRecord)},
		Fact{"ε between encoded records", num(b.EpsilonEncoded)})
	names := make([]string, b.Bits)
	for i := range names {
		names[i] = l.BitName(i)
	}
	t := mech.NewTally()
	counts := release.IsCountTable(meta)
	err = scanRows(in, names, func(vals []table.Values, i int, w int64, row int64) error {
		for j := range names {
			x, ok := vals[j].Int(i)
			limit := int64(1) // a row holds bits, a count table's row the ones of w reports
			if counts {
				limit = w
			}
			if !ok || x < 0 || x > limit {
				return &table.DataError{File: in.Name(), Row: row, Column: names[j], Err: fmt.Errorf("value %s is not a released bit count; the release was edited: randomize the original table again", table.QuoteCell(vals[j].String(i)))}
			}
			t.Ones[j] += x
		}
		t.N += w
		return nil
	})
	if err != nil {
		return err
	}
	if t.N == 0 {
		return fmt.Errorf("%s: the release has no rows; randomize a non-empty table", in.Name())
	}
	s.Facts = append(s.Facts, Fact{"released records", itoa(t.N)})
	ests, err := mech.EstimateBits(t, o.Level)
	if err != nil {
		return err
	}
	// The truth: each group's true distribution, and the records for A_p.
	var truth [][]float64
	var records []uint64
	gnames := make([]string, l.NumGroups())
	for j := range gnames {
		gnames[j] = l.Group(j).Name
	}
	if tin, err := o.truthFile(gnames); err != nil {
		return err
	} else if tin != nil {
		defer tin.Close()
		truth = make([][]float64, l.NumGroups())
		encs := make([]*codebook.Encoder, l.NumGroups())
		for j := range truth {
			g := l.Group(j)
			truth[j] = make([]float64, len(g.Labels))
			// The release's codebook reads the original values (numeric
			// columns by their cuts); a 0/1 column has none.
			c, ok := (*codebook.Column)(nil), false
			if cb != nil {
				c, ok = cb.Column(g.Name)
			}
			if !ok {
				nc, err := codebook.NewColumn(codebook.Spec{Name: g.Name, Categories: g.Labels})
				if err != nil {
					return err
				}
				c = &nc
			}
			if encs[j], err = c.Encoder(codebook.Policy{}); err != nil {
				return err
			}
		}
		values := make([]int, l.NumGroups())
		word := make([]uint64, l.Words())
		var n int64
		err = scanRows(tin, gnames, func(vals []table.Values, i int, w int64, row int64) error {
			for j, e := range encs {
				x, err := e.Index(vals[j].String(i))
				if err != nil {
					return &table.DataError{File: tin.Name(), Row: row, Column: gnames[j], Err: err}
				}
				values[j] = int(x)
				truth[j][x] += float64(w)
			}
			n += w
			if b.Bits <= maxAnonymityBits {
				if err := l.Encode(values, word); err != nil {
					return err
				}
				for range w {
					records = append(records, word[0])
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for j := range truth {
			for x := range truth[j] {
				truth[j][x] /= float64(n)
			}
		}
	}
	if records != nil {
		a, err := mech.Anonymity(records)
		if err != nil {
			return err
		}
		s.Facts = append(s.Facts, Fact{"anonymity A_p (--truth)", num(a.Ap)})
		s.Blocks = append(s.Blocks, Block{Heading: "Anonymity", Text: fmt.Sprintf("A_p = %s (Zhilyaev–Zeber §2, computed exactly from the --truth records): for every person and every report, the chance that some other person's record produces that report is at least A_p times the chance that theirs does.", num(a.Ap))})
	}
	// Per-bit estimates with their intervals.
	cats := make([]string, b.Bits)
	est, lo, hi := make([]float64, b.Bits), make([]float64, b.Bits), make([]float64, b.Bits)
	obs := make([]float64, b.Bits)
	bt := &Table{Caption: "Per-bit frequencies", Head: []string{"bit", "estimate", "interval low", "interval high", "observed"}, Numeric: []bool{false, true, true, true, true}}
	for i, e := range ests {
		cats[i], est[i], lo[i], hi[i] = names[i], e.Freq, e.Lo, e.Hi
		obs[i] = float64(t.Ones[i]) / float64(t.N)
		bt.Rows = append(bt.Rows, []string{names[i], share(e.Freq), share(e.Lo), share(e.Hi), share(obs[i])})
	}
	if b.Bits > maxRows {
		bt.Rows, bt.Note = bt.Rows[:maxRows], fmt.Sprintf("The first %d of %d bits.", maxRows, b.Bits)
	}
	if len(cats) > maxBars {
		cats, est, lo, hi, obs = cats[:maxBars], est[:maxBars], lo[:maxBars], hi[:maxBars], obs[:maxBars]
	}
	bb, err := barsBlock(chart.Bars{Title: "Per-bit frequencies", ValueLabel: "share of records with the bit set",
		Categories: cats, Series: []chart.Series{
			{Name: fmt.Sprintf("estimate with %g %% interval", 100*o.Level), Values: est, Lo: lo, Hi: hi},
			{Name: "observed (flipped) bits", Values: obs}}},
		"The unbiased estimate (ȳ − q)/(1 − 2q) of each bit's frequency among the records, next to the share of released bits set.")
	if err != nil {
		return err
	}
	bb.Heading = "Per-bit estimates"
	s.Blocks = append(s.Blocks, bb, Block{Table: bt})
	for j := range l.NumGroups() {
		g := l.Group(j)
		dist, err := mech.Distribution(l, j, t)
		if err != nil {
			return err
		}
		series := []chart.Series{{Name: "estimate (projected onto the simplex)", Values: dist}}
		head := []string{g.Name, "estimate"}
		if truth != nil {
			series = append(series, chart.Series{Name: "truth (--truth)", Values: truth[j]})
			head = append(head, "truth")
		}
		db, err := barsBlock(chart.Bars{Title: "Distribution of " + g.Name, ValueLabel: "share of records", Categories: g.Labels, Series: series},
			"The per-bit estimates of the column, projected onto the probability simplex.")
		if err != nil {
			return err
		}
		db.Heading = "Distribution of " + g.Name
		tt := &Table{Caption: "Distribution of " + g.Name, Head: head, Numeric: []bool{false, true, true}}
		for x, lab := range g.Labels {
			r := []string{lab, share(dist[x])}
			if truth != nil {
				r = append(r, share(truth[j][x]))
			}
			tt.Rows = append(tt.Rows, r)
		}
		s.Blocks = append(s.Blocks, db, Block{Table: tt})
	}
	return nil
}

func (o *Options) ddps(s *Section, in table.Reader) error {
	meta := in.Meta()
	var d release.DDPS
	if err := d.Decode(meta, in.Name()); err != nil {
		return err
	}
	mech, err := d.Mechanism()
	if err != nil {
		return fmt.Errorf("%s: %v; randomize the original table again", in.Name(), err)
	}
	s.Facts = append(s.Facts, codebookFacts(d.Codebook)...)
	s.Kind = "Local release: DDPS (Joy's distributed differential privacy by sampling, pramkit perturb --mechanism ddps)"
	if release.IsCountTable(meta) {
		s.Kind = "Local release: DDPS, as a count table (estimate --tabulate)"
	}
	V := d.V
	s.What = fmt.Sprintf("Two reports per person on column %s: round one reports %q (no value) with probability π_s = %s and otherwise a noise value; round two names the person's own value with probability π_s, otherwise a noise value. The difference of the rounds estimates how many people hold each of the %d values.", d.Column, d.NoneToken, num(d.PiS), V)
	own := 0.0 // the largest chance that round two names the person's own value
	for o := 1; o <= V; o++ {
		own = max(own, d.PiS+d.Mass(o))
	}
	s.Privacy = fmt.Sprintf("Round one does not depend on the person's value, and round two names it with probability at most %s (π_s plus its noise mass); whatever a person holds, the chance of any pair of reports changes by at most a factor e^ε = %s (ε = %s).", num(own), num(math.Exp(d.Epsilon)), num(d.Epsilon))
	s.Facts = append(s.Facts,
		Fact{"mechanism", "DDPS (Joy): two rounds of reports with sampling mass π_s and noise masses π_⊥"},
		Fact{"column", d.Column}, Fact{"π_s", num(d.PiS)}, Fact{"ε", num(d.Epsilon)}, Fact{"values V", fmt.Sprint(V)})
	if d.NonParticipant != "" {
		s.Facts = append(s.Facts, Fact{"non-participant value", d.NonParticipant})
	}
	// output returns the output a report or true value s names: ⊥0 for
	// the none token, else its category's (0 for the non-participant
	// one); ok is false for any other s. The codebook's label index
	// stands in for a map of the V labels.
	output := func(lab string) (o int, ok bool) {
		if lab == d.NoneToken {
			return 0, true
		}
		x, ok := d.Col.LabelIndex(lab)
		if !ok {
			return 0, false
		}
		return d.Output(x), true
	}
	t := mech.NewTally()
	names := []string{d.Column + ".round1", d.Column + ".round2"}
	err = scanRows(in, names, func(vals []table.Values, i int, w int64, row int64) error {
		var r [2]int
		for k := range 2 {
			lab := vals[k].String(i)
			o, ok := output(lab)
			if ok && o == 0 && lab != d.NoneToken {
				ok = false // the non-participant category is never a report
			}
			if !ok {
				return &table.DataError{File: in.Name(), Row: row, Column: names[k], Err: fmt.Errorf("report %s is none of the release's values; the release was edited: randomize the original table again", table.QuoteCell(vals[k].String(i)))}
			}
			r[k] = o
		}
		return t.AddN(r[0], r[1], w)
	})
	if err != nil {
		return err
	}
	est, err := mech.Estimate(t)
	if err != nil {
		return fmt.Errorf("%s: %v", in.Name(), err)
	}
	s.Facts = append(s.Facts, Fact{"people (reports per round)", itoa(est.N)},
		Fact{"estimated participants", fmt.Sprintf("%s ± %s (sd)", num(est.Participants.Count), num(est.Participants.SD))})
	// True counts per output (0: non-participants).
	var truth []float64
	if tin, err := o.truthFile([]string{d.Column}); err != nil {
		return err
	} else if tin != nil {
		defer tin.Close()
		truth = make([]float64, V+1)
		err := scanRows(tin, []string{d.Column}, func(vals []table.Values, i int, w int64, row int64) error {
			v := vals[0].String(i)
			if o, ok := output(v); ok && v != d.NoneToken {
				truth[o] += float64(w) // 0 for the non-participant category
			} else {
				return &table.DataError{File: tin.Name(), Row: row, Column: d.Column, Err: fmt.Errorf("value %s is not among the release's values; give the table that was randomized", table.QuoteCell(v))}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	cats := make([]string, V) // the chart's, cut to maxBars below
	for v := range V {
		cats[v] = d.Label(v + 1)
	}
	cnt, lo, hi := make([]float64, V), make([]float64, V), make([]float64, V)
	head := []string{d.Column, "estimated count", "sd", "round one", "round two"}
	if truth != nil {
		head = append(head, "true count")
	}
	tt := &Table{Caption: "Estimated owners of each value", Head: head, Numeric: []bool{false, true, true, true, true, true}}
	for v := range V {
		e := est.Count(v + 1)
		cnt[v], lo[v], hi[v] = e.Count, e.Count-e.SD, e.Count+e.SD
		r := []string{d.Label(v + 1), num(math.Round(e.Count*10) / 10), num(math.Round(e.SD*10) / 10), itoa(t.RoundOne(v + 1)), itoa(t.RoundTwo(v + 1))}
		if truth != nil {
			r = append(r, num(truth[v+1]))
		}
		tt.Rows = append(tt.Rows, r)
	}
	series := []chart.Series{{Name: "estimated count ± 1 sd", Values: cnt, Lo: lo, Hi: hi}}
	if truth != nil {
		series = append(series, chart.Series{Name: "true count (--truth)", Values: truth[1:]})
	}
	if len(cats) > maxBars {
		cats = cats[:maxBars]
		for k := range series {
			series[k].Values = series[k].Values[:maxBars]
			if series[k].Lo != nil {
				series[k].Lo, series[k].Hi = series[k].Lo[:maxBars], series[k].Hi[:maxBars]
			}
		}
	}
	bl, err := barsBlock(chart.Bars{Title: "Estimated owners of each " + d.Column, ValueLabel: "people", Categories: cats, Series: series},
		"The difference-of-rounds estimate (Joy Eq. 41), unbiased, with its standard deviation; it can be negative for rare values.")
	if err != nil {
		return err
	}
	bl.Heading = "Value counts"
	s.Blocks = append(s.Blocks, bl, Block{Table: tt})
	return nil
}
