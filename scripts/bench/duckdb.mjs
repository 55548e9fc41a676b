// DuckDB peer for `make bench` (scripts/bench.sh): runs one named query
// doing the same work as one pramkit stage, on the same files, and exits.
// DuckDB is never a dependency of the tools: bench.sh installs
// @duckdb/node-api into out/bench/node_modules and passes that folder in
// DUCKDB_MODULES.
//
//   node scripts/bench/duckdb.mjs QUERY CODEBOOK FILE...
//
// Categorical values become codebook codes (0-based, codebook order), as
// in pramkit; the codebook is the one `benchtool gen -codebook` writes.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.env.DUCKDB_MODULES;
if (!modules) {
  console.error('duckdb.mjs: set DUCKDB_MODULES to the node_modules folder holding @duckdb/node-api');
  process.exit(2);
}
const { DuckDBInstance } = await import(pathToFileURL(join(modules, '@duckdb/node-api/lib/index.js')).href);

const [name, codebookPath, ...files] = process.argv.slice(2);
const book = JSON.parse(readFileSync(codebookPath, 'utf8'));
const cats = Object.fromEntries(book.columns.map((c) => [c.name, c.categories]));
const q = (s) => `'${String(s).replaceAll("'", "''")}'`;
const list = (col) => `[${cats[col].map(q).join(', ')}]`;
const k = (col) => cats[col].length;
const id = (col) => `"${col}"`;
// code(c): the label's 0-based position in the codebook.
const code = (col) => `(list_position(${list(col)}, ${id(col)}) - 1)`;
// label(e): the codebook label of code e.
const label = (col, e) => `${list(col)}[(${e}) + 1]`;
const csv = (f) => `read_csv(${q(f)}, header = true, all_varchar = true)`;
const pq = (f) => `read_parquet(${q(f)})`;

// One-time pad encryption of two columns: each code plus a uniform pad
// mod k; the pads are the key, written next to the ciphertext (pramkit
// writes its key file too).
function encrypt(src, [a, b], out, key) {
  return [
    `CREATE TEMP TABLE t AS SELECT ${code(a)} AS ca, ${code(b)} AS cb,
       CAST(floor(random() * ${k(a)}) AS INTEGER) AS pa,
       CAST(floor(random() * ${k(b)}) AS INTEGER) AS pb FROM ${src}`,
    `COPY (SELECT (ca + pa) % ${k(a)} AS ${id(a)}, (cb + pb) % ${k(b)} AS ${id(b)} FROM t) TO ${q(out)} (FORMAT parquet)`,
    `COPY (SELECT pa, pb FROM t) TO ${q(key)} (FORMAT parquet)`,
  ];
}

// PRAM on the joint code of the two curators' ciphertexts: keep it with
// probability keep, else add a uniform offset in [1, K) mod K (the
// γ-diagonal matrix of SPEC §2, with an illustrative keep = e/(e + K - 1);
// the work does not depend on its value).
function perturb(alice, bob, out) {
  const [ka, kb] = [k('education') * k('occupation'), k('income') * k('sex')];
  const K = ka * kb;
  const keep = Math.E / (Math.E + K - 1);
  return [`COPY (
    WITH j AS (
      SELECT ((a.education * ${k('occupation')} + a.occupation) * ${kb}
              + b.income * ${k('sex')} + b.sex) AS c,
             CASE WHEN random() < ${keep} THEN 0 ELSE 1 + CAST(floor(random() * ${K - 1}) AS INTEGER) END AS o
      FROM ${pq(alice)} a POSITIONAL JOIN ${pq(bob)} b),
    y AS (SELECT (c + o) % ${K} AS c FROM j)
    SELECT c // ${kb * k('occupation')} AS education, (c // ${kb}) % ${k('occupation')} AS occupation,
           (c // ${k('sex')}) % ${k('income')} AS income, c % ${k('sex')} AS sex FROM y
  ) TO ${q(out)} (FORMAT parquet)`];
}

// Decryption: positional join of the release with both keys, subtract the
// pads mod k, map codes to labels.
function decrypt(release, akey, bkey, out, format) {
  const sub = (col, pad) => `((r.${id(col)} - ${pad} + ${k(col)}) % ${k(col)})`;
  return [`COPY (
    SELECT ${label('education', sub('education', 'ka.pa'))} AS education,
           ${label('occupation', sub('occupation', 'ka.pb'))} AS occupation,
           ${label('income', sub('income', 'kb.pa'))} AS income,
           ${label('sex', sub('sex', 'kb.pb'))} AS sex
    FROM ${pq(release)} r POSITIONAL JOIN ${pq(akey)} ka POSITIONAL JOIN ${pq(bkey)} kb
  ) TO ${q(out)} (FORMAT ${format})`];
}

// estimate's reading work: the count of each joint value of 4 columns.
function count(src, out) {
  return [`COPY (
    SELECT education, occupation, income, sex, count(*) AS n FROM ${src}
    GROUP BY ALL ORDER BY ALL
  ) TO ${q(out)} (FORMAT csv, HEADER)`];
}

// Bitflip (L = 17): one-hot of sex, income (one bit each: the second
// label) and occupation (15 bits), each bit flipped with probability lie.
function bitflip(src, out, lie) {
  const bits = [['sex', cats.sex.slice(1)], ['income', cats.income.slice(1)], ['occupation', cats.occupation]]
    .flatMap(([col, vals]) => vals.map((v) => `CAST((${id(col)} = ${q(v)}) != (random() < ${lie}) AS INTEGER) AS ${id(`${col}=${v}`)}`));
  return [`COPY (SELECT ${bits.join(',\n ')} FROM ${src}) TO ${q(out)} (FORMAT parquet)`];
}

const queries = {
  // nothing: node + @duckdb/node-api + an in-memory database, the baseline
  // that every DuckDB row's peak RSS includes
  'none': () => [],
  // SELECT * FROM read_csv(in) USING SAMPLE reservoir(5000 ROWS) → CSV
  'sample-5000': ([i, o]) => [`COPY (SELECT * FROM ${csv(i)} USING SAMPLE reservoir(5000 ROWS)) TO ${q(o)} (FORMAT csv, HEADER)`],
  // education, occupation: code + random pad mod k → Parquet; pads → key Parquet
  'encrypt-csv': ([i, o, key]) => encrypt(csv(i), ['education', 'occupation'], o, key),
  // income, sex from Parquet, same work
  'encrypt-parquet': ([i, o, key]) => encrypt(pq(i), ['income', 'sex'], o, key),
  // positional join of the two ciphertexts + PRAM offset on the joint code → Parquet
  'perturb': ([a, b, o]) => perturb(a, b, o),
  // positional join with the pads, codes → labels → CSV
  'decrypt-csv': ([r, ka, kb, o]) => decrypt(r, ka, kb, o, 'csv, HEADER'),
  // same → Parquet
  'decrypt-parquet': ([r, ka, kb, o]) => decrypt(r, ka, kb, o, 'parquet'),
  // GROUP BY the 4 columns of a CSV
  'count-csv': ([i, o]) => count(csv(i), o),
  // GROUP BY the 4 columns of a Parquet file
  'count-parquet': ([i, o]) => count(pq(i), o),
  // one-hot of sex, income, occupation + flips with probability 0.2 → Parquet
  'bitflip': ([i, o]) => bitflip(csv(i), o, 0.2),
};

if (!queries[name]) {
  console.error(`duckdb.mjs: unknown query ${JSON.stringify(name)}; one of ${Object.keys(queries).join(', ')}`);
  process.exit(2);
}
const stmts = queries[name](files);
if (process.env.DUCKDB_PRINT) {
  console.log(stmts.join(';\n') + ';');
  process.exit(0);
}
// DUCKDB_THREADS=N limits DuckDB to N threads (bench.sh measures its own
// 1-thread time with it, to show what a second core gives here).
const db = await DuckDBInstance.create(':memory:', process.env.DUCKDB_THREADS ? { threads: process.env.DUCKDB_THREADS } : {});
const conn = await db.connect();
// The queries' own time, without node's start-up and DuckDB's loading,
// for bench.sh's second ratio.
const start = performance.now();
for (const s of stmts) await conn.run(s);
if (process.env.DUCKDB_TIME_FILE) {
  writeFileSync(process.env.DUCKDB_TIME_FILE, `${((performance.now() - start) / 1000).toFixed(3)}\n`);
}
