package estimate

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/pkg/cli"
)

// One pass of estimate over a 100k-row diverted release answering 144
// count queries (72 with one sensitive value, 72 with two): the scan and
// the Bayesian updates, CSV in, the answers to a file. Allocations do not
// grow with the rows (about 4,400 per run for 100k rows).
func BenchmarkCountQueries100k(b *testing.B) {
	syn := newCountSynth(b, 100_000)
	pub := filepath.Join(syn.dir, "pub.csv")
	countRun(b, true, "--sensitive", "s,u", "--l", "3", "--codebook", syn.cb, "--seed", "1", "--insecure-seed", syn.csv, "-o", pub)
	var q strings.Builder
	q.WriteString("query\n")
	for a := range 4 {
		for bb := range 3 {
			for s := range 6 {
				q.WriteString("\"a=a" + string(rune('0'+a)) + ",b=b" + string(rune('0'+bb)) + ",s=s" + string(rune('0'+s)) + "\"\n")
				q.WriteString("\"a=a" + string(rune('0'+a)) + ",s=s" + string(rune('0'+s)) + ",u=u" + string(rune('0'+bb)) + "\"\n")
			}
		}
	}
	qf := filepath.Join(syn.dir, "q.csv")
	if err := os.WriteFile(qf, []byte(q.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(syn.dir, "answers.csv")
	for b.Loop() {
		s := &cli.Streams{Out: io.Discard, Err: io.Discard}
		if code := cli.Run(NewCmd(s, nil), []string{pub, "--queries", qf, "-o", out}, s); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
	b.ReportMetric(100_000*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
