package anonymize

import (
	"fmt"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// These are anonymize's setup for a run that publishes the rows elsewhere
// (pramkit-beam anonymize parses anonymize's flags with NewCmd and a runF
// of its own, then builds a pipeline): the same checks and the same
// metadata as the tool's, so that estimate reads the distributed release
// exactly as the tool's.

// Validate checks the flags as anonymize does before it reads the input.
func (o *Options) Validate() error { return o.validate() }

// ReleaseMeta returns the metadata anonymize writes with items a (the
// encoding policies, the sensitive columns and their codebook filled in
// from the flags and cb), marked insecure_seed when the input was made
// with --insecure-seed (insecureIn), and the order.
func (o *Options) ReleaseMeta(cb *codebook.Codebook, a *release.Anonymized, insecureIn bool) (table.Meta, error) {
	o.insecureIn = insecureIn
	return o.withCodebook(o.meta(cb, a))
}

// GlobalRelease returns --mechanism global's metadata (as ReleaseMeta's)
// and each sensitive column's keep probability (--p, or retention 1/ℓ′).
func (o *Options) GlobalRelease(cb *codebook.Codebook, insecureIn bool) (table.Meta, []float64, error) {
	o.insecureIn = insecureIn
	keep := make([]float64, len(o.Sensitive))
	for k, name := range o.Sensitive {
		col, ok := cb.Column(name)
		if !ok {
			return nil, nil, fmt.Errorf("the codebook has no column %q", name)
		}
		keep[k] = o.keepProbability(col.K())
	}
	meta, err := o.withCodebook(o.globalMeta(cb, keep))
	return meta, keep, err
}

// AnatomyRelease completes --mechanism anatomy's metadata a with the group
// column, a fresh release id (shared with the sensitive table; from
// crypto/rand even with --insecure-seed) and the sensitive table's name
// (--groups), and returns the row table's metadata (as ReleaseMeta's).
// a.GroupsTableMeta is then the sensitive table's.
func (o *Options) AnatomyRelease(cb *codebook.Codebook, a *release.Anonymized, insecureIn bool) (table.Meta, error) {
	o.insecureIn = insecureIn
	return o.withCodebook(o.anatomyMeta(cb, a))
}

// withCodebook is meta with its codebook item (o.codebookItem, which the
// tool's own writers make when they commit).
func (o *Options) withCodebook(meta table.Meta, err error) (table.Meta, error) {
	if err != nil {
		return nil, err
	}
	for _, item := range o.codebookItem {
		if meta[item.Key], err = item.Value(); err != nil {
			return nil, err
		}
	}
	return meta, nil
}

// PublishedReport prints what --report prints after publishing with
// --mechanism diverted (the table, or JSON with --json, on the streams'
// output): each sensitive value's guarantees for counts, the published
// rows' frequencies of each sensitive column (cb's codebooks).
func (o *Options) PublishedReport(cb *codebook.Codebook, counts [][]int64) error {
	d := &dataset{}
	for _, name := range o.Sensitive {
		col, ok := cb.Column(name)
		if !ok {
			return fmt.Errorf("the codebook has no column %q", name)
		}
		d.sens = append(d.sens, &sensitive{name: name, col: col})
	}
	if len(counts) != len(d.sens) {
		return fmt.Errorf("internal error: %d columns of counts for %d sensitive columns", len(counts), len(d.sens))
	}
	return o.printReport(d, counts, "the published rows")
}
