// Package adulttest finds and loads the UCI Adult data for tests.
//
// It looks where scripts/fetch-adult.sh looks: $ADULT_DIR, then the repo's
// testdata/adult/, then ../shared/adult beside the repo. Tests that need the
// data skip when it is absent on a developer machine and fail under CI
// (CI=true), where ../shared/adult is always present.
package adulttest

import (
	"bufio"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Columns are Adult's attribute names in file order (adult.names), with the
// class attribute called income.
var Columns = []string{
	"age", "workclass", "fnlwgt", "education", "education-num",
	"marital-status", "occupation", "relationship", "race", "sex",
	"capital-gain", "capital-loss", "hours-per-week", "native-country", "income",
}

// RepoRoot returns the folder holding go.mod, searching up from the working
// directory (go test runs each package in its own folder).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("adulttest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Dir returns the folder that holds adult.data, or skips (fails under CI).
func Dir(t testing.TB) string {
	t.Helper()
	root := RepoRoot(t)
	var candidates []string
	if d := os.Getenv("ADULT_DIR"); d != "" {
		candidates = append(candidates, d)
	}
	candidates = append(candidates,
		filepath.Join(root, "testdata", "adult"),
		filepath.Join(root, "..", "shared", "adult"))
	for _, d := range candidates {
		if _, err := os.Stat(filepath.Join(d, "adult.data")); err == nil {
			return d
		}
	}
	msg := "adulttest: adult.data not found in $ADULT_DIR, testdata/adult or ../shared/adult; run scripts/fetch-adult.sh"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	recordSkip(t)
	t.Skip(msg)
	return ""
}

// SkipLogEnv names the file to which each test skipped for want of Adult
// appends its name, one line per test. `make test` sets it and counts the
// lines, so the skips, buried in go test's output, end in one visible line.
const SkipLogEnv = "PRAMKIT_ADULT_SKIPS"

// recordSkip appends t's name to the file named by $PRAMKIT_ADULT_SKIPS.
// Test binaries run in parallel; one short O_APPEND write per line keeps
// their lines whole.
func recordSkip(t testing.TB) {
	path := os.Getenv(SkipLogEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.WriteString(t.Name() + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Logf("adulttest: recording the skip in $%s: %v", SkipLogEnv, err)
	}
}

// Load returns the rows of adult.data (file "data") or adult.test (file
// "test"), values trimmed, the test file's trailing "." on income removed,
// blank and comment lines skipped. Each row has len(Columns) values.
func Load(t testing.TB, file string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(Dir(t), "adult."+file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "|") {
			continue
		}
		fields := strings.Split(line, ",")
		if len(fields) != len(Columns) {
			t.Fatalf("adulttest: adult.%s: %d fields in %q", file, len(fields), line)
		}
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		fields[len(fields)-1] = strings.TrimSuffix(fields[len(fields)-1], ".")
		rows = append(rows, fields)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// WriteCSV writes rows under a header of Columns to a new file in a
// temporary folder and returns its path.
func WriteCSV(t testing.TB, rows [][]string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "adult.csv")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := csv.NewWriter(f)
	_ = w.Write(Columns)
	_ = w.WriteAll(rows)
	if err := w.Error(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
