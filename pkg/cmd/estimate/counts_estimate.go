package estimate

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/countquery"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// readAnatomyTable gives plan the sensitive table of an anatomy release:
// --groups, else the file the metadata names next to the release (meta:
// the release's metadata). Each pass opens it again, reading only the
// columns the pass needs, and refuses a table of another release (its
// release id); the first also checks its metadata whole (release.AnatomyGroups),
// unless its items are the release's, byte for byte (and its codebook's
// text has the release's digest): the release's are checked already, and
// parsing a codebook of 1M labels again took ~20 MB at the run's peak.
// The codebook's text in a reader's metadata (~10 MB) is dropped once
// open.
func (o *Options) readAnatomyTable(rel *countRelease, meta table.Meta, plan *countquery.Plan) error {
	path := o.countOpts().Groups
	if path == "" {
		if rel.dir == "" || rel.groupsTable == "" {
			return fmt.Errorf("%s is an anatomy release: give its sensitive table with --groups FILE", rel.Name)
		}
		path = filepath.Join(rel.dir, filepath.Base(rel.groupsTable))
	}
	if table.IsStdio(path) {
		return cli.Usagef("--groups -: the sensitive table of an anatomy release is read in passes; give it as a file")
	}
	checked := false
	// Passes after the first take the metadata and the data's digest
	// from the first pass's reader, not from the sidecar again (its
	// codebook item: 24 MB at 2M labels).
	var first table.Reader
	return plan.ReadAnatomyGroups(func(cols []string) (table.Reader, error) {
		// Its codebook item is only compared with the release's: read
		// as its digest (a CSV sidecar's a piece at a time).
		opt := table.ReadOptions{Columns: cols, SidecarOf: first, DigestMeta: []string{release.KeyCodebook}}
		if rel.Columns[0].K() > table.ManyLabels {
			opt.BatchSize = table.ManyLabelsBatchRows
		}
		in, err := o.Streams.OpenWith(path, opt)
		if err != nil {
			return nil, fmt.Errorf("%w (the sensitive table of the anatomy release %s; give it with --groups FILE)", err, rel.Name)
		}
		gmeta := in.Meta()
		if gmeta[release.KeyTable] != release.TableAnatomyGroups || gmeta[release.KeyReleaseID] != rel.releaseID {
			in.Close()
			return nil, fmt.Errorf("%s is not the sensitive table of %s (their release ids differ); give the --groups file anonymize wrote with it", in.Name(), rel.Name)
		}
		if !checked && !sameGroupsMeta(gmeta, meta, rel.codebookSum) {
			// Its items say what differs: opened again with the
			// codebook's text.
			in.Close()
			opt.DigestMeta = nil
			if in, err = o.Streams.OpenWith(path, opt); err != nil {
				return nil, err
			}
			gmeta = in.Meta()
			var groups release.AnatomyGroups
			if err := groups.Decode(gmeta, in.Name()); err != nil {
				in.Close()
				return nil, err
			}
		}
		checked = true
		delete(gmeta, release.KeyCodebook)
		if first == nil {
			first = in
		}
		return in, nil
	})
}

// sameGroupsMeta says the items of an anatomy sensitive table's metadata
// gmeta that release.AnatomyGroups checks are those of its release's meta,
// byte for byte, and its codebook item, read as its digest, is the
// release's digest sum (the release's text itself is dropped:
// dropCodebookText).
func sameGroupsMeta(gmeta, meta table.Meta, sum string) bool {
	for _, key := range []string{release.KeyReleaseID, release.KeyL, release.KeyGroups, release.KeyRows, release.KeySensitive} {
		a, okA := gmeta[key]
		b, okB := meta[key]
		if a != b || !okA || !okB {
			return false
		}
	}
	digest, ok := gmeta[release.KeyCodebook] // read as its digest (DigestMeta)
	return ok && sum != "" && digest == sum
}

// scanCountTruth counts, in one pass over the original table (--truth),
// the rows of every query: the true counts.
func (o *Options) scanCountTruth(p *countquery.Plan) error {
	// Only the queried columns of a file are read
	// (table.ReadOptions.Columns); a table that lacks one, and standard
	// input (read once), are read whole, for the scan's own message.
	var cols []string
	if !table.IsStdio(o.Truth[0]) {
		cols = p.TruthColumns()
	}
	in, err := o.Streams.OpenWith(o.Truth[0], table.ReadOptions{Columns: cols})
	var ce *table.ColumnError
	if errors.As(err, &ce) {
		in, err = o.Streams.Open(o.Truth[0])
	}
	if err != nil {
		return err
	}
	defer in.Close()
	if mech := in.Meta()[release.KeyMechanism]; mech != "" {
		return fmt.Errorf("--truth %s is a release (mechanism %s), not the original table; give the table that was anonymized", in.Name(), mech)
	}
	return p.ScanTruth(in, o.Streams.Progress("estimate: read truth"))
}

func countNotConverged(answers []countquery.Answer) int {
	n := 0
	for _, a := range answers {
		if !a.Converged {
			n++
		}
	}
	return n
}

// relativeError is |est − truth|/truth, NaN for a true count of 0.
func relativeError(est, truth float64) float64 {
	if truth == 0 {
		return math.NaN()
	}
	return math.Abs(est-truth) / truth
}

// countJSON is --json's shape.
type countJSONOut struct {
	Mechanism         string            `json:"mechanism"`
	L                 int               `json:"l,omitempty"`
	N                 int64             `json:"N"`
	Decoy             string            `json:"decoy,omitempty"`
	Queries           []countJSONAnswer `json:"queries"`
	IBUStop           string            `json:"ibu_stop,omitempty"`
	MeanRelativeError *float64          `json:"mean_relative_error,omitempty"`
}

type countJSONAnswer struct {
	Query         string   `json:"query"`
	Estimate      float64  `json:"estimate"`
	Iterations    int      `json:"iterations"`
	True          *float64 `json:"true,omitempty"`
	RelativeError *float64 `json:"relative_error,omitempty"`
}

// writeCountAnswers writes the answers: JSON with --json, a CSV on stdout,
// or a table to -o.
func (o *Options) writeCountAnswers(rel *countRelease, queries []countquery.Query, rows int64, answers []countquery.Answer, hasTruth bool, stop ibuStop) error {
	if o.JSON {
		out := countJSONOut{Mechanism: rel.Mechanism, L: rel.L, N: rows}
		if rel.Mechanism == release.MechanismDiverted {
			out.Decoy, out.IBUStop = o.countOpts().Decoy, stop.rule
		}
		var sum float64
		var n int
		for i, a := range answers {
			ja := countJSONAnswer{Query: queries[i].Text, Estimate: a.Estimate, Iterations: a.Iterations}
			if hasTruth {
				tr := a.Truth
				ja.True = &tr
				if re := relativeError(a.Estimate, a.Truth); !math.IsNaN(re) {
					ja.RelativeError = &re
					sum += re
					n++
				}
			}
			out.Queries = append(out.Queries, ja)
		}
		if n > 0 {
			m := sum / float64(n)
			out.MeanRelativeError = &m
		}
		enc := json.NewEncoder(o.Streams.Out)
		enc.SetEscapeHTML(false) // labels such as ">50K" as they are
		return enc.Encode(out)
	}
	if table.IsStdio(o.Output.Path) && o.Output.Format == "" {
		w := csv.NewWriter(o.Streams.Out)
		head := []string{"query", "estimate", "iterations"}
		if hasTruth {
			head = append(head, "true", "relative_error")
		}
		if err := w.Write(head); err != nil {
			return err
		}
		for i, a := range answers {
			row := []string{queries[i].Text, strconv.FormatFloat(a.Estimate, 'f', 2, 64), strconv.Itoa(a.Iterations)}
			if hasTruth {
				row = append(row, strconv.FormatFloat(a.Truth, 'f', -1, 64), strconv.FormatFloat(relativeError(a.Estimate, a.Truth), 'f', 4, 64))
			}
			if err := w.Write(row); err != nil {
				return err
			}
		}
		w.Flush()
		return w.Error()
	}
	fields := []arrow.Field{
		{Name: "query", Type: arrow.BinaryTypes.String},
		{Name: "estimate", Type: arrow.PrimitiveTypes.Float64},
		{Name: "iterations", Type: arrow.PrimitiveTypes.Int64},
	}
	if hasTruth {
		fields = append(fields, arrow.Field{Name: "true", Type: arrow.PrimitiveTypes.Int64}, arrow.Field{Name: "relative_error", Type: arrow.PrimitiveTypes.Float64})
	}
	schema := arrow.NewSchema(fields, nil)
	meta := table.Meta{release.KeyStage: release.StageEstimate, release.KeyMechanism: rel.Mechanism, release.KeyEstimator: release.EstimatorCounts}
	meta.SetInt(release.KeyRows, rows)
	if rel.L > 0 {
		meta.SetInt(release.KeyL, int64(rel.L))
	}
	if rel.Mechanism == release.MechanismDiverted {
		meta[release.KeyDecoy] = o.countOpts().Decoy
		meta[release.KeyIBUStop] = stop.rule
		meta.SetFloat(release.KeyIBUTol, stop.tol)
		meta.SetInt(release.KeyIBUMaxIter, int64(stop.maxIter))
	}
	o.markInsecureSeed(meta)
	inputs := append(o.pramInputs(), o.countOpts().Queries, o.countOpts().Groups) // every part, and --truth
	w, err := o.Streams.Create(o.Output, schema, meta, table.CSV, inputs)
	if err != nil {
		return err
	}
	defer w.Abort()
	rw := table.NewRowWriter(w, schema, 0)
	defer rw.Release()
	for i, a := range answers {
		rw.String(0, queries[i].Text)
		rw.Float64(1, a.Estimate)
		rw.Int64(2, int64(a.Iterations))
		if hasTruth {
			rw.Int64(3, int64(a.Truth))
			rw.Float64(4, relativeError(a.Estimate, a.Truth))
		}
		if err := rw.EndRow(); err != nil {
			return err
		}
	}
	if err := rw.Flush(); err != nil {
		return err
	}
	return w.Commit()
}
