package stage

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// Row identity. The CLI's encrypt, perturb and decrypt key every pad and
// offset by the row's index in the sample (its position in sample's
// output, which sample orders by PRF priority), and join the curators'
// files by that position. A PCollection has no order, so pramkit-beam
// carries the index with the rows: a file's rows are rows
// [first_row, first_row + rows) of the sample — the CLI's own part
// metadata (release.Part; a whole file holds [0, m)) — and a Parquet row
// group's rows start FirstRow rows into the file (fileSplit). Each row's
// index is therefore known wherever it is read, with no extra column, and
// the pads and offsets computed there are the CLI's for the same row.
//
// Joining by row index: the rows are cut into output shards of ShardRows
// consecutive indices; readers emit blocks of codes keyed by shard
// (piece, at most one shard each), a GroupByKey brings every table's
// blocks of a shard together (a CoGroupByKey over the tables, written as
// one GroupByKey of blocks tagged with their table, since the number of
// curators is known only at run time), and the shard's rows are checked
// to be present exactly once in every table before the stage's function
// runs on them and writes the shard. Shards are keyed blocks rather than
// single rows so that the shuffle moves a few large elements, not m small
// ones; a worker holds one shard (ShardRows × columns × 4 bytes) at a time.
//
// Each shard is written as PREFIX-SSSSS-of-NNNNN.EXT holding its rows in
// order, with the metadata the CLI writes for that part of the sample
// (first_row and rows unless one shard holds all m rows): the CLI's
// perturb, decrypt and estimate read the shards as parts, and so does
// pramkit-beam. A shard is written through a temporary file renamed on
// commit, so a retried bundle rewrites the same bytes.

func init() {
	beam.RegisterType(reflect.TypeOf((*piece)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*layout)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*readCodesFn)(nil)).Elem())
	register.DoFn3x1[context.Context, fileSplit, func(int64, piece), error](&readCodesFn{})
	register.Emitter2[int64, piece]()
	register.Iter1[piece]()
}

// DefaultShardRows is the rows of an output shard unless --shard-rows
// (anonymize sorts a shard in one worker's memory).
const DefaultShardRows = 1 << 18

// pieceRows bounds the rows of one piece (the shuffle's element).
const pieceRows = 1 << 16

// piece is a block of consecutive rows of one table: rows Row0… of the
// sample, N of them, their codes column after column as 4-byte
// little-endian words (a flat encoding: Beam moves it as bytes).
type piece struct {
	Table int
	Row0  int64
	N     int
	Data  []byte
}

// newPiece packs rows [lo, hi) of the column-major block cols.
func newPiece(t int, row0 int64, cols [][]uint32, lo, hi int) piece {
	n := hi - lo
	b := make([]byte, 4*n*len(cols))
	for j, c := range cols {
		o := 4 * n * j
		for i, v := range c[lo:hi] {
			binary.LittleEndian.PutUint32(b[o+4*i:], v)
		}
	}
	return piece{Table: t, Row0: row0, N: n, Data: b}
}

// into unpacks the piece into dst[j][off:off+N].
func (p piece) into(dst [][]uint32, off int) error {
	if len(p.Data) != 4*p.N*len(dst) {
		return fmt.Errorf("a block of %d rows has %d bytes for %d columns", p.N, len(p.Data), len(dst))
	}
	for j, c := range dst {
		b := p.Data[4*p.N*j:]
		for i := range p.N {
			c[off+i] = binary.LittleEndian.Uint32(b[4*i:])
		}
	}
	return nil
}

// layout is how a stage's rows are cut into shards: the sample's M rows,
// of which rows [First, End) are processed, in shards of ShardRows; Tables
// name the joined tables in messages and Widths are their columns.
type layout struct {
	M, First, End int64
	ShardRows     int64
	Tables        []string
	Widths        []int
}

// Shards is the number of output shards.
func (l layout) Shards() int64 { return (l.End - l.First + l.ShardRows - 1) / l.ShardRows }

// shard is the rows of shard s.
func (l layout) shard(s int64) release.Part {
	first := l.First + s*l.ShardRows
	return release.Part{First: first, Rows: min(l.ShardRows, l.End-first)}
}

// path is shard s's file.
func (l layout) path(prefix, ext string, s int64) string {
	return fmt.Sprintf("%s-%05d-of-%05d%s", prefix, s, l.Shards(), ext)
}

// emitRows emits rows [0, n) of cols, rows row0… of the sample, as pieces
// of table t that each lie in one shard; rows outside [First, End) are
// not needed (a key file holding more rows than the release).
func (l layout) emitRows(t int, row0 int64, cols [][]uint32, n int, emit func(int64, piece)) {
	for lo := 0; lo < n; {
		row := row0 + int64(lo)
		if row < l.First || row >= l.End {
			lo++
			continue
		}
		s := (row - l.First) / l.ShardRows
		end := l.shard(s).End()
		hi := min(n, lo+pieceRows, int(end-row0))
		emit(s, newPiece(t, row, cols, lo, hi))
		lo = hi
	}
}

// assemble gathers shard s's pieces into one column-major block per table
// (blocks[t][j][i] is row First+i of column j of table t), checking that
// every row of the shard came exactly once from every table.
func (l layout) assemble(s int64, iter func(*piece) bool) ([][][]uint32, release.Part, error) {
	p := l.shard(s)
	blocks := make([][][]uint32, len(l.Widths))
	for t, w := range l.Widths {
		blocks[t] = table.Block(w, int(p.Rows))
	}
	type span struct{ a, b int64 }
	spans := make([][]span, len(l.Widths))
	var pc piece
	for iter(&pc) {
		if pc.Table < 0 || pc.Table >= len(blocks) || pc.Row0 < p.First || pc.Row0+int64(pc.N) > p.End() {
			return nil, p, fmt.Errorf("shard %d (%s) got rows [%d, %d) of table %d: the pipeline is inconsistent", s, p, pc.Row0, pc.Row0+int64(pc.N), pc.Table)
		}
		if err := pc.into(blocks[pc.Table], int(pc.Row0-p.First)); err != nil {
			return nil, p, err
		}
		spans[pc.Table] = append(spans[pc.Table], span{pc.Row0, pc.Row0 + int64(pc.N)})
	}
	for t, ss := range spans {
		slices.SortFunc(ss, func(a, b span) int { return int(a.a - b.a) })
		next := p.First
		for _, sp := range ss {
			switch {
			case sp.a < next:
				return nil, p, fmt.Errorf("row %d of the sample is in two input shards of %s: give each part of the sample once", sp.a, l.Tables[t])
			case sp.a > next:
				return nil, p, fmt.Errorf("rows [%d, %d) of the sample are in no input shard of %s: a shard is missing or truncated; give every part", next, sp.a, l.Tables[t])
			}
			next = sp.b
		}
		if next < p.End() {
			return nil, p, fmt.Errorf("rows [%d, %d) of the sample are in no input shard of %s: a shard is missing or truncated; give every part", next, p.End(), l.Tables[t])
		}
	}
	return blocks, p, nil
}

// writeShard writes shard p of a stage's output to path: meta (the
// driver's, stamped) with p's part items, and the batches that fill
// produces.
func writeShard(path string, schema *arrow.Schema, meta map[string]string, p release.Part, m int64, fill func(write func(arrow.RecordBatch) error) error) error {
	md := table.Meta(maps.Clone(meta))
	p.Encode(md, m)
	w, err := createTable(path, schema, md, table.WriteOptions{})
	if err != nil {
		return err
	}
	defer w.Abort()
	write := func(rec arrow.RecordBatch) error {
		err := w.Write(rec)
		rec.Release()
		return err
	}
	if err := fill(write); err != nil {
		return err
	}
	return w.Commit()
}

// columnsOf is rows [lo, hi) of a column-major block.
func columnsOf(cols [][]uint32, lo, hi int) [][]uint32 {
	out := make([][]uint32, len(cols))
	for j, c := range cols {
		out[j] = c[lo:hi]
	}
	return out
}

// withoutPart is meta without the part items, which differ between the
// shards of one table.
func withoutPart(meta map[string]string) map[string]string {
	m := maps.Clone(meta)
	delete(m, release.KeyFirstRow)
	delete(m, release.KeyPartRows)
	return m
}

// readCodesFn reads the code columns of the joined tables' files (encrypted
// tables, releases, one-time-pad keys) and emits them as pieces keyed by
// shard. Files maps each file to its table; Names, Ks and Secret are each
// table's columns, their alphabets and whether they are key material;
// Meta is what every file of a table carries besides its part.
type readCodesFn struct {
	Files  map[string]int
	Names  [][]string
	Ks     [][]uint32
	Secret []bool
	Meta   []map[string]string
	L      layout
}

func (f *readCodesFn) ProcessElement(ctx context.Context, sp fileSplit, emit func(int64, piece)) error {
	t, ok := f.Files[sp.Path]
	if !ok {
		return fmt.Errorf("%s: not an input of this run", sp.Path)
	}
	r, err := sp.open()
	if err != nil {
		return err
	}
	defer r.Close()
	if !maps.Equal(withoutPart(r.Meta()), f.Meta[t]) {
		return fmt.Errorf("%s: its metadata differs from the other shards of %s (besides first_row and rows): every shard must be a part of the same file", sp, f.L.Tables[t])
	}
	part, err := release.ReadPart(r.Meta(), sp.Path, f.L.M)
	if err != nil {
		return err
	}
	cur, err := table.NewCursor(r, f.Names[t], f.Ks[t], f.Secret[t])
	if err != nil {
		return err
	}
	block := table.Block(len(f.Names[t]), pieceRows)
	row := part.First + sp.FirstRow
	for {
		n, err := cur.Read(block)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		if row+int64(n) > part.End() {
			return fmt.Errorf("%s has more rows than its metadata's %s: the file was edited; re-create it", sp.Path, part)
		}
		f.L.emitRows(t, row, block, n, emit)
		row += int64(n)
	}
	if sp.Group < 0 && cur.Rows() != part.Rows {
		return fmt.Errorf("%s ended after %d rows but its metadata says it holds %s: the file is truncated; re-create it", sp.Path, cur.Rows(), part)
	}
	return nil
}

// inputFile is one input shard as the driver sees it: its metadata and the
// rows of the sample it holds.
type inputFile struct {
	path   string
	meta   table.Meta
	schema *arrow.Schema
	part   release.Part
	rows   int64 // -1 when unknown without reading (CSV)
	format table.Format
}

// openMeta opens every file for its metadata (a Parquet footer, a CSV
// sidecar; no rows are read).
func openMeta(files []string) ([]inputFile, error) {
	out := make([]inputFile, len(files))
	for i, p := range files {
		r, err := openTable(p, table.ReadOptions{})
		if err != nil {
			return nil, err
		}
		out[i] = inputFile{path: p, meta: r.Meta().Clone(), schema: r.Schema(), rows: r.NumRows(), format: r.Format()}
		r.Close()
	}
	return out, nil
}

// readParts reads each file's part of a sample of m rows and returns the
// rows the files cover together, which must be one contiguous range
// without overlap.
func readParts(files []inputFile, m int64, what string) (release.Part, error) {
	parts := make([]release.Part, len(files))
	names := make([]string, len(files))
	for i := range files {
		p, err := release.ReadPart(files[i].meta, files[i].path, m)
		if err != nil {
			return release.Part{}, err
		}
		if files[i].rows >= 0 && files[i].rows != p.Rows {
			return release.Part{}, fmt.Errorf("%s has %d rows but its metadata says it holds %s of the m = %d: the file is truncated or was edited; re-create it", files[i].path, files[i].rows, p, m)
		}
		files[i].part, parts[i], names[i] = p, p, files[i].path
	}
	if err := release.CheckParts(parts, names, m, true); err != nil {
		return release.Part{}, err
	}
	first, end, sum := parts[0].First, parts[0].End(), int64(0)
	for _, p := range parts {
		first, end, sum = min(first, p.First), max(end, p.End()), sum+p.Rows
	}
	if sum != end-first {
		return release.Part{}, fmt.Errorf("the shards of %s leave a gap in rows [%d, %d) of the sample: a part is missing; give every part", what, first, end)
	}
	return release.Part{First: first, Rows: end - first}, nil
}

// outputExt is the extension of output shards in the format of the input.
func outputExt(f table.Format) string {
	switch f {
	case table.Parquet:
		return ".parquet"
	case table.Arrow:
		return ".arrow"
	}
	return ".csv"
}

// checkShardOutput refuses an output prefix whose shards are among the
// inputs. (Shards of an earlier run of another shard count are left: read
// together with this run's they overlap, which readers refuse.)
func checkShardOutput(prefix string, inputs []string) error {
	if prefix == "" {
		return fmt.Errorf("--output PREFIX is required")
	}
	old, _ := listFiles(context.Background(), globEscape(prefix)+"-*-of-*")
	for _, o := range old {
		for _, in := range inputs {
			if sameFile(o, in) {
				return fmt.Errorf("--output %s would write over the input %s: choose another prefix", prefix, in)
			}
		}
	}
	return nil
}

// removeShards removes the shards (and CSV sidecars) of a failed run.
func removeShards(l layout, prefix, ext string) {
	for s := range l.Shards() {
		p := l.path(prefix, ext, s)
		removeFile(context.Background(), p)
		if ext == ".csv" {
			removeFile(context.Background(), p+".meta.json")
		}
	}
}

// globEscape quotes the glob metacharacters of a literal path.
func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

// shardList is the shards written, for the driver's message.
func shardList(l layout, prefix, ext string) string {
	if l.Shards() == 1 {
		return l.path(prefix, ext, 0)
	}
	return fmt.Sprintf("%s … %s (%d shards)", l.path(prefix, ext, 0), l.path(prefix, ext, l.Shards()-1), l.Shards())
}

// arrowBatch is a record batch written to a shard.
type arrowBatch = arrow.RecordBatch

// writeInt32 writes rows [0, n) of cols as int32 columns in batches of
// table.DefaultBatchSize rows, as the tools write their outputs.
func writeInt32(schema *arrow.Schema, cols [][]uint32, n int, write func(arrowBatch) error) error {
	for lo := 0; lo < n; lo += table.DefaultBatchSize {
		hi := min(n, lo+table.DefaultBatchSize)
		if err := write(table.Int32Batch(schema, columnsOf(cols, lo, hi), hi-lo)); err != nil {
			return err
		}
	}
	return nil
}

// wholeRelease is the metadata of a release given as shards: meta (the
// first shard's) itself, or for shards that are parts (first_row, rows:
// pramkit-beam decrypt's), without the part items once the parts are
// checked to tile all m rows — their counts are then the whole release's.
func wholeRelease(files []string, meta table.Meta) (table.Meta, error) {
	if _, ok := meta[release.KeyFirstRow]; !ok {
		return meta, nil
	}
	smp, err := release.ReadSample(meta, files[0], "estimate reads decrypt's output")
	if err != nil {
		return nil, err
	}
	ins, err := openMeta(files)
	if err != nil {
		return nil, err
	}
	parts := make([]release.Part, len(ins))
	for i, in := range ins {
		if parts[i], err = release.ReadPart(in.meta, in.path, smp.M); err != nil {
			return nil, err
		}
	}
	if err := release.CheckParts(parts, files, smp.M, false); err != nil {
		return nil, err
	}
	return table.Meta(withoutPart(meta)), nil
}
