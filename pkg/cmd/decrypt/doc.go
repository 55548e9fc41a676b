// Package decrypt is the `decrypt` command: the researcher removes the
// curators' pads from a perturbed release and gets the sanitized sample
// back as codebook labels (Lin–Wang–Rane §III-A, SPEC §3.4).
//
// For row i and column j with pad v_ij from the curator's key,
//
//	x̂_ij = (c̄_ij − v_ij) mod k_j,
//
// where c̄ is the perturbed ciphertext. Since the server's PRAM offset o_i
// was added to c = x + v, x̂_i = x_i + o_i: the sampled row perturbed by the
// γ-diagonal matrix A (Lemma III.1), which estimate then inverts.
package decrypt
