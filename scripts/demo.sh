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
