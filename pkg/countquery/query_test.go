package countquery

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCountParseQuery(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Cond
		err  string
	}{
		{"sex=Female", []Cond{{"sex", "Female"}}, ""},
		{"sex=Female,occupation=Sales", []Cond{{"sex", "Female"}, {"occupation", "Sales"}}, ""},
		{" sex = Female , age=25-34 ", []Cond{{"sex", "Female"}, {"age", "25-34"}}, ""},
		{"income=>50K", []Cond{{"income", ">50K"}}, ""},
		{`a=x\,y,b=p\=q`, []Cond{{"a", "x,y"}, {"b", "p=q"}}, ""},
		{"a=b=c", []Cond{{"a", "b=c"}}, ""},
		{`a\=b=c`, []Cond{{"a=b", "c"}}, ""},
		{"a=", []Cond{{"a", ""}}, ""},
		{"", nil, "empty query"},
		{"sex", nil, `"sex" has no '='`},
		{"a=1,,b=2", nil, "empty condition"},
		{"a=1,", nil, "empty condition"},
		{"=x", nil, "no column name"},
		{"a=1,a=2", nil, `column "a" appears twice`},
		{`a=1\`, nil, "a backslash ends the query"},
	} {
		got, err := Parse(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.err == "" && !slices.Equal(got, tc.want):
			t.Errorf("%q: %v, want %v", tc.in, got, tc.want)
		}
	}
}

// FuzzCountParseQuery: parsing never panics, and a parsed query written
// back with escapes parses to the same conditions.
func FuzzCountParseQuery(f *testing.F) {
	for _, s := range []string{"sex=Female,occupation=Sales", `a=x\,y`, "a=b=c", ",", "=", `\`, "a=1,a=2", " x = y "} {
		f.Add(s)
	}
	esc := strings.NewReplacer(`\`, `\\`, ",", `\,`, "=", `\=`)
	f.Fuzz(func(t *testing.T, s string) {
		conds, err := Parse(s)
		if err != nil {
			return
		}
		var parts []string
		for _, c := range conds {
			parts = append(parts, esc.Replace(c.Col)+"="+esc.Replace(c.Value))
		}
		again, err := Parse(strings.Join(parts, ","))
		if err != nil || !slices.Equal(again, conds) {
			t.Errorf("%q → %v → %q → %v, %v", s, conds, strings.Join(parts, ","), again, err)
		}
	})
}

func TestCountReadQueries(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		body  string
		texts []string
		err   string
	}{
		{"query\nsex=Female,occupation=Sales\noccupation=?\n", []string{"sex=Female,occupation=Sales", "occupation=?"}, ""},
		{"query\n\"sex=Female,occupation=Sales\"\n", []string{"sex=Female,occupation=Sales"}, ""},
		{"\ufeffquery\nsex=Male\n", []string{"sex=Male"}, ""},
		{"id,query\n1,\"a=1,b=2\"\n2,c=3\n", []string{"a=1,b=2", "c=3"}, ""},
		{"query,estimate,iterations\n\"a=1,b=2\",3.5,1\n", []string{"a=1,b=2"}, ""},
		{"", nil, "is empty"},
		{"query\n", nil, "has no queries"},
		{"q\na=1\n", nil, `the header row has no column "query"`},
		{"query\na=1\nsex\n", nil, `line 3: "sex" has no '='`},
		{"id,query\n1\n", nil, "line 2 has 1 fields"},
	} {
		qs, err := ReadQueries(write("q.csv", tc.body), nil)
		var texts []string
		for _, q := range qs {
			texts = append(texts, q.Text)
		}
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one containing %q", tc.body, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.body, err)
		case tc.err == "" && !slices.Equal(texts, tc.texts):
			t.Errorf("%q: %q, want %q", tc.body, texts, tc.texts)
		}
	}
}
