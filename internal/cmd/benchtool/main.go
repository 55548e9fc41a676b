// Command benchtool supports `make bench`: it generates deterministic
// Adult-like tables and runs a command while measuring its wall time and
// peak resident memory (from the kernel's rusage, so no GNU time needed).
//
//	benchtool gen -n ROWS -o FILE.csv [-codebook FILE.json] [-seed N] [-id]
//	benchtool run -rows N -label NAME [-in FILE] [-out FILE] [-rm FILE]… -- CMD ARGS…
//	benchtool xcore [-rounds N]
//
// Before it starts the clock, run removes the outputs of the previous run:
// every -rm FILE, the -out file and the FILE after a -o or --output in CMD's
// arguments. Replacing a large file makes the filesystem free the old one
// (60–80 ms for a 337 MB CSV, the same on 1 and 2 cores), and no tool, pramkit
// or peer, should be timed for that.
//
// With -id the table starts with an "id" column holding 1..ROWS, a
// near-unique column as census extracts have (and the one that makes an
// in-memory tool hold ~100 bytes per row).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// column is a generated categorical column: labels and their weights,
// shaped like the UCI Adult columns of the same name.
type column struct {
	name    string
	labels  []string
	weights []float64
}

var columns = []column{
	{"sex", []string{"Male", "Female"}, []float64{67, 33}},
	{"race", []string{"White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"}, []float64{85, 10, 3, 1, 1}},
	{"education", []string{"HS-grad", "Some-college", "Bachelors", "Masters", "Assoc-voc", "11th", "Assoc-acdm", "10th", "7th-8th", "Prof-school", "9th", "12th", "Doctorate", "5th-6th", "1st-4th", "Preschool"},
		[]float64{32, 22, 16, 5, 4, 4, 3, 3, 2, 2, 2, 1, 1, 1, 0.5, 0.2}},
	{"marital-status", []string{"Married-civ-spouse", "Never-married", "Divorced", "Separated", "Widowed", "Married-spouse-absent", "Married-AF-spouse"}, []float64{46, 33, 14, 3, 3, 1, 0.1}},
	{"occupation", []string{"Prof-specialty", "Craft-repair", "Exec-managerial", "Adm-clerical", "Sales", "Other-service", "Machine-op-inspct", "?", "Transport-moving", "Handlers-cleaners", "Farming-fishing", "Tech-support", "Protective-serv", "Priv-house-serv", "Armed-Forces"},
		[]float64{12.7, 12.6, 12.5, 11.6, 11.2, 10.1, 6.1, 5.7, 4.9, 4.2, 3.1, 2.8, 2, 0.5, 0.03}},
	{"income", []string{"<=50K", ">50K"}, []float64{76, 24}},
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchtool gen|run|xcore …")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = gen(os.Args[2:])
	case "run":
		err = run(os.Args[2:])
	case "xcore":
		err = xcore(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtool:", err)
		os.Exit(1)
	}
}

func gen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	n := fs.Int64("n", 1_000_000, "rows")
	out := fs.String("o", "", "output CSV")
	cb := fs.String("codebook", "", "also write the codebook here")
	seed := fs.Uint64("seed", 1, "generator seed")
	withID := fs.Bool("id", false, "start every row with an id column (1..n)")
	values := fs.Int("values", 0, "instead, a table id,s,x with s uniform over V values v0…v{V−1} and x over 7 (anonymize at high cardinality)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(*seed, 0x9e3779b97f4a7c15))
	if *values > 0 {
		return genUniform(r, *n, *values, *out, *cb)
	}
	cum := make([][]float64, len(columns))
	for j, c := range columns {
		var total float64
		for _, w := range c.weights {
			total += w
		}
		acc := 0.0
		for _, w := range c.weights {
			acc += w / total
			cum[j] = append(cum[j], acc)
		}
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if *withID {
		w.WriteString("id,")
	}
	for j, c := range columns {
		if j > 0 {
			w.WriteByte(',')
		}
		w.WriteString(c.name)
	}
	w.WriteByte('\n')
	var num []byte
	for i := int64(0); i < *n; i++ {
		if *withID {
			num = strconv.AppendInt(num[:0], i+1, 10)
			w.Write(num)
			w.WriteByte(',')
		}
		for j, c := range columns {
			if j > 0 {
				w.WriteByte(',')
			}
			u := r.Float64()
			k := 0
			for k < len(cum[j])-1 && u >= cum[j][k] {
				k++
			}
			w.WriteString(c.labels[k])
		}
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if *cb == "" {
		return nil
	}
	type col struct {
		Name       string   `json:"name"`
		Categories []string `json:"categories"`
		Missing    string   `json:"missing,omitempty"`
	}
	var book struct {
		Columns []col `json:"columns"`
	}
	for _, c := range columns {
		cc := col{Name: c.name, Categories: c.labels}
		if c.name == "occupation" {
			cc.Missing = "?"
		}
		book.Columns = append(book.Columns, cc)
	}
	b, _ := json.MarshalIndent(book, "", "  ")
	return os.WriteFile(*cb, append(b, '\n'), 0o644)
}

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	rows := fs.Int64("rows", 0, "rows processed, for rows/s")
	label := fs.String("label", "", "what is measured")
	in := fs.String("in", "", "stdin file")
	out := fs.String("out", "/dev/null", "stdout file")
	header := fs.Bool("header", false, "print the table header first")
	var rm []string
	fs.Func("rm", "output of CMD to remove before the clock starts (repeatable)", func(s string) error {
		rm = append(rm, s)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *header {
		fmt.Printf("%-44s %12s %9s %12s %10s\n", "step", "rows", "seconds", "rows/s", "peak RSS")
	}
	if fs.NArg() == 0 {
		return nil
	}
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	for i, a := range cmd.Args[:len(cmd.Args)-1] {
		if a == "-o" || a == "--output" {
			rm = append(rm, cmd.Args[i+1])
		}
	}
	if *out != "/dev/null" {
		rm = append(rm, *out)
	}
	for _, f := range rm {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	cmd.Stderr = os.Stderr
	if *in != "" {
		f, err := os.Open(*in)
		if err != nil {
			return err
		}
		defer f.Close()
		cmd.Stdin = f
	}
	of, err := os.Create(*out)
	if err != nil {
		return err
	}
	defer of.Close()
	cmd.Stdout = of
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", *label, err)
	}
	secs := time.Since(start).Seconds()
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	fmt.Printf("%-44s %12s %9.3f %12s %7.0f MB\n", *label, strconv.FormatInt(*rows, 10), secs,
		strconv.FormatFloat(float64(*rows)/secs, 'f', 0, 64), float64(ru.Maxrss)/1024)
	return nil
}

// genUniform writes n rows id,s,x: s uniform over the v labels v0…v{v−1},
// x over x0…x6, and their codebook to cb (when given), as anonymize's
// memory at high cardinality is measured (README, anonymize's "Memory and
// speed").
func genUniform(r *rand.Rand, n int64, v int, out, cb string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("id,s,x\n")
	var b []byte
	for i := int64(0); i < n; i++ {
		b = strconv.AppendInt(b[:0], i+1, 10)
		b = append(b, ",v"...)
		b = strconv.AppendInt(b, int64(r.IntN(v)), 10)
		b = append(b, ",x"...)
		b = strconv.AppendInt(b, int64(r.IntN(7)), 10)
		b = append(b, '\n')
		w.Write(b)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if cb == "" {
		return nil
	}
	cats := func(prefix string, k int) []string {
		c := make([]string, k)
		for i := range c {
			c[i] = prefix + strconv.Itoa(i)
		}
		return c
	}
	type col struct {
		Name       string   `json:"name"`
		Categories []string `json:"categories"`
	}
	book := struct {
		Columns []col `json:"columns"`
	}{[]col{{"s", cats("v", v)}, {"x", cats("x", 7)}}}
	bs, err := json.Marshal(book)
	if err != nil {
		return err
	}
	return os.WriteFile(cb, append(bs, '\n'), 0o644)
}
