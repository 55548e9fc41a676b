package codebook

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestLabelIndexFindsEveryLabelAndNothingElse: LabelIndex gives each
// label's index — categories, the missing token, a numeric column's
// bucket labels and its missing token — and nothing for other strings
// (a number inside a bucket is no label), for small columns (a map) and
// a large one (the codebook's own table).
func TestLabelIndexFindsEveryLabelAndNothingElse(t *testing.T) {
	many := make([]string, 5000)
	for i := range many {
		many[i] = fmt.Sprintf("v%d", i)
	}
	cb, err := Parse([]byte(`{"columns": [
		{"name": "sex", "categories": ["Male", "Female", "?"], "missing": "?"},
		{"name": "age", "cuts": [18, 65], "missing": "NA"},
		{"name": "big", "categories": ` + quoteJSON(many) + `}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cb.Columns {
		for i, l := range c.Labels() {
			if got, ok := c.LabelIndex(l); !ok || got != i {
				t.Errorf("%s: LabelIndex(%q) = %d, %v; want %d", c.Name(), l, got, ok, i)
			}
		}
		for _, s := range []string{"", "male", "30", "v5000", "NAN"} {
			if got, ok := c.LabelIndex(s); ok {
				t.Errorf("%s: LabelIndex(%q) = %d, a label", c.Name(), s, got)
			}
		}
	}
}

// quoteJSON is ss as a JSON list.
func quoteJSON(ss []string) string {
	b, _ := json.Marshal(ss)
	return string(b)
}
