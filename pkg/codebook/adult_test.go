package codebook

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/adulttest"
)

const adultCodebook = "../../testdata/adult/codebook.json"

// adultNames reads the attribute lines of adult.names ("name: v1, v2, ….")
// and its first value line (">50K, <=50K."), the class, as income.
func adultNames(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(adulttest.Dir(t), "adult.names"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	attrs := make(map[string][]string)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "|") {
			continue
		}
		line = strings.TrimSuffix(line, ".")
		name, values, ok := strings.Cut(line, ": ")
		if !ok {
			name, values = "income", line // the class line comes first
		}
		if _, dup := attrs[name]; dup {
			t.Fatalf("adult.names: %q twice", name)
		}
		for v := range strings.SplitSeq(values, ",") {
			attrs[name] = append(attrs[name], strings.TrimSpace(v))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(attrs) != len(adulttest.Columns) {
		t.Fatalf("adult.names: %d attributes, want %d", len(attrs), len(adulttest.Columns))
	}
	return attrs
}

func TestAdultCodebookFollowsAdultNames(t *testing.T) {
	cb, err := Load(adultCodebook)
	if err != nil {
		t.Fatal(err)
	}
	attrs := adultNames(t)
	// Every attribute but fnlwgt, in file order.
	want := slices.DeleteFunc(slices.Clone(adulttest.Columns), func(n string) bool { return n == "fnlwgt" })
	if got := cb.Names(); !slices.Equal(got, want) {
		t.Fatalf("columns %q, want %q", got, want)
	}
	// The columns with "?" in the data (verified by TestAdultEncodesEveryRow).
	withMissing := map[string]bool{"workclass": true, "occupation": true, "native-country": true}
	// Continuous attributes: the buckets README.md documents.
	buckets := map[string][]string{
		"age":            {"<25", "25-34", "35-44", "45-54", "55-64", "65+"},
		"capital-gain":   {"0", "1-4999", "5000+"},
		"capital-loss":   {"0", "1-1999", "2000+"},
		"hours-per-week": {"<35", "35-40", "41-50", "51+"},
	}
	for i := range cb.Columns {
		c := &cb.Columns[i]
		values := attrs[c.Name()]
		_, hasMissing := c.MissingIndex()
		if hasMissing != withMissing[c.Name()] {
			t.Errorf("%s: has a missing category: %v", c.Name(), hasMissing)
		}
		switch {
		case c.Name() == "education-num":
			// Continuous in adult.names, but 1..16, one per education level.
			if k := c.K(); k != len(attrs["education"]) || c.Label(0) != "1" || c.Label(15) != "16" {
				t.Errorf("education-num: k = %d, labels %q; want 1..16", k, c.Labels())
			}
		case slices.Equal(values, []string{"continuous"}):
			if !c.IsNumeric() || !slices.Equal(c.Labels(), buckets[c.Name()]) {
				t.Errorf("%s: numeric %v, labels %q; want buckets %q", c.Name(), c.IsNumeric(), c.Labels(), buckets[c.Name()])
			}
		default:
			wantK := len(values)
			if hasMissing {
				wantK++
			}
			if c.K() != wantK {
				t.Errorf("%s: k = %d, want %d (adult.names lists %d values)", c.Name(), c.K(), wantK, len(values))
			}
			if got := c.Labels()[:len(values)]; !slices.Equal(got, values) {
				t.Errorf("%s: categories %q, want adult.names order %q", c.Name(), got, values)
			}
		}
	}
	if !slices.Equal(attrs["fnlwgt"], []string{"continuous"}) {
		t.Error("adult.names: fnlwgt is no longer continuous")
	}
}

func TestAdultEncodesEveryRow(t *testing.T) {
	cb, err := Load(adultCodebook)
	if err != nil {
		t.Fatal(err)
	}
	encs, err := cb.Encoders(Policy{}) // unknown values and "?" outside the three columns fail
	if err != nil {
		t.Fatal(err)
	}
	// cols[j] is the row position of codebook column j.
	cols := make([]int, len(encs))
	for j, e := range encs {
		cols[j] = slices.Index(adulttest.Columns, e.Column().Name())
	}
	counts := make([][]int, len(encs))
	for j, e := range encs {
		counts[j] = make([]int, e.Column().K())
	}
	rowsPerFile := map[string]int{"data": 32561, "test": 16281}
	for _, file := range []string{"data", "test"} {
		rows := adulttest.Load(t, file)
		if len(rows) != rowsPerFile[file] {
			t.Errorf("adult.%s: %d rows, want %d", file, len(rows), rowsPerFile[file])
		}
		for r, row := range rows {
			for j, e := range encs {
				i, err := e.Index(row[cols[j]])
				if err != nil {
					t.Fatalf("adult.%s row %d: %v", file, r+1, err)
				}
				if file == "data" {
					counts[j][i]++
				}
			}
		}
	}
	// Counts in adult.data computed independently with awk -F', ' on the raw
	// file (for example $1 < 25 for age "<25", $14 == "?" for native-country).
	want := map[string][]int{
		"age":            {5570, 8479, 8151, 5853, 3172, 1336},
		"capital-gain":   {29849, 1064, 1648},
		"capital-loss":   {31042, 1194, 325},
		"hours-per-week": {5583, 17397, 5938, 3643},
		"income":         {7841, 24720},
	}
	missing := map[string]int{"workclass": 1836, "occupation": 1843, "native-country": 583}
	for j, e := range encs {
		c := e.Column()
		if w, ok := want[c.Name()]; ok && !slices.Equal(counts[j], w) {
			t.Errorf("%s: counts %v, want %v", c.Name(), counts[j], w)
		}
		if mi, ok := c.MissingIndex(); ok && counts[j][mi] != missing[c.Name()] {
			t.Errorf("%s: %d missing values, want %d", c.Name(), counts[j][mi], missing[c.Name()])
		}
	}
}

func TestAdultCodebookFileIsCanonical(t *testing.T) {
	data, err := os.ReadFile(adultCodebook)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := cb.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), data) {
		t.Errorf("codebook.json is not in Write's canonical form; Write gives:\n%s", buf.Bytes())
	}
	// README.md quotes the hash so that parties can compare it by eye.
	readme, err := os.ReadFile("../../testdata/adult/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if h := cb.Hash(); !bytes.Contains(readme, []byte(h)) {
		t.Errorf("testdata/adult/README.md does not quote the codebook's hash %s", h)
	}
}

func BenchmarkEncodeAdultRow(b *testing.B) {
	cb, err := Load(adultCodebook)
	if err != nil {
		b.Fatal(err)
	}
	encs, err := cb.Encoders(Policy{})
	if err != nil {
		b.Fatal(err)
	}
	// The first row of adult.data, without fnlwgt.
	row := []string{"39", "State-gov", "Bachelors", "13", "Never-married", "Adm-clerical",
		"Not-in-family", "White", "Male", "2174", "0", "40", "United-States", "<=50K"}
	b.ReportAllocs()
	for b.Loop() {
		for j, e := range encs {
			v, err := e.Index(row[j])
			if err != nil {
				b.Fatal(err)
			}
			benchSink += v
		}
	}
}
