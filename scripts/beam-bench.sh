#!/usr/bin/env bash
# pramkit-beam on Prism next to the CLI at BENCH_ROWS rows (default 10M)
# for encrypt, perturb, decrypt and anonymize: one run each, wall and CPU
# (user + sys) time and peak RSS. Needs `make build beam` and the inputs
# that `make bench` leaves in out/bench (gen-id-N.csv, bob-N.parquet,
# bench.secret, gen.codebook.json). Scratch files go to $BEAM_BENCH_DIR
# (default out/beam-bench; ~1 GB at 10M rows). Prism holds its shuffle in
# memory: anonymize at 10M rows needs ~7 GB.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${BENCH_ROWS:-10000000}
B=$PWD/bin S=$PWD/out/bench D=${BEAM_BENCH_DIR:-$PWD/out/beam-bench}
cb=$S/gen.codebook.json
for f in "$S/gen-id-$n.csv" "$S/bob-$n.parquet" "$S/bench.secret" "$cb" "$B/pramkit-beam"; do
  [ -e "$f" ] || { echo "beam-bench: $f is missing: run make build beam and BENCH_ROWS=$n make bench first" >&2; exit 2; }
done
mkdir -p "$D" && cd "$D"
# Setup, not timed: Alice's sample as Parquet (split by row group), the
# table in four CSV shards, keys.
[ -f alice-$n.parquet ] || "$B/sample" --secret "$S/bench.secret" -m "$n" --columns education,occupation "$S/gen-id-$n.csv" -o alice-$n.parquet
if [ ! -f shard-$n-3.csv ]; then
  for i in 0 1 2 3; do awk -v i=$i 'NR == 1 { print; next } (NR - 2) % 4 == i' "$S/gen-id-$n.csv" > shard-$n-$i.csv; done
fi
for k in a.prf b.prf noise; do [ -f $k ] || { head -c 32 /dev/urandom > $k; chmod 600 $k; }; done
t() {
  local label=$1; shift
  /usr/bin/time -o time.out -f "%e %U %S %M" "$@" > /dev/null 2> err.log || { cat err.log >&2; exit 1; }
  read -r w u s m < time.out
  printf '%-26s %9d rows %8.2f s wall %8.2f s CPU %6d MB\n' "$label" "$n" "$w" "$(echo "$u + $s" | bc)" $((m / 1024))
}
rm -rf cli beam && mkdir cli beam
t "CLI encrypt (Alice)" "$B/encrypt" --codebook "$cb" --prf-key a.prf --key-out cli/a.key alice-$n.parquet -o cli/a.enc.parquet
t "beam encrypt (Alice)" "$B/pramkit-beam" encrypt --input alice-$n.parquet --output beam/a -- --codebook "$cb" --prf-key a.prf --key-out beam/a.key
"$B/encrypt" --codebook "$cb" --prf-key b.prf --key-out cli/b.key "$S/bob-$n.parquet" -o cli/b.enc.parquet
"$B/pramkit-beam" encrypt --input "$S/bob-$n.parquet" --output beam/b -- --codebook "$cb" --prf-key b.prf --key-out beam/b.key 2> /dev/null
t "CLI perturb" "$B/perturb" --no-ledger --epsilon 1 --noise-key noise cli/a.enc.parquet cli/b.enc.parquet -o cli/rel.parquet
t "beam perturb" "$B/pramkit-beam" perturb --input 'beam/[ab]-*.parquet' --output beam/rel -- --epsilon 1 --noise-key noise --no-ledger
t "CLI decrypt" "$B/decrypt" --key cli/a.key --key cli/b.key cli/rel.parquet -o cli/dec.parquet
t "beam decrypt" "$B/pramkit-beam" decrypt --input 'beam/rel-*.parquet' --output beam/dec -- --key beam/a.key --key beam/b.key
t "CLI anonymize l'=5" "$B/anonymize" --sensitive occupation --l 5 --codebook "$cb" "$S/gen-id-$n.csv" -o cli/anon.parquet
t "beam anonymize l'=5" "$B/pramkit-beam" anonymize --input "shard-$n-*.csv" --output beam/anon -- --sensitive occupation --l 5 --codebook "$cb"
