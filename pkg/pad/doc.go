// Package pad is the additive one-time pad over Z_k that the curators use to
// encrypt their sampled columns before the server sees them (Lin, Wang, Rane,
// "On the Benefits of Sampling in Privacy Preserving Statistical Analysis on
// Distributed Databases", §III-A "Encryption"; SPEC §3.2 and §3.4).
//
// A cell holds a category index x ∈ Z_k (its position in the column's
// codebook, k = codebook length). With a pad v ∈ Z_k,
//
//	c = (x + v) mod k     (encryption)
//	x = (c − v) mod k     (decryption)
//
// When v is uniform on Z_k and independent of x, c is uniform on Z_k whatever
// x is, so the ciphertext is statistically independent of the data (the
// one-time pad's perfect secrecy, the paper's "privacy against the server").
// Software draws pads from a cryptographic generator, so in practice the
// secrecy is computational: it holds against anyone who cannot distinguish
// the generator's output from uniform.
// Because the pad is additive, the server's additive PRAM perturbation
// commutes with it (Lemma III.1): see package pram.
//
// Two ways to obtain pads:
//
//   - DrawPads: independent uniform pads from an injected generator; the
//     pads themselves are the key and must be stored (m·d values). (The
//     encrypt tool draws its stored pads from Deriver under a fresh key
//     from crypto/rand that it discards, so that chunks run in parallel.)
//   - Deriver: pads computed as PRF(key, row, column) from a 256-bit key
//     (AES-256 in counter mode, rejection sampling, no modulo bias). The key
//     is 32 bytes instead of m·d values, but the secrecy is only
//     COMPUTATIONAL: it rests on AES-256 being a pseudorandom permutation, not
//     on information theory. Tools must label releases made this way.
package pad
