package report

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/countquery"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/report/chart"
	"github.com/pramkit/pramkit/pkg/table"
)

// anonymized reports an anonymize publication. The count of each
// sensitive value and the answers to --queries are countquery's, as
// estimate --queries computes them (the exact decoy model, estimate's
// default); the guarantees are package anonymize's.
func (o *Options) anonymized(s *Section, in table.Reader, path string) error {
	meta := in.Meta()
	var a release.Anonymized
	if err := a.Decode(meta, in.Name()); err != nil {
		return err
	}
	rel := countquery.Release{Name: in.Name(), Mechanism: a.Mechanism, L: a.L, Rows: a.Rows, Sensitive: a.Sensitive, Policy: a.Policy,
		GroupColumn: a.GroupColumn, Groups: a.Groups}
	for _, name := range a.Sensitive {
		c, _ := a.Codebook.Column(name) // Decode checked it is there
		rel.Columns = append(rel.Columns, c)
	}
	s.Facts = append(s.Facts, codebookFacts(a.Codebook)...)
	l := float64(a.L)
	sens := strings.Join(a.Sensitive, ", ")
	s.Facts = append(s.Facts, Fact{"sensitive columns", sens})
	switch a.Mechanism {
	case release.MechanismDiverted:
		s.Kind = "Anonymized table: mechanism A′, ℓ′-diverted privacy (pramkit anonymize)"
		s.What = fmt.Sprintf("The whole table (N = %d rows) with its sensitive column %s diverted: rows are put in groups of ℓ′ = %d rows with distinct values, and each row publishes a value drawn at random from its group. Other columns are published unchanged, in random row order.", a.Rows, sens, a.L)
		s.Privacy = fmt.Sprintf("Each published %s is the person's own with probability 1/ℓ′ = %s and otherwise one of %d others of their group, so it never singles out a value; counts of rare values get relative errors of the order of the count (the table below gives the chance per value).", sens, num(1/l), a.L-1)
		s.Facts = append(s.Facts, Fact{"mechanism", "A′ (ℓ′-diverted; Fu et al.)"}, Fact{"ℓ′", fmt.Sprint(a.L)})
	case release.MechanismAnatomy:
		s.Kind = "Anonymized table: Anatomy (pramkit anonymize --mechanism anatomy)"
		s.What = fmt.Sprintf("The table (N = %d rows) split in two: the rows without %s, each with a group id, and a sensitive table of each of the %d groups' values and counts.", a.Rows, sens, a.Groups)
		s.Privacy = fmt.Sprintf("Each group holds ℓ′ = %d distinct values of %s, so a person is linked to their true value with probability at most 1/ℓ′ = %s; the values' counts are published exactly.", a.L, sens, num(1/l))
		s.Facts = append(s.Facts, Fact{"mechanism", "Anatomy (Xiao–Tao)"}, Fact{"ℓ′", fmt.Sprint(a.L)}, Fact{"groups", fmt.Sprint(a.Groups)})
	case release.MechanismGlobal:
		var g release.Global
		if err := g.Decode(meta, in.Name()); err != nil {
			return err
		}
		rel.Keep = g.P
		ps := make([]string, len(g.P))
		for k, p := range g.P {
			ps[k] = num(p)
		}
		s.Kind = "Anonymized table: global randomization (mechanism A, pramkit anonymize --mechanism global)"
		s.What = fmt.Sprintf("The whole table with each row's %s kept with probability p = %s and otherwise replaced by a value drawn uniformly from the codebook.", sens, strings.Join(ps, ", "))
		own := make([]string, len(g.P))
		for k, p := range g.P {
			V := float64(rel.Columns[k].K())
			own[k] = num(p + (1-p)/V)
		}
		s.Privacy = fmt.Sprintf("Each published %s is the person's own with probability %s: the keep probability p plus the chance (1 − p)/V that the uniform redraw hits it", sens, strings.Join(own, ", "))
		if a.L > 0 {
			s.Privacy += fmt.Sprintf(" (p chosen so that it is 1/ℓ′ for ℓ′ = %d)", a.L)
		}
		s.Privacy += "; the other values are equally likely, so no published value singles out the person's."
		s.Facts = append(s.Facts, Fact{"mechanism", "global randomization (mechanism A)"}, Fact{"keep probability p", strings.Join(ps, ", ")})
		if a.L > 0 {
			s.Facts = append(s.Facts, Fact{"ℓ′", fmt.Sprint(a.L)})
		}
	}
	s.Facts = append(s.Facts, Fact{"rows published N", itoa(a.Rows)}, Fact{"rows left out", itoa(a.Dropped + a.MissingDropped)})

	// Each sensitive value's count from one table of V counts per column
	// (countquery.Values: a query per value held ~350 bytes a value, over
	// 400 MB at 1M values), then the user's queries in a plan of their own.
	values, err := countquery.NewValues(&rel)
	if err != nil {
		return err
	}
	var queries []countquery.Query
	var plan *countquery.Plan
	if o.Queries != "" {
		if queries, err = countquery.ReadQueries(o.Queries, nil); err != nil {
			return err
		}
		var nsa *codebook.Codebook
		if o.Codebook != "" {
			if nsa, err = codebook.Load(o.Codebook); err != nil {
				return err
			}
		}
		if plan, err = countquery.NewPlanFor(&rel, in.Schema(), nsa, queries, o.Queries, countquery.DefaultOptions(a.Grouping == release.GroupingRandom)); err != nil {
			return err
		}
	}
	// The codebook's text in the metadata (10 MB at 1M labels) is parsed:
	// let it go (the reader's Meta is its only holder) before the
	// sensitive table's is parsed.
	sum := ""
	if a.Mechanism == release.MechanismAnatomy {
		sum = release.CodebookDigest(meta[release.KeyCodebook])
	}
	delete(meta, release.KeyCodebook)
	// Anatomy's sensitive table: its metadata checked now; the value
	// counts stream it after the row table (Values.ScanAnatomyGroups), and
	// a plan of --queries reads it in passes of its own
	// (Plan.ReadAnatomyGroups: held or streamed, whichever is smaller).
	groupsPath := ""
	var openGroups func(cols []string) (table.Reader, error)
	if a.Mechanism == release.MechanismAnatomy {
		var checked table.Reader
		if groupsPath, checked, err = o.checkAnatomyGroups(in.Name(), &a, sum); err != nil {
			return err
		}
		openGroups = func(cols []string) (table.Reader, error) {
			// Its metadata and data digest as checked, the sidecar not
			// read again (table.ReadOptions.SidecarOf).
			gin, err := o.openAnatomyGroups(groupsPath, in.Name(), &a, table.ReadOptions{Columns: cols, BatchSize: batchSize(&rel), SidecarOf: checked, DigestMeta: []string{release.KeyCodebook}})
			if err == nil {
				delete(gin.Meta(), release.KeyCodebook) // checked by checkAnatomyGroups
			}
			return gin, err
		}
	}
	// A count table (estimate --tabulate) of the release: rows weigh their
	// count.
	countColumn := ""
	if release.IsCountTable(meta) {
		countColumn = release.CountColumn
	}
	// The plan of --queries first, in passes of its own: its tables per
	// group (the sensitive table held, or m_g) are gone before the value
	// counts' (m_g, then 8 bytes a value) are made.
	if plan != nil {
		if openGroups != nil {
			if err := plan.ReadAnatomyGroups(openGroups); err != nil {
				return err
			}
		}
		// The release's metadata and data digest as read above, its
		// sidecar (the codebook's text) not read again.
		err := o.scan(path, table.ReadOptions{SidecarOf: in}, func(in table.Reader) error {
			delete(in.Meta(), release.KeyCodebook) // parsed above
			_, err := plan.ScanPart(in, countColumn, nil)
			return err
		})
		if err != nil {
			return err
		}
		// The release closed: a streamed sensitive table is read now.
		if err := plan.EndScan(); err != nil {
			return err
		}
	}
	vopt := valuesRead(in.Schema(), &rel, countColumn)
	vopt.SidecarOf = in
	if err := o.scan(path, vopt, func(in table.Reader) error {
		delete(in.Meta(), release.KeyCodebook)
		return values.ScanRelease(in, countColumn)
	}); err != nil {
		return err
	}
	if openGroups != nil {
		if err := values.ScanAnatomyGroups(openGroups); err != nil {
			return err
		}
	}
	hasTruth := len(o.Truth) > 0
	if hasTruth {
		scans := []func(table.Reader) error{values.ScanTruth}
		if plan != nil {
			scans = append(scans, func(tin table.Reader) error { return plan.ScanTruth(tin, nil) })
		}
		for _, scan := range scans {
			err := o.scan(o.Truth[0], table.ReadOptions{}, func(tin table.Reader) error {
				if mech := tin.Meta()[release.KeyMechanism]; mech != "" {
					return fmt.Errorf("--truth %s is a release (mechanism %s), not the original table; give the table that was anonymized", tin.Name(), mech)
				}
				return scan(tin)
			})
			if err != nil {
				return err
			}
		}
	}
	// estimate's defaults for this release, so the report's answers are
	// estimate's (TestReportNumbersAreEstimates).
	var answers []countquery.Answer
	if plan != nil {
		if answers, err = plan.Answers(countquery.DefaultOptions(a.Grouping == release.GroupingRandom)); err != nil {
			return err
		}
	}

	// Every label is looked up: the sensitive columns' label tables
	// (6 bytes a label, 11 MB at 2M labels) go before the estimates are
	// made; the sections read labels by index only.
	for _, c := range rel.Columns {
		c.ForgetIndex()
	}

	// Per sensitive value: its count, T_f and the Definition 5 guarantee.
	for k, name := range a.Sensitive {
		col := rel.Columns[k]
		V := col.K()
		est, err := values.Estimates(k)
		if err != nil {
			return err
		}
		trueCounts := values.Truth(k)
		// A column of many values: the charts show the maxBars and the
		// table lists the maxRows values of the largest counts (a table of
		// 1M values made a 110 MB page, and 660 MB of rows to make it).
		var rows, bars []int
		switch {
		case V <= maxBars:
			rows = inOrder(V)
			bars = rows
		case V <= maxRows:
			rows, bars = inOrder(V), sortedTop(est, maxBars)
		default: // the largest first: the chart's are the table's first
			rows = sortedTop(est, maxRows)
			bars = rows[:maxBars]
		}
		// The values shown, with their estimates, true counts and (A′)
		// the counts the guarantees are computed from.
		pick := func(idx []int) (cats []string, e, tr []float64, counts []int64) {
			for _, i := range idx {
				cats = append(cats, col.Label(i))
				e = append(e, est[i])
				f := est[i]
				if hasTruth {
					tr = append(tr, float64(trueCounts[i]))
					f = float64(trueCounts[i])
				}
				counts = append(counts, int64(math.Max(0, math.Round(f))))
			}
			return cats, e, tr, counts
		}
		c, barEst, barTruth, barCounts := pick(bars)
		series := []chart.Series{{Name: "published count", Values: barEst}}
		if a.Mechanism == release.MechanismGlobal {
			series[0].Name = "estimated count (mechanism A's estimator)"
		}
		head := []string{name, series[0].Name}
		if hasTruth {
			series = append(series, chart.Series{Name: "true count (--truth)", Values: barTruth})
			head = append(head, "true count")
		}
		var refs []chart.Ref
		// g and gb are Lemma 4's and Definition 5's guarantees of the
		// table's and the chart's values.
		var g, gb *anonymize.Report
		if a.Mechanism == release.MechanismDiverted {
			if gb, err = anonymize.Guarantees(barCounts, a.L, o.RelError, o.TE); err != nil {
				return err
			}
			refs = []chart.Ref{{Name: fmt.Sprintf("T_f = %s (Lemma 4)", num(gb.Tf)), Value: gb.Tf}}
			head = append(head, fmt.Sprintf("P(rel. error ≥ %s) ≤ (Ineq. 3)", num(o.RelError)), "≥ T_f", fmt.Sprintf("T_P = P(rel. error > %s) (Def. 5)", num(o.RelError)))
		}
		caption := "How many rows hold each value."
		if V > maxBars {
			caption = fmt.Sprintf("The %d largest of %d values' counts. ", maxBars, V) + caption
		}
		if gb != nil {
			caption = fmt.Sprintf("Values counted at least T_f = %s times have the utility guarantee of Lemma 4: a relative error of at least ε = %s with probability at most T_E = %s.", num(gb.Tf), num(o.RelError), num(o.TE))
		}
		bl, err := barsBlock(chart.Bars{Title: "Count of each " + name, ValueLabel: "rows", Categories: c, Series: series, Refs: refs}, caption)
		if err != nil {
			return err
		}
		bl.Heading = "Sensitive values: " + name
		s.Blocks = append(s.Blocks, bl)
		t := &Table{Caption: "Sensitive values of " + name, Head: head, Numeric: []bool{false, true, true, true, false, true}}
		if gb != nil {
			t.Numeric = []bool{false, true}
			if hasTruth {
				t.Numeric = append(t.Numeric, true)
			}
			t.Numeric = append(t.Numeric, true, false, true)
		}
		if V > maxRows {
			t.Note = fmt.Sprintf("The %d values of the largest counts, of %d; estimate --query %s=VALUE answers any other. ", maxRows, V, name)
		}
		cats, rowEst, rowTruth, rowCounts := pick(rows)
		if gb != nil {
			if g, err = anonymize.Guarantees(rowCounts, a.L, o.RelError, o.TE); err != nil {
				return err
			}
		}
		for j := range rows {
			r := []string{cats[j], num(math.Round(rowEst[j]*100) / 100)}
			if hasTruth {
				r = append(r, num(rowTruth[j]))
			}
			if g != nil {
				v := g.Values[j]
				r = append(r, share(v.ErrorBound), map[bool]string{true: "yes", false: "no"}[v.Useful], share(v.Privacy))
			}
			t.Rows = append(t.Rows, r)
		}
		if gb != nil {
			basis := "the published counts (f′_s estimates f_s)"
			if hasTruth {
				basis = "the true counts (--truth)"
			}
			t.Note += fmt.Sprintf("Guarantees computed from %s; ε = %s (--rel-error), T_E = %s (--te).", basis, num(o.RelError), num(o.TE))
			tp, cheb := make([]float64, len(bars)), make([]float64, len(bars))
			for j, v := range gb.Values {
				tp[j], cheb[j] = v.Privacy, v.ErrorBound
			}
			gbl, err := barsBlock(chart.Bars{Title: fmt.Sprintf("Guarantees per %s at relative error ε = %s", name, num(o.RelError)), ValueLabel: "probability", Categories: c, Max: 1,
				Series: []chart.Series{{Name: "T_P: P(relative error > ε), Definition 5", Values: tp}, {Name: "Chebyshev bound on P(relative error ≥ ε), Inequality 3", Values: cheb}}},
				"Definition 5's privacy guarantee T_P: the larger, the less a published count tells about the true one; rare values are protected, frequent ones are accurate.")
			if err != nil {
				return err
			}
			s.Blocks = append(s.Blocks, Block{Table: t}, gbl)
		} else {
			s.Blocks = append(s.Blocks, Block{Table: t})
		}
	}

	// The --queries.
	if len(queries) > 0 {
		head := []string{"query", "estimated count"}
		num0 := []bool{false, true, true, true, true}
		if hasTruth {
			head = append(head, "true count", "relative error")
		}
		diverted := a.Mechanism == release.MechanismDiverted
		if diverted {
			head = append(head, fmt.Sprintf("estimated P(rel. error > %s)", num(o.RelError)))
		}
		t := &Table{Caption: "Count queries (--queries " + filepath.Base(o.Queries) + ")", Head: head, Numeric: num0}
		var cats []string
		var est, truth []float64
		for i := range queries {
			ans := answers[i]
			r := []string{queries[i].Text, num(math.Round(ans.Estimate*100) / 100)}
			if hasTruth {
				re := math.NaN()
				if ans.Truth > 0 {
					re = math.Abs(ans.Estimate-ans.Truth) / ans.Truth
				}
				r = append(r, num(ans.Truth), share(re))
			}
			if diverted {
				// Definition 5 at f_s ≈ the estimate: exact for a query on
				// one sensitive value, indicative for others.
				tp, err := anonymize.PrivacyGuarantee(int64(math.Max(0, math.Round(ans.Estimate))), a.L, o.RelError)
				if err != nil {
					return err
				}
				r = append(r, share(tp))
			}
			t.Rows = append(t.Rows, r)
			cats, est, truth = append(cats, queries[i].Text), append(est, ans.Estimate), append(truth, ans.Truth)
		}
		if diverted {
			t.Note = "The estimated chance of a relative error above ε is Definition 5's T_P at f_s = the estimate: exact for a query on one sensitive value, indicative for queries that add other columns."
		}
		series := []chart.Series{{Name: "estimated count", Values: est}}
		if hasTruth {
			series = append(series, chart.Series{Name: "true count (--truth)", Values: truth})
		}
		if len(cats) > maxBars {
			cats = cats[:maxBars]
			for j := range series {
				series[j].Values = series[j].Values[:maxBars]
			}
		}
		qb, err := barsBlock(chart.Bars{Title: "Count queries", ValueLabel: "rows", Categories: cats, Series: series}, "Estimated answers to the count queries (estimate --queries computes the same).")
		if err != nil {
			return err
		}
		qb.Heading = "Count queries"
		s.Blocks = append(s.Blocks, qb, Block{Table: t})
	}
	return nil
}

// checkAnatomyGroups finds an anatomy release's sensitive table (--groups,
// else the file its metadata names, next to the release name) and checks
// its metadata: the release's, and well formed. It returns the path and
// the (closed) reader it checked.
func (o *Options) checkAnatomyGroups(name string, a *release.Anonymized, sum string) (string, table.Reader, error) {
	path := o.Groups
	if path == "" {
		if a.GroupsTable == "" {
			return "", nil, fmt.Errorf("%s is an anatomy release: give its sensitive table with --groups FILE", name)
		}
		path = filepath.Join(filepath.Dir(name), filepath.Base(a.GroupsTable))
	}
	// Its codebook item is read as its digest (a CSV sidecar's a piece at
	// a time): the release's codebook is taken when they are the same;
	// else it is opened again with the text, which Decode parses.
	in, err := o.openAnatomyGroups(path, name, a, table.ReadOptions{DigestMeta: []string{release.KeyCodebook}})
	if err != nil {
		return "", nil, err
	}
	defer func() {
		if in != nil {
			in.Close()
		}
	}()
	digested := true
	if sum == "" || in.Meta()[release.KeyCodebook] != sum {
		in.Close()
		if in, err = o.openAnatomyGroups(path, name, a, table.ReadOptions{}); err != nil {
			return "", nil, err
		}
		digested = false
	}
	var groups release.AnatomyGroups
	// The release's codebook, when the table's item is the same text.
	if err := groups.DecodeFor(in.Meta(), in.Name(), a.Codebook, sum, digested); err != nil {
		return "", nil, err
	}
	return path, in, nil
}

// openAnatomyGroups opens the sensitive table at path of anatomy release
// name with opt, refusing another release's.
func (o *Options) openAnatomyGroups(path, name string, a *release.Anonymized, opt table.ReadOptions) (table.Reader, error) {
	in, err := o.Open(path, opt)
	if err != nil {
		return nil, fmt.Errorf("%w (the sensitive table of the anatomy release %s; give it with --groups FILE)", err, name)
	}
	meta := in.Meta()
	if meta[release.KeyTable] != release.TableAnatomyGroups || meta[release.KeyReleaseID] != a.ReleaseID {
		in.Close()
		return nil, fmt.Errorf("%s is not the sensitive table of %s (their release ids differ); give the --groups file anonymize wrote with it", in.Name(), name)
	}
	return in, nil
}

// valuesRead is how countquery.Values reads the release whose columns are
// schema's: the sensitive columns alone (Parquet's as dictionaries), or
// for anatomy its group ids, and a count table's countColumn, in smaller
// batches past table.ManyLabels labels. A column the table lacks is left for
// Values to name in its message.
func valuesRead(schema *arrow.Schema, rel *countquery.Release, countColumn string) table.ReadOptions {
	var opt table.ReadOptions
	cols := rel.Sensitive
	if rel.Mechanism == release.MechanismAnatomy {
		cols = []string{rel.GroupColumn}
	} else {
		opt.DictColumns = rel.Sensitive
	}
	if countColumn != "" {
		cols = append(slices.Clone(cols), countColumn)
	}
	for _, c := range cols {
		if schema.HasField(c) {
			opt.Columns = append(opt.Columns, c)
		}
	}
	opt.BatchSize = batchSize(rel)
	return opt
}

// batchSize is the rows per batch of a table of rel's labels: past
// table.ManyLabels, table.ManyLabelsBatchRows; else 0, the default.
func batchSize(rel *countquery.Release) int {
	labels := 0
	for _, c := range rel.Columns {
		labels += c.K()
	}
	if labels > table.ManyLabels {
		return table.ManyLabelsBatchRows
	}
	return 0
}

// scan opens the table at path with opt, gives it to fn and closes it.
func (o *Options) scan(path string, opt table.ReadOptions, fn func(table.Reader) error) error {
	in, err := o.Open(path, opt)
	if err != nil {
		return err
	}
	defer in.Close()
	return fn(in)
}
