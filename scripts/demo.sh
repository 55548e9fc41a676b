#!/usr/bin/env bash
# make demo: the pramkit toolchain on UCI Adult, step by step.
#
# PRAMKIT_BIN (default bin), DEMO_OUT (default out/demo) and ADULT_CSV
# (default: scripts/fetch-adult.sh, then testdata/adult/adult.csv) let the
# tests run it elsewhere (internal/readme).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${PRAMKIT_BIN:-bin}
D=${DEMO_OUT:-out/demo}
rm -rf "$D"; mkdir -p "$D"
if [[ -n ${ADULT_CSV:-} ]]; then
  T=$ADULT_CSV
else
  bash scripts/fetch-adult.sh
  T=testdata/adult/adult.csv
fi
CB=testdata/adult/codebook.json
# Commands in bold on a terminal only: a log file gets no escape codes.
if [[ -t 1 ]]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
step() { printf '\n%s$ %s%s\n' "$bold" "$*" "$plain"; "$@"; }

echo "== Plan: how many rows to sample for epsilon = 1 (education x income, K = 16 x 2 = 32)"
step "$B/sample" --plan --epsilon 1 --codebook "$CB" --columns education,income "$T"

echo
echo "== Two curators share a secret and sample the same people"
step "$B/sample" --new-secret "$D/shared.secret"
# m* depends only on n, epsilon and the JOINT domain size K = 32, so both
# curators compute the same m without talking to each other.
step "$B/sample" --secret "$D/shared.secret" -m optimal --epsilon 1 --domain-size 32 \
  --columns education "$T" -o "$D/alice.sample.csv"
step "$B/sample" --secret "$D/shared.secret" -m optimal --epsilon 1 --domain-size 32 \
  --columns income "$T" -o "$D/bob.sample.csv"
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
# The demo keeps its release ledger with its files (by default it is
# ~/.local/state/pramkit/releases.jsonl).
step "$B/perturb" --ledger "$D/releases.jsonl" --epsilon 1 "$D/alice.enc.csv" "$D/bob.enc.parquet" -o "$D/release.parquet"
echo; echo "the release ledger records it:"
cat "$D/releases.jsonl"
echo; echo "releasing the same sample again is refused (its epsilon would compose):"
step "$B/perturb" --ledger "$D/releases.jsonl" --epsilon 1 "$D/alice.enc.csv" "$D/bob.enc.parquet" -o "$D/again.parquet" || true

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

echo
echo "== The researcher estimates the joint distribution (exact maximum likelihood, the default)"
# --truth: the curators' original tables (here both columns come from
# adult.csv), joined by position, only to show the error; a real researcher
# does not have them.
step "$B/estimate" --truth "$T" "$D/sanitized.csv" -o "$D/joint.csv"
show() { # estimate's table: labels, estimate, observed, count, ci_low, ci_high, truth
  awk -F, -v labels="$2" 'NR==1{for(i=1;i<=labels;i++) printf "  %-13s", $i; printf "%9s %9s %9s   %s\n", "estimate", "observed", "truth", "95% interval"; next}
    {for(i=1;i<=labels;i++) printf "  %-13s", $i; printf "%9.4f %9.4f %9.4f   [%.4f, %.4f]\n", $(labels+1), $(labels+2), $(labels+6), $(labels+4), $(labels+5)}' "$1"
}
echo "estimated vs true shares of the full table (n rows), from the m released rows:"
show "$D/joint.csv" 2
for col in education income; do
  echo
  step "$B/estimate" --marginal "$col" --truth "$T" "$D/sanitized.csv" -o "$D/marginal-$col.csv"
  show "$D/marginal-$col.csv" 1
done

echo
echo "== Privacy, the Theorem III.4 bound, and the error of each estimator against the true table"
step "$B/estimate" --json --truth "$T" "$D/sanitized.csv"
printf '\n  %-10s %8s %8s %6s %4s %8s %10s %16s\n' method epsilon gamma m K bound l2_error l2_error_income
for method in inverse projected mle; do
  js=$("$B/estimate" --json --method "$method" --marginal income --truth "$T" "$D/sanitized.csv" 2>/dev/null)
  num() { printf '%s' "$js" | grep -o "\"$1\":[0-9.e+-]*" | cut -d: -f2; }
  printf '  %-10s %8.4f %8.3f %6s %4s %8.4f %10.4f %16.4f\n' "$method" "$(num epsilon)" "$(num gamma)" "$(num m)" "$(num K)" \
    "$(num bound)" "$(num l2_error)" "$(num l2_error_marginal)"
done
echo "(bound: Theorem III.4, E‖T̂ − t‖₂ ≤ (c√K + 1)/√m with c = 1 + K/(γ − 1), for the inverse."
echo " Averaged over 20 releases, projected and mle have the smaller joint error on Adult; one release may differ.)"

echo
echo "== Local mechanisms: each person randomizes their own row (no server, no keys)"
echo "-- bitflip (K-randomization) on sex and income: every bit flips with probability q = 0.2"
step "$B/perturb" --mechanism bitflip --lie 0.2 --columns sex,income --codebook "$CB" "$T" -o "$D/adult.bitflip.csv"
echo "first released rows (0/1 bits; nothing else of the table is released):"
awk 'NR<=6{print "  " $0}' "$D/adult.bitflip.csv"
csvtable() { # estimate's CSV table, aligned, numbers to 6 significant digits
  awk -F, -v OFS=, 'NR>1{for(i=1;i<=NF;i++) if($i ~ /^-?[0-9]*\.[0-9]+(e[-+]?[0-9]+)?$/) $i=sprintf("%.6g",$i)} {print}' "$1" \
    | column -s, -t | awk '{print "  " $0}'
}
step "$B/estimate" --truth "$T" "$D/adult.bitflip.csv" -o "$D/bitflip.estimate.csv"
echo "per-bit frequencies (unclipped), 95% intervals, each column's distribution (projected) and the true shares:"
csvtable "$D/bitflip.estimate.csv"
step "$B/estimate" --json "$D/adult.bitflip.csv"
echo "anonymity A_p of Adult's records under this release (exact for L = 2 bits):"
step "$B/estimate" --anonymity --truth "$T" "$D/adult.bitflip.csv" -o "$D/bitflip.anonymity.csv"
csvtable "$D/bitflip.anonymity.csv"

echo
echo "-- DDPS on occupation: two reports per person, pi_s = 0.1, uniform noise masses"
step "$B/perturb" --mechanism ddps --column occupation --pi-s 0.1 --codebook "$CB" "$T" -o "$D/occupation.ddps.csv"
echo "first released rows ((none) = the report names no value):"
awk 'NR<=6{print "  " $0}' "$D/occupation.ddps.csv"
step "$B/estimate" --truth "$T" "$D/occupation.ddps.csv" -o "$D/ddps.estimate.csv"
echo "estimated owners of each occupation ± sd (difference of the rounds, Eq. 41), unclipped, and the true counts:"
csvtable "$D/ddps.estimate.csv"
step "$B/estimate" --json "$D/occupation.ddps.csv"
l2() { "$B/estimate" --json --truth "$T" "$@" "$D/occupation.ddps.csv" | grep -o '"l2_error":[0-9.e+-]*' | cut -d: -f2; }
echo "the round-two estimator (--round-two) on the same release has the smaller variance;"
printf 'l2 error of the counts: difference of the rounds %.0f, round two alone %.0f\n' "$(l2)" "$(l2 --round-two)"

echo
echo "== One steward publishes the whole table: anonymize (mechanism A', l'-diverted privacy), occupation sensitive"
step "$B/anonymize" --check --sensitive occupation --l 5 --codebook "$CB" "$T"
echo "utility and privacy of each occupation's count for a relative error of 0.3 (first rows):"
"$B/anonymize" --report --rel-error 0.3 --sensitive occupation --l 5 --codebook "$CB" "$T" | awk 'NR<=9{print "  " $0}'
step "$B/anonymize" --sensitive occupation --l 5 --codebook "$CB" "$T" -o "$D/adult.l5.csv"
echo "first published rows (occupation drawn from each row's decoy group of 5; rows shuffled; no group or id published):"
awk -F, 'NR<=6{printf "  %s\n", $0}' "$D/adult.l5.csv"
echo "metadata: $(cat "$D/adult.l5.csv.meta.json" | grep -o '"\(mechanism\|l\|N\|dropped\)":"[^"]*"' | tr '\n' ' ')"

echo
echo "-- count queries on the published table, with the true counts of the original (--truth):"
{
  echo query
  echo occupation=Sales
  echo '"sex=Female,occupation=Adm-clerical"'
  echo '"sex=Male,income=>50K,occupation=Exec-managerial"'
  echo '"education=Bachelors,occupation=Prof-specialty"'
  echo '"age=25-34,occupation=Craft-repair"'
  echo '"race=Black,sex=Female,occupation=Other-service"'
  echo '"native-country=Mexico,occupation=Farming-fishing"'
  echo '"relationship=Wife,occupation=Tech-support"'
  echo '"education=Doctorate,occupation=Prof-specialty"'
  echo '"race=Amer-Indian-Eskimo,occupation=Sales"'
} > "$D/queries.csv"
step "$B/estimate" --codebook "$CB" --queries "$D/queries.csv" --truth "$T" "$D/adult.l5.csv"
echo "(counts of a few people get errors of the order of the count itself: the paper's small-count privacy."
echo " Large counts: over many random queries of selectivity 2-5 % the mean relative error is about 26 %;"
echo " a pair as associated as sex=Female and Adm-clerical is pulled towards independence, because Anatomy's"
echo " group creation pairs values by bucket size, not at random. --decoy paper, the paper's a01 rule (Eq. 12): about 28 %.)"
echo
echo "-- the baselines at the same l' = 5: Anatomy (true values, linked to groups) and global randomization"
step "$B/anonymize" --mechanism anatomy --sensitive occupation --l 5 --codebook "$CB" "$T" -o "$D/adult.anatomy.csv" --groups "$D/adult.anatomy.groups.csv"
step "$B/anonymize" --mechanism global --sensitive occupation --l 5 --codebook "$CB" "$T" -o "$D/adult.global.csv"
printf '\n  %-52s %6s %10s %10s %10s\n' query true "A'" anatomy global
"$B/estimate" --codebook "$CB" --queries "$D/queries.csv" --truth "$T" "$D/adult.l5.csv" | tail -n +2 > "$D/a.txt"
"$B/estimate" --codebook "$CB" --queries "$D/queries.csv" "$D/adult.anatomy.csv" | tail -n +2 > "$D/b.txt"
"$B/estimate" --codebook "$CB" --queries "$D/queries.csv" "$D/adult.global.csv" | tail -n +2 > "$D/c.txt"
paste -d'|' "$D/a.txt" "$D/b.txt" "$D/c.txt" | awk -F'|' '{
    na = split($1, a, ","); nb = split($2, b, ","); nc = split($3, c, ",")
    q = $1; sub(/,[^,]*,[^,]*,[^,]*,[^,]*$/, "", q); gsub(/"/, "", q)
    printf "  %-52s %6s %10s %10s %10s\n", q, a[na-1], a[na-3], b[nb-1], c[nc-1]
  }'

echo
echo "== A report for the committee: one self-contained HTML page about the releases above"
step "$B/report" --truth "$T" --ledger "$D/releases.jsonl" --queries "$D/queries.csv" --codebook "$CB" \
  "$D/sanitized.csv" "$D/adult.l5.csv" "$D/adult.bitflip.csv" "$D/occupation.ddps.csv" -o "$D/report.html"
echo "The report is $D/report.html ($(wc -c < "$D/report.html") bytes): open it in a browser; it loads nothing from the network and prints to PDF."
