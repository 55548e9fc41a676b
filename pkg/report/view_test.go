package report

import (
	"bytes"
	"fmt"
	"math"
	"testing"
)

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{
		1: "1", 32561: "32561", 0.2: "0.2", 28.19930705710013: "28.2", 0.47630: "0.4763",
		1.3862943611198906: "1.386", 1234.56: "1234.6", 0.000123456: "0.0001235", math.NaN(): "–",
	} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestLargeDomains checks that a distribution of many values draws its
// largest maxBars estimates and lists at most maxRows, saying so.
func TestLargeDomains(t *testing.T) {
	for _, K := range []int{maxBars, maxBars + 1, maxRows + 1} {
		v := &view{l2: math.NaN()}
		for g := range K {
			v.labels = append(v.labels, fmt.Sprintf("v%d", g))
			e := float64((g*7919)%K) / float64(K*K) // all distinct
			v.est, v.lo, v.hi, v.obs = append(v.est, e), append(v.lo, e/2), append(v.hi, 2*e), append(v.obs, e)
		}
		s := &Section{}
		if err := s.addView("t", "value", v, 0.95); err != nil {
			t.Fatal(err)
		}
		if len(s.Blocks) != 2 || s.Blocks[0].Chart == nil || s.Blocks[1].Table == nil {
			t.Fatalf("K = %d: blocks %+v, want a chart and a table", K, s.Blocks)
		}
		bars := bytes.Count(s.Blocks[0].Chart.SVG, []byte(">v")) // the category labels
		if want := min(K, maxBars); bars != want {
			t.Errorf("K = %d: the chart labels %d categories, want %d", K, bars, want)
		}
		tab := s.Blocks[1].Table
		if want := min(K, maxRows); len(tab.Rows) != want {
			t.Errorf("K = %d: the table lists %d rows, want %d", K, len(tab.Rows), want)
		}
		if (K > maxRows) != (tab.Note != "") {
			t.Errorf("K = %d: table note %q", K, tab.Note)
		}
		if K > maxBars {
			// The largest estimate comes first.
			big := sortedTop(v.est, 1)[0]
			if tab.Rows[0][0] != v.labels[big] && K > maxRows {
				t.Errorf("K = %d: first row %q, want the largest estimate %q", K, tab.Rows[0][0], v.labels[big])
			}
			if !bytes.Contains(s.Blocks[0].Chart.SVG, []byte(">"+v.labels[big]+"<")) {
				t.Errorf("K = %d: the chart lacks the largest estimate %s", K, v.labels[big])
			}
		}
	}
}
