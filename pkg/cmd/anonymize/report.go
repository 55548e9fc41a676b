package anonymize

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/table"
)

// ineligible turns the library's error about value indexes into a message
// with labels: "occupation is not eligible for ℓ′ = 8: …".
func (d *dataset) ineligible(e *anonymize.IneligibleError) error {
	sv := d.sens[e.Column]
	feasible := fmt.Sprintf("the largest feasible ℓ′ is %d (check with --check)", e.LargestL)
	if e.LargestL < 2 {
		feasible = "no ℓ′ ≥ 2 is feasible: that value holds more than half the rows"
	}
	if e.Distinct < e.L {
		return fmt.Errorf("%s: %s is not eligible for ℓ′ = %d: it has only %d distinct values and a decoy group needs ℓ′; %s",
			d.name, sv.name, e.L, e.Distinct, feasible)
	}
	return fmt.Errorf("%s: %s is not eligible for ℓ′ = %d: %s occurs %d times in %d rows, more than N/ℓ′ = %d; %s",
		d.name, sv.name, e.L, table.QuoteCell(sv.col.Label(int(e.Value))), e.Count, e.N, e.N/int64(e.L), feasible)
}

// eligible checks every sensitive column for ℓ′ = l.
func (d *dataset) eligible(l int) error {
	for k := range d.sens {
		if err := anonymize.CheckEligible(d.counts[k], l); err != nil {
			var ie *anonymize.IneligibleError
			if errors.As(err, &ie) {
				ie.Column = k
				return d.ineligible(ie)
			}
			return err
		}
	}
	return nil
}

// checkJSON is what --check --json prints.
type checkJSON struct {
	L       int               `json:"l,omitempty"`
	Columns []checkColumnJSON `json:"columns"`
}

type checkColumnJSON struct {
	Name         string `json:"name"`
	Rows         int64  `json:"rows"`
	Distinct     int    `json:"distinct"`
	MostFrequent string `json:"most_frequent"`
	Count        int64  `json:"count"`
	LargestL     int    `json:"largest_l"`
	Eligible     *bool  `json:"eligible,omitempty"`
}

// runCheck reads the sensitive columns' counts (constant memory) and says
// whether the table is eligible for --l and the largest feasible ℓ′.
func (o *Options) runCheck(in table.Reader, cb *codebook.Codebook) error {
	d, err := o.readCounts(in, cb)
	if err != nil {
		return err
	}
	lGiven := o.cmd.Flags().Changed("l")
	out := checkJSON{}
	if lGiven {
		out.L = o.L
	}
	for k, sv := range d.sens {
		top := d.mostFrequent(k)
		c := checkColumnJSON{
			Name: sv.name, Rows: d.rows, Distinct: d.distinct(k), MostFrequent: sv.col.Label(top),
			Count: d.counts[k][top], LargestL: anonymize.LargestFeasibleL(d.counts[k]),
		}
		if lGiven {
			ok := anonymize.CheckEligible(d.counts[k], o.L) == nil
			c.Eligible = &ok
		}
		out.Columns = append(out.Columns, c)
	}
	if o.JSON {
		err = printJSON(o.Streams.Out, out)
	} else {
		err = printCheck(o.Streams.Out, d, out)
	}
	if err != nil {
		return err
	}
	if lGiven {
		return d.eligible(o.L)
	}
	return nil
}

func printCheck(w io.Writer, d *dataset, c checkJSON) error {
	if d.missing > 0 {
		fmt.Fprintf(w, "# %d rows with a missing sensitive value left out (--missing drop)\n", d.missing)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "column\trows\tdistinct\tmost_frequent\tcount\tlargest_l")
	if c.L > 0 {
		fmt.Fprintf(tw, "\teligible_for_l=%d", c.L)
	}
	fmt.Fprintln(tw)
	for _, col := range c.Columns {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d", col.Name, col.Rows, col.Distinct, col.MostFrequent, col.Count, col.LargestL)
		if col.Eligible != nil {
			fmt.Fprintf(tw, "\t%s", map[bool]string{true: "yes", false: "no"}[*col.Eligible])
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// readCounts reads only the counts of the sensitive columns.
func (o *Options) readCounts(in table.Reader, cb *codebook.Codebook) (*dataset, error) {
	return read(in, cb, o.Sensitive, readOptions{policy: o.policy(), meter: o.Streams.Progress("anonymize: read")})
}

// runReportOnly prints the guarantees of publishing the input, without
// publishing it.
func (o *Options) runReportOnly(in table.Reader, cb *codebook.Codebook) error {
	d, err := o.readCounts(in, cb)
	if err != nil {
		return err
	}
	if err := d.eligible(o.L); err != nil {
		return err
	}
	return o.printReport(d, d.counts, "the input's rows")
}

// reportJSON is what --report --json prints.
type reportJSON struct {
	L        int                `json:"l"`
	RelError float64            `json:"rel_error"`
	TE       float64            `json:"te"`
	Tf       float64            `json:"tf"`
	Columns  []reportColumnJSON `json:"columns"`
}

type reportColumnJSON struct {
	Name   string            `json:"name"`
	Values []reportValueJSON `json:"values"`
}

type reportValueJSON struct {
	Value      string  `json:"value"`
	Count      int64   `json:"count"`
	Useful     bool    `json:"useful"`
	ErrorBound float64 `json:"error_bound"`
	Privacy    float64 `json:"privacy"`
}

// printReport prints the per-value guarantees for the frequencies counts
// (one slice per sensitive column); of says which rows they count.
func (o *Options) printReport(d *dataset, counts [][]int64, of string) error {
	out := reportJSON{L: o.L, RelError: o.RelError, TE: o.TE}
	for k, sv := range d.sens {
		rep, err := anonymize.Guarantees(counts[k], o.L, o.RelError, o.TE)
		if err != nil {
			return err
		}
		out.Tf = rep.Tf
		col := reportColumnJSON{Name: sv.name}
		for _, v := range rep.Values {
			col.Values = append(col.Values, reportValueJSON{
				Value: sv.col.Label(int(v.Value)), Count: v.Count, Useful: v.Useful,
				ErrorBound: v.ErrorBound, Privacy: v.Privacy,
			})
		}
		out.Columns = append(out.Columns, col)
	}
	if o.JSON {
		return printJSON(o.Streams.Out, out)
	}
	w := o.Streams.Out
	fmt.Fprintf(w, "# ℓ′ = %d, ε = %g, T_E = %g; frequencies f_s of %s\n", out.L, out.RelError, out.TE, of)
	fmt.Fprintf(w, "# utility (Lemma 4): values with f_s ≥ T_f = 1/√(ℓ′ε²T_E) = %.4g have P(relative error ≥ ε) ≤ T_E (useful = yes)\n", out.Tf)
	fmt.Fprintln(w, "# error_bound: Chebyshev's 1/(ℓ′ε²f_s²) ≥ P(relative error ≥ ε) (Inequality 3)")
	fmt.Fprintln(w, "# privacy: T_P = P(relative error > ε) with f′_s ~ Binomial(ℓ′f_s, 1/ℓ′) (Definition 5)")
	// Probabilities below 1e-12 are rounding residue of 1 − Σ: shown as such.
	prob := func(p float64) string {
		if p < 1e-12 {
			return "<1e-12"
		}
		return strconv.FormatFloat(p, 'g', 4, 64)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "column\tvalue\tcount\tuseful\terror_bound\tprivacy")
	for _, col := range out.Columns {
		for _, v := range col.Values {
			priv := prob(v.Privacy)
			if v.Count == 0 {
				priv = "0" // an absent value is published 0 times: disclosed exactly
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", col.Name, v.Value, v.Count,
				map[bool]string{true: "yes", false: "no"}[v.Useful], prob(v.ErrorBound), priv)
		}
	}
	return tw.Flush()
}

// printJSON writes v as one line of JSON, labels unescaped.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
