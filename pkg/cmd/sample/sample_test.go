package sample

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/pramkit/pramkit/pkg/cli"
)

// TestFlagsFillOptions checks flag parsing separately from the run, with a
// stub run function (cli/cli's pattern).
func TestFlagsFillOptions(t *testing.T) {
	cases := []struct {
		args []string
		want Options
	}{
		{[]string{"-m", "10", "--secret", "s", "in.csv"}, Options{Size: "10", Secret: "s", Input: "in.csv", Inputs: []string{"in.csv"}}},
		{[]string{"--merge", "-m", "5", "--secret", "s", "--with-priority", "a.csv", "b.csv"},
			Options{Merge: true, WithPriority: true, Size: "5", Secret: "s", Input: "a.csv", Inputs: []string{"a.csv", "b.csv"}}},
		{[]string{"-m", "optimal", "--epsilon", "0.5", "--domain-size", "32", "--columns", "a,b"},
			Options{Size: "optimal", Epsilon: 0.5, DomainSize: "32", Columns: []string{"a", "b"}}},
		{[]string{"--fraction", "0.1", "--id", "pid", "--keep-id", "-o", "x.parquet"},
			Options{Fraction: 0.1, ID: "pid", KeepID: true, Output: cli.Output{Path: "x.parquet"}}},
		{[]string{"--plan", "--epsilon", "1", "-n", "100", "--codebook", "cb.json"},
			Options{Plan: true, Epsilon: 1, N: 100, Codebook: "cb.json"}},
	}
	for _, tc := range cases {
		var got *Options
		s := &cli.Streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
		cmd := NewCmd(s, func(o *Options) error { got = o; return nil })
		if code := cli.Run(cmd, tc.args, s); code != 0 {
			t.Fatalf("%v: exit %d", tc.args, code)
		}
		got.Streams, got.cmd = nil, nil
		if !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("%v:\n got %+v\nwant %+v", tc.args, *got, tc.want)
		}
	}
}

func TestUsageErrorsExitWithCode2(t *testing.T) {
	for _, args := range [][]string{
		{"--no-such-flag"},
		{"--merge", "-m", "5", "a.csv"},
		{"--merge", "--secret", "s", "--fraction", "0.5", "a.csv"},
		{"--merge", "--secret", "s", "-m", "5", "--id", "pid", "a.csv"},
		{"-m", "many", "x.csv"},
		{"--fraction", "2", "x.csv"},
		{"--plan"},
	} {
		var errOut bytes.Buffer
		s := &cli.Streams{Out: &bytes.Buffer{}, Err: &errOut}
		if code := cli.Run(NewCmd(s, nil), args, s); code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want %d (stderr %q)", args, code, cli.ExitUsage, errOut.String())
		}
	}
}
