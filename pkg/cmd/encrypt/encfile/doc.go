// Package encfile is the layout that the encrypt, perturb and decrypt
// commands share (SPEC §3.2–3.4): the metadata items of encrypted tables,
// releases and key files, the derivation of per-run PRF pad keys, and the
// lockstep reading of their integer columns.
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
package encfile
