#!/usr/bin/env bash
# fetch-adult.sh — put the UCI Adult data into testdata/adult/ and derive CSV.
#
# Copies adult.data, adult.test and adult.names into <repo>/testdata/adult/
# from the first source that has all three with the checksums listed in
# testdata/adult/SHA256SUMS:
#   1. $ADULT_DIR, if set;
#   2. ../shared/adult beside the repository;
#   3. the UCI archive, $ADULT_URL (default below), with curl or wget.
# Files already present and verified are left alone. It then writes
#   adult.csv       from adult.data: header row, ", " separators turned into
#                   ",", blank lines dropped (32561 rows);
#   adult-test.csv  from adult.test: the same, without the "|1x3 Cross
#                   validator" line and the "." after income (16281 rows).
# Running it again changes nothing. It prints one line per action and stops
# with an error naming every source tried if none works. The files are
# git-ignored: never commit them.
set -euo pipefail

readonly FILES=(adult.data adult.test adult.names)
readonly HEADER='age,workclass,fnlwgt,education,education-num,marital-status,occupation,relationship,race,sex,capital-gain,capital-loss,hours-per-week,native-country,income'
readonly DEFAULT_URL='https://archive.ics.uci.edu/ml/machine-learning-databases/adult/'

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/testdata/adult"
sums="$dest/SHA256SUMS"
tmp=""      # temporary file or folder to remove on exit
download="" # temporary download folder to remove on exit
cleanup() { rm -rf -- ${tmp:+"$tmp"} ${download:+"$download"}; }
trap cleanup EXIT

say() { printf 'fetch-adult: %s\n' "$*"; }
die() { printf 'fetch-adult: error: %s\n' "$*" >&2; exit 1; }

[[ -f "$sums" ]] || die "$sums is missing; it is part of the repository (git checkout it)"
command -v sha256sum >/dev/null || die "sha256sum not found (install coreutils)"

# verified DIR: all three files are in DIR with the expected checksums.
verified() {
	local f
	for f in "${FILES[@]}"; do [[ -f "$1/$f" ]] || return 1; done
	(cd "$1" && sha256sum --quiet --status -c "$sums") 2>/dev/null
}

# install_from DIR HOW: move verified copies of DIR's files into dest; HOW
# ("copied from …") is what the log line says.
install_from() {
	local f
	tmp="$(mktemp -d "$dest/.fetch.XXXXXX")"
	for f in "${FILES[@]}"; do cp -- "$1/$f" "$tmp/$f"; done
	(cd "$tmp" && sha256sum --quiet -c "$sums") || die "$2: the copies do not match $sums"
	for f in "${FILES[@]}"; do
		chmod 644 "$tmp/$f"
		mv -f -- "$tmp/$f" "$dest/$f"
		say "$f: $2"
	done
	rm -rf -- "$tmp"
	tmp=""
}

# fetch URL DIR: download the three files from URL into DIR.
fetch() {
	local url="${1%/}/" f
	for f in "${FILES[@]}"; do
		if command -v curl >/dev/null; then
			curl -fsSL --retry 2 --connect-timeout 20 -o "$2/$f" "$url$f" || return 1
		elif command -v wget >/dev/null; then
			wget -q --tries=2 --timeout=20 -O "$2/$f" "$url$f" || return 1
		else
			printf 'fetch-adult: neither curl nor wget is installed\n' >&2
			return 1
		fi
	done
}

mkdir -p "$dest"
if verified "$dest"; then
	say "adult.data, adult.test, adult.names: present and verified in testdata/adult"
else
	say "testdata/adult: files missing or checksums differ; looking for a source"
	tried=()
	found=false
	candidates=()
	if [[ -n "${ADULT_DIR:-}" ]]; then candidates+=("$ADULT_DIR"); fi
	candidates+=("$root/../shared/adult")
	for dir in "${candidates[@]}"; do
		if verified "$dir"; then
			install_from "$dir" "copied from $(cd "$dir" && pwd)"
			found=true
			break
		fi
		if [[ -d "$dir" ]]; then
			tried+=("$dir: files missing or checksums differ")
		else
			tried+=("$dir: no such folder")
		fi
	done
	if ! "$found"; then
		url="${ADULT_URL:-$DEFAULT_URL}"
		say "downloading from $url"
		download="$(mktemp -d "$dest/.download.XXXXXX")"
		if fetch "$url" "$download" && verified "$download"; then
			install_from "$download" "downloaded from $url"
		else
			tried+=("$url: download failed or checksums differ (no network?)")
			msg="no source of the Adult data worked:"
			for t in "${tried[@]}"; do msg+=$'\n  '"$t"; done
			msg+=$'\n'"Put adult.data, adult.test and adult.names in a folder and run again with ADULT_DIR=<folder>."
			die "$msg"
		fi
	fi
fi

# derive SRC OUT: write OUT as CSV from the raw Adult file SRC, or
# leave OUT alone if it already has exactly that content.
derive() {
	local src="$dest/$1" out="$dest/$2" new
	new="$(mktemp "$dest/.$2.XXXXXX")"
	tmp="$new"
	LC_ALL=C awk -v header="$HEADER" -v src="$1" '
		BEGIN { print header }
		/^[ \t]*$/ || /^\|/ { next }
		{
			n = split($0, f, ", ")
			if (n != 15) { printf "%s line %d: %d fields, want 15\n", src, NR, n > "/dev/stderr"; exit 1 }
			sub(/\.$/, "", f[15])
			line = f[1]
			for (i = 2; i <= 15; i++) line = line "," f[i]
			print line
		}' "$src" >"$new" || die "could not convert $1"
	if [[ -f "$out" ]] && cmp -s "$new" "$out"; then
		rm -f -- "$new"
		say "$2: up to date"
	else
		chmod 644 "$new"
		mv -f -- "$new" "$out"
		say "$2: written from $1 ($(($(wc -l <"$out") - 1)) rows)"
	fi
	tmp=""
}

# The checksums fix the row counts: adult.names gives 32561 and 16281.
check_rows() {
	local got
	got="$(wc -l <"$dest/$1")"
	[[ "$got" -eq "$2" ]] || die "$1 has $got lines, want $2 (header + rows)"
}

derive adult.data adult.csv
derive adult.test adult-test.csv
check_rows adult.csv 32562
check_rows adult-test.csv 16282
