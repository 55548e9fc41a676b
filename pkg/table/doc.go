// Package table reads and writes the tables that flow between pramkit tools:
// CSV (RFC 4180 with a header row), Parquet and the Arrow IPC stream format.
//
// Readers stream Arrow record batches of bounded size, so memory does not
// grow with the number of rows. The input format is detected from the
// content (Parquet magic, Arrow IPC, else CSV); the output format comes from
// the output file's extension or an explicit choice. pramkit's metadata
// (Meta) travels in the schema key-value metadata of Parquet and Arrow, and
// beside a CSV file in a sidecar <file>.meta.json (or, on a CSV stream with no
// file, in a first line "#pramkit {…}").
//
// Writers never leave a partial file: output goes to a temporary file in the
// destination folder and is renamed over the destination only by Commit.
//
// Readers use every core where the format allows: a CSV input is cut into
// chunks of whole records that workers parse in parallel, a Parquet file's
// next batches are decoded while the caller works on the current one; Next
// always returns batches in input order, at most BatchSize rows each, with
// a fixed number of chunks in flight. The batch size (and with it the CSV
// chunk size) is DefaultBatchSize unless ReadOptions.BatchSize or, for
// tests, $PRAMKIT_BATCH_ROWS (BatchRowsEnv) says otherwise: a stage's
// output must not depend on it, nor on GOMAXPROCS.
//
// Categorical columns can travel as codes: ReadOptions.DictColumns reads
// Parquet string columns as Arrow dictionaries and Coder maps any column to
// codebook codes (a dictionary once per batch); Labels and CodesBatch build
// output columns from codes, which Parquet writes as dictionary pages
// straight from the labels.
//
// One file per format, one factory for readers (Open) and one for writers
// (Create), as miller's pkg/input and pkg/output do.
package table
