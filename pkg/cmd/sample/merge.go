package sample

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/sample"
	"github.com/pramkit/pramkit/pkg/table"
)

// shard is one merged sample as read: its file, what its metadata says,
// and the largest priority it kept.
type shard struct {
	name   string
	sample release.Sample
	rows   int64
	max    sample.Priority
}

// runMerge merges samples of disjoint shards, written with --id
// --with-priority under one secret, into the sample of their union: the
// bottom-M of the union is the bottom-M of the union of the shards'
// samples, as long as every row of it was kept by its shard (checked
// below), so the output is what one run on the union writes.
func runMerge(o *Options) error {
	f := o.cmd.Flags()
	switch {
	case len(o.Inputs) == 0:
		return cli.Usagef("--merge needs the shards' samples as input files")
	case o.Secret == "":
		return cli.Usagef("--merge needs --secret FILE, the secret the shards were sampled under (it recomputes the fingerprint)")
	case o.NewSecret != "":
		return cli.Usagef("--merge takes --secret, not --new-secret: shards merge only under the secret they were sampled with")
	case o.Size == "" || o.Size == "optimal" || f.Changed("fraction"):
		return cli.Usagef("--merge needs -m M, the merged sample's size")
	case o.ID != "" || o.KeepID || len(o.Columns) > 0:
		return cli.Usagef("--merge takes no --id, --keep-id or --columns: the shards' samples fix the columns")
	}
	sz, err := o.sizer()
	if err != nil {
		return err
	}
	secret, err := o.secret()
	if err != nil {
		return err
	}
	want := sample.SecretID(secret)
	bottom, err := sample.NewBottomM(int(min(sz.m, 1<<40)))
	if err != nil {
		return err
	}
	defer bottom.Close()
	var (
		first  table.Reader
		names  []string
		meta   table.Meta
		shards []shard
		n      int64
	)
	for _, path := range o.Inputs {
		r, err := o.Streams.Open(path)
		if err != nil {
			return err
		}
		defer r.Close()
		sh, cols, err := checkShard(r, want)
		if err != nil {
			return err
		}
		if first == nil {
			first, names, meta = r, cols, r.Meta().Clone()
		} else if err := sameShards(first, r, names, cols); err != nil {
			return err
		}
		if r.Meta()[release.KeyInsecureSeed] != "" {
			meta[release.KeyInsecureSeed] = r.Meta()[release.KeyInsecureSeed]
		}
		if err := offerShard(r, &sh, len(cols), bottom); err != nil {
			return err
		}
		n += sh.sample.N
		shards = append(shards, sh)
	}
	if sz.m > n {
		return fmt.Errorf("cannot sample m = %d rows: the shards' tables have n = %d rows together; choose -m ≤ %d", sz.m, n, n)
	}
	if bottom.Seen() < sz.m {
		return fmt.Errorf("the shards' samples hold %d rows, fewer than -m %d; re-sample the shards with -m ≥ %d each", bottom.Seen(), sz.m, sz.m)
	}
	// The sample's rows are read twice: for its largest priority (and any
	// repeated one) before anything is written, then to write them.
	each := func(emit func(sample.Item) error) error {
		err := bottom.Sample(emit)
		var dup *sample.DuplicateError
		if errors.As(err, &dup) {
			a, b := dup.Kept.Row, shardRowOf(shards, dup.Row)
			return fmt.Errorf("%s row %s and %s have the same priority %s: one id is in two shards (or one shard was given twice); shards must be disjoint", a[len(a)-2], a[len(a)-1], b, dup.Kept.Priority)
		}
		return err
	}
	var last sample.Priority
	if err := each(func(it sample.Item) error { last = it.Priority; return nil }); err != nil {
		return err
	}
	for _, sh := range shards {
		// A shard that kept m_i < n_i rows dropped only rows of priority
		// above its largest kept one; if that is below the merged sample's
		// largest, one of its dropped rows could belong to the merge.
		if sh.sample.M < sh.sample.N && sh.max.Less(last) {
			return fmt.Errorf("%s kept m = %d of its n = %d rows, too few for a merged sample of %d: rows it dropped could belong to it; re-sample the shard with -m %d (or more)", sh.name, sh.sample.M, sh.sample.N, sz.m, sz.m)
		}
	}
	o.Seed.Mark(meta)
	if o.insecureSecret {
		meta[release.KeyInsecureSeed] = "true"
	}
	return o.write(meta, names, first.Format(), secret, n, sz.m, each)
}

// checkShard checks that r is a sample written with --id --with-priority
// under the secret of id want, and returns it with its data columns (all
// but the priority column).
func checkShard(r table.Reader, want string) (shard, []string, error) {
	meta := r.Meta()
	sh := shard{name: r.Name()}
	if meta[release.KeyStage] != release.StageSample {
		return sh, nil, fmt.Errorf("%s is not a sample (stage %q); --merge reads the outputs of sample --id --with-priority", r.Name(), meta[release.KeyStage])
	}
	if err := sh.sample.Decode(meta, r.Name()); err != nil {
		return sh, nil, err
	}
	p, ok, err := release.DecodePriorities(meta, r.Name())
	if err != nil {
		return sh, nil, err
	}
	if !ok {
		return sh, nil, fmt.Errorf("%s has no priority column: it was sampled without --with-priority; re-sample the shard with --id --with-priority", r.Name())
	}
	if meta[release.KeySampleID] != release.SampleIDColumn {
		return sh, nil, fmt.Errorf("%s was sampled by row position: positions of different shards collide, so such samples cannot merge; re-sample the shards with --id COLUMN --with-priority", r.Name())
	}
	if p.SecretID != want {
		return sh, nil, fmt.Errorf("%s was sampled under another secret (secret-id %s, --secret has %s); give the secret the shards were sampled with, or re-sample the shard under it", r.Name(), p.SecretID, want)
	}
	cols := columnNames(r.Schema())
	if len(cols) < 2 || cols[len(cols)-1] != p.Column {
		return sh, nil, fmt.Errorf("%s: the last column is not the priority column %q its metadata names; re-create it with sample --with-priority", r.Name(), p.Column)
	}
	return sh, cols[:len(cols)-1], nil
}

// sameShards checks that r has first's columns and the same metadata but
// for what differs between shards (n, m, fingerprint, the writer's
// version and the insecure-seed mark, carried if any shard has it).
func sameShards(first, r table.Reader, names, cols []string) error {
	if !slices.Equal(names, cols) {
		return fmt.Errorf("%s has columns %s but %s has %s; merged samples need the same columns in the same order", r.Name(), strings.Join(cols, ", "), first.Name(), strings.Join(names, ", "))
	}
	strip := func(m table.Meta) table.Meta {
		m = m.Clone()
		for _, k := range []string{release.KeyN, release.KeyM, release.KeyFingerprint, release.KeyVersion, release.KeyInsecureSeed} {
			delete(m, k)
		}
		return m
	}
	a, b := strip(first.Meta()), strip(r.Meta())
	if maps.Equal(a, b) {
		return nil
	}
	keys := slices.Sorted(maps.Keys(a))
	for k := range b {
		keys = append(keys, k)
	}
	for _, k := range keys {
		if a[k] != b[k] {
			return fmt.Errorf("%s: metadata item %q is %q but %q in %s; merged samples must come from the same sampling of tables of one kind", r.Name(), k, b[k], a[k], first.Name())
		}
	}
	return nil
}

// offerShard offers every row of r to bottom with the priority of its last
// column; each kept row carries its file and row number after its ncols
// data columns, to name it in messages.
func offerShard(r table.Reader, sh *shard, ncols int, bottom *sample.BottomM) error {
	var row int64
	err := table.EachBatch(r, func(rec arrow.RecordBatch, _ int64) error {
		cols := make([]table.Values, ncols+1)
		for j := range cols {
			cols[j] = table.ValuesOf(rec.Column(j))
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			row++
			p, err := sample.ParsePriority(cols[ncols].String(i))
			if err != nil {
				return &table.DataError{File: r.Name(), Row: row, Column: release.PriorityColumn, Err: fmt.Errorf("%w; the column must be as sample --with-priority wrote it", err)}
			}
			if row == 1 || sh.max.Less(p) {
				sh.max = p
			}
			if err := bottom.Offer(p, func() []string {
				out := make([]string, ncols, ncols+2)
				for j := 0; j < ncols; j++ {
					out[j] = strings.Clone(cols[j].String(i))
				}
				return append(out, r.Name(), strconv.FormatInt(row, 10))
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	sh.rows = row
	if row != sh.sample.M {
		return fmt.Errorf("%s has %d rows but its metadata says m = %d; re-create it with sample --with-priority", r.Name(), row, sh.sample.M)
	}
	return nil
}

// shardRowOf names the row with 1-based index idx among all rows offered.
func shardRowOf(shards []shard, idx int64) string {
	for _, sh := range shards {
		if idx <= sh.rows {
			return fmt.Sprintf("%s row %d", sh.name, idx)
		}
		idx -= sh.rows
	}
	return fmt.Sprintf("row %d", idx)
}
