// Package release is the on-disk contract between the pramkit stages: the
// metadata each stage writes for the next one, as typed Go values.
//
// One struct per kind of file: Sample (sample), Encrypted (encrypt), Key
// (encrypt --key-out), GammaDiagonal (perturb), Decrypted (decrypt),
// Bitflip and DDPS (perturb --mechanism), Anonymized and AnatomyGroups
// (anonymize; Global adds mechanism A's keep probabilities). Items every
// output carries (contract, version, order, insecure_seed) are not struct
// fields: cli.Create stamps the contract and version on every output
// (Stamp), and the order and insecure-seed marks are written by package
// cli's helpers through KeyOrder and KeyInsecureSeed. Stages name items
// only through the Key constants here; none spells one.
//
// Contract version: every output records ContractVersion; every Decode
// (and ReadSample, ReadColumns) first refuses a file of a version outside
// MinContractVersion..ContractVersion, with one line naming the file, its
// version and ours, and the fix (re-run the older stage, or upgrade
// pramkit for a newer file) (CheckContract). Bumping the contract is
// changing that constant, with the new items defaulting when absent so
// that MinContractVersion can stay.
//
// Each struct has Encode, which writes its items into a table.Meta, and
// Decode, which parses them back with range checks and checks the items
// that determine each other (ε from n, m and γ for the γ-diagonal release,
// Lin–Wang–Rane Theorem III.2; the bitflip ε from q and L; the DDPS ε from
// its masses; 1 ≤ m ≤ n). A file whose metadata was edited or damaged is
// refused with one line naming the file, the item and both values, rather
// than estimated with the wrong parameters or reported with the wrong ε.
//
// Numbers are stored in Go's shortest round-trip form (table.Meta.SetFloat),
// so an honest file reproduces its derived values exactly; Decode still
// allows a relative difference of Tolerance so that files written by other
// tools that round the last digit are accepted.
//
// The encrypt, perturb and decrypt stages share one layout (SPEC §3.2–3.4):
// the metadata items of encrypted tables, releases and key files, and the
// derivation of per-run PRF pad keys. (The lockstep reading of their integer
// columns is table reading, not metadata: it is table.Cursor.)
//
// An encrypted table holds one int32 column per encrypted column, named like
// the source column, with cells c = (x + v) mod k_j ∈ Z_{k_j}: the value
// index x of the cell in the column's codebook plus the pad v. Its metadata
// says what a server needs and nothing that depends on the data values:
//
//	stage        "encrypt" (then "perturb", "decrypt"; "key" for a key file)
//	n, m         table and sample size, fingerprint of the sampling (from sample)
//	columns      JSON list of Column, one per int32 column, in column order
//	pad          "otp" (one-time pad) or "prf" (pads from a PRF: computational secrecy)
//
// A key file has the same int32 columns holding the pads v (none for PRF
// pads, which are recomputed from a key), the same n, m, fingerprint and
// columns, and the codebook of its columns so that decrypt can restore labels.
package release
