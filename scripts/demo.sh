#!/usr/bin/env bash
# make demo: the pramkit toolchain on UCI Adult, step by step.
set -euo pipefail
cd "$(dirname "$0")/.."
B=bin
D=out/demo
rm -rf "$D"; mkdir -p "$D"
bash scripts/fetch-adult.sh
CB=testdata/adult/codebook.json
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

echo "== Plan: how many rows to sample for epsilon = 1 (education x income, K = 16 x 2 = 32)"
step "$B/sample" --plan --epsilon 1 --codebook "$CB" --columns education,income testdata/adult/adult.csv

echo
echo "== Two curators share a secret and sample the same people"
step "$B/sample" --new-secret "$D/shared.secret"
# m* depends only on n, epsilon and the JOINT domain size K = 32, so both
# curators compute the same m without talking to each other.
step "$B/sample" --secret "$D/shared.secret" -m optimal --epsilon 1 --domain-size 32 \
  --columns education testdata/adult/adult.csv -o "$D/alice.sample.csv"
step "$B/sample" --secret "$D/shared.secret" -m optimal --epsilon 1 --domain-size 32 \
  --columns income testdata/adult/adult.csv -o "$D/bob.sample.csv"
echo; echo "first rows of each curator's sample (same people, row by row):"
paste -d, <(head -6 "$D/alice.sample.csv") <(head -6 "$D/bob.sample.csv")
echo; echo "metadata: $(cat "$D/alice.sample.csv.meta.json")"

echo
echo "== Each curator encrypts its column with a one-time pad and keeps the pads as its key"
step "$B/encrypt" --codebook "$CB" --key-out "$D/alice.key" "$D/alice.sample.csv" -o "$D/alice.enc.csv"
step "$B/encrypt" --codebook "$CB" --key-out "$D/bob.key" "$D/bob.sample.csv" -o "$D/bob.enc.parquet"
ls -l "$D/alice.key" "$D/bob.key"
echo; echo "what the server receives from Alice (indices plus pads mod k: uniform, no label):"
head -6 "$D/alice.enc.csv"

echo
echo "== The untrusted server joins the ciphertexts and perturbs each joint row (gamma-diagonal PRAM, epsilon = 1)"
step "$B/perturb" --epsilon 1 "$D/alice.enc.csv" "$D/bob.enc.parquet" -o "$D/release.parquet"

echo
echo "== The researcher removes the pads with both keys"
step "$B/decrypt" --key "$D/bob.key" --key "$D/alice.key" "$D/release.parquet" -o "$D/sanitized.csv"
echo; echo "first rows of the sanitized sample, next to the true sample:"
# awk reads everything (no head mid-pipe: SIGPIPE would stop the script under pipefail).
paste -d'|' "$D/sanitized.csv" <(paste -d, "$D/alice.sample.csv" "$D/bob.sample.csv") \
  | awk -F'|' 'NR<=9{printf "  %-24s %s\n", $1, $2}'
meta=$(cat "$D/sanitized.csv.meta.json")
item() { printf '%s' "$meta" | grep -o "\"$1\":\"[^\"]*\"" | cut -d'"' -f4; }
paste -d'|' <(paste -d, "$D/alice.sample.csv" "$D/bob.sample.csv") "$D/sanitized.csv" \
  | awk -F'|' -v g="$(item gamma)" -v K="$(item K)" \
    'NR>1{n++; if($1==$2)k++} END{printf "kept unchanged: %d of %d rows (expected gamma/q = %.3f of them, q = gamma + K - 1)\n", k, n, g/(g+K-1)}'
echo "metadata for estimate: n=$(item n) m=$(item m) K=$(item K) gamma=$(item gamma) epsilon=$(item epsilon) releases=$(item releases)"
