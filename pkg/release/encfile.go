package release

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/pad"
	"github.com/pramkit/pramkit/pkg/table"
)

// Pad kinds, in the "pad" item and in each Column.
const (
	// PadOTP: pads drawn from a cryptographic generator under a key that is
	// discarded, stored in the key file: a one-time pad up to the
	// generator's (computational) indistinguishability from uniform.
	PadOTP = "otp"
	// PadPRF: pads computed by AES-256 from a key (package pad's Deriver);
	// the key file is compact but secrecy is only computational.
	PadPRF = "prf"
	// PadMixed: a joined release whose columns use both kinds.
	PadMixed = "mixed"
)

// Metadata keys used by these stages (besides n, m, fingerprint, stage).
const (
	KeyColumns  = "columns"
	KeyPad      = "pad"
	KeyCodebook = "codebook"
	// KeyPRFKey holds, in a PRF key file only, the hex of the per-run pad
	// key (DeriveRunKey). It is key material: never print it.
	KeyPRFKey = "prf_key"
)

// SetColumns stores cols as the "columns" item.
func SetColumns(meta table.Meta, cols []Column) error {
	return meta.SetJSON(KeyColumns, cols)
}

// ReadColumns reads and checks the "columns" item of file's metadata: at
// least one column, distinct non-empty names, 1 ≤ k ≤ codebook.MaxK, a known
// pad kind. notFrom says what to do when the item is missing.
func ReadColumns(meta table.Meta, file, notFrom string) ([]Column, error) {
	if err := CheckContract(meta, file); err != nil {
		return nil, err
	}
	var cols []Column
	if err := meta.JSON(KeyColumns, "", &cols); err != nil {
		var me *table.MissingError
		if errors.As(err, &me) {
			return nil, fmt.Errorf("%s: no %q in the metadata: %s", file, KeyColumns, notFrom)
		}
		return nil, fmt.Errorf("%s: %v; the file was damaged: re-create it with the stage that wrote it", file, err)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("%s: the metadata lists no columns; re-create the file with encrypt", file)
	}
	seen := make(map[string]bool, len(cols))
	for _, c := range cols {
		switch {
		case c.Name == "":
			return nil, fmt.Errorf("%s: the metadata lists a column without a name; re-create the file with encrypt", file)
		case seen[c.Name]:
			return nil, fmt.Errorf("%s: the metadata lists column %q twice; re-create the file with encrypt", file, c.Name)
		case c.K < 1 || c.K > codebook.MaxK:
			return nil, fmt.Errorf("%s: column %q has alphabet size k = %d in the metadata, outside 1..2^31; re-create the file with encrypt", file, c.Name, c.K)
		case c.Pad != PadOTP && c.Pad != PadPRF:
			return nil, fmt.Errorf("%s: column %q has pad kind %q in the metadata (want %q or %q); re-create the file with encrypt", file, c.Name, c.Pad, PadOTP, PadPRF)
		}
		seen[c.Name] = true
	}
	return cols, nil
}

// Names returns the columns' names in order.
func Names(cols []Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}

// Alphabets returns the columns' alphabet sizes k_j in order.
func Alphabets(cols []Column) []uint32 {
	out := make([]uint32, len(cols))
	for i, c := range cols {
		out[i] = c.K
	}
	return out
}

// PadKind summarises the pad kinds of cols: PadOTP, PadPRF or PadMixed.
func PadKind(cols []Column) string {
	kind := ""
	for _, c := range cols {
		switch {
		case kind == "":
			kind = c.Pad
		case kind != c.Pad:
			return PadMixed
		}
	}
	return kind
}

// ReadSample reads n, m and fingerprint from file's metadata and checks
// n ≥ m ≥ 1. notFrom says what to do when an item is missing.
func ReadSample(meta table.Meta, file, notFrom string) (Sample, error) {
	var s Sample
	if err := CheckContract(meta, file); err != nil {
		return s, err
	}
	var err error
	for _, k := range []string{"n", "m", "fingerprint"} {
		if _, ok := meta[k]; !ok {
			return s, fmt.Errorf("%s: no sample %q in the metadata: %s", file, k, notFrom)
		}
	}
	if s.N, err = meta.Int("n", ""); err != nil {
		return s, fmt.Errorf("%s: %v; the file was damaged: re-create it", file, err)
	}
	if s.M, err = meta.Int("m", ""); err != nil {
		return s, fmt.Errorf("%s: %v; the file was damaged: re-create it", file, err)
	}
	if s.M < 1 || s.N < s.M {
		return s, fmt.Errorf("%s: the metadata says n = %d, m = %d, but a sample needs n ≥ m ≥ 1; re-create the file with sample", file, s.N, s.M)
	}
	s.Fingerprint = meta["fingerprint"]
	if s.Fingerprint == "" {
		return s, fmt.Errorf("%s: the sample fingerprint in the metadata is empty; re-create the file with sample", file)
	}
	return s, nil
}

// History is the privacy history of a table that was perturbed before:
// the number of γ-diagonal releases of its sample and the product of their
// γ. A fresh encrypted table has Releases = 0.
type History struct {
	Releases int
	// GammaProduct Γ = Π γ_i over the releases; 1 when there are none.
	GammaProduct float64
	// Gammas are γ_1, …, γ_r in the order they were applied: the
	// "gammas" item, which estimate needs to undo r ≥ 3 perturbations of
	// the same rows (pram.CombineGammas). nil for a table written before
	// the item existed.
	Gammas []float64
}

// KeyGammas is the metadata item holding History.Gammas, a JSON array.
const KeyGammas = "gammas"

// ReadHistory reads the "releases", "gamma", "gamma_composed" and "gammas"
// items. Releases after the first record gamma_composed = Γ; a single
// release only gamma. "gammas", when present, must list Releases values > 1
// whose product is Γ.
func ReadHistory(meta table.Meta, file string) (History, error) {
	h := History{GammaProduct: 1}
	if _, ok := meta["releases"]; !ok {
		return h, nil
	}
	r, err := meta.Int("releases", "")
	if err != nil || r < 0 || r > math.MaxInt32 {
		return h, fmt.Errorf("%s: the release counter in the metadata is not valid; the file was damaged: re-create it", file)
	}
	h.Releases = int(r)
	if r == 0 {
		return h, nil
	}
	key := "gamma"
	if r > 1 {
		key = "gamma_composed"
	}
	g, err := meta.Float(key, "")
	if err != nil || !(g > 1) || math.IsInf(g, 0) {
		return h, fmt.Errorf("%s: release %d has no valid %q in the metadata; the file was damaged: re-create it", file, r, key)
	}
	h.GammaProduct = g
	if _, ok := meta[KeyGammas]; !ok {
		return h, nil
	}
	damaged := func(why string) (History, error) {
		return History{GammaProduct: 1}, fmt.Errorf("%s: the %q item of the metadata %s; the file was damaged: re-create it", file, KeyGammas, why)
	}
	if err := meta.JSON(KeyGammas, "", &h.Gammas); err != nil {
		return damaged("is not a JSON list of numbers")
	}
	if len(h.Gammas) != h.Releases {
		return damaged(fmt.Sprintf("lists %d γ's for %d releases", len(h.Gammas), h.Releases))
	}
	logProd := 0.0
	for _, gi := range h.Gammas {
		if !(gi > 1) || math.IsInf(gi, 0) {
			return damaged(fmt.Sprintf("holds γ = %v, not a finite number > 1", gi))
		}
		logProd += math.Log(gi)
	}
	if math.Abs(logProd-math.Log(g)) > 1e-9*math.Max(1, math.Log(g)) {
		return damaged(fmt.Sprintf("multiplies to %.6g, not to the recorded %s = %.6g", math.Exp(logProd), key, g))
	}
	return h, nil
}

// Set stores the history: releases, gamma_composed after the first, and
// gammas when known.
func (h History) Set(meta table.Meta) {
	delete(meta, KeyGammas)
	if h.Releases == 0 {
		return
	}
	meta.SetInt("releases", int64(h.Releases))
	if h.Releases > 1 {
		meta.SetFloat("gamma_composed", h.GammaProduct)
	} else {
		delete(meta, "gamma_composed")
	}
	if len(h.Gammas) == h.Releases {
		meta.SetJSON(KeyGammas, h.Gammas) // a []float64 of finite numbers always marshals
	}
}

// Then is the history after one more release with γ: the list of γ's
// grows only when it was known for every earlier release.
func (h History) Then(gamma float64) History {
	next := History{Releases: h.Releases + 1, GammaProduct: h.GammaProduct * gamma}
	if len(h.Gammas) == h.Releases {
		next.Gammas = append(append([]float64(nil), h.Gammas...), gamma)
	}
	return next
}

// DeriveRunKey returns the pad key of one encrypt run from the curator's
// long-term PRF key and a fresh random nonce of the run:
//
//	k_run = HMAC-SHA-256(master, "pramkit/encrypt/prf-pad/v1" ‖ nonce)
//
// A fresh key per run means two encryptions never share pads (reusing a
// pad on two different plaintexts would reveal their difference), and the
// key file handed to a researcher opens this run only, not the curator's
// other releases. The nonce is not the public key id, so that a seeded
// test run (--insecure-seed) can reproduce its pads while its key id
// stays unpredictable; decrypt reads k_run from the key file.
func DeriveRunKey(master []byte, nonce string) pad.Key {
	mac := hmac.New(sha256.New, master)
	mac.Write([]byte("pramkit/encrypt/prf-pad/v1"))
	mac.Write([]byte(nonce))
	var k pad.Key
	copy(k[:], mac.Sum(nil))
	return k
}

// DeriveNoiseKey returns the PRAM offset key of one γ-diagonal release
// (perturb --noise-key) from the server's long-term key, the sample's
// fingerprint, γ and the key ids of the joined columns (in joint order):
//
//	k_rel = HMAC-SHA-256(master, "pramkit/perturb/pram-offset/v1" ‖
//	                     fingerprint ‖ 0 ‖ γ ‖ 0 ‖ keyID_1 ‖ 0 ‖ … ‖ keyID_d ‖ 0)
//
// Nothing fresh goes in, so a retried run on the same ciphertexts, or a part
// of them perturbed on its own, recomputes the same offsets. The key ids
// (one per encrypt run) make sure that the same offsets never meet two
// different plaintexts: were a curator to encrypt an edited sample under the
// same fingerprint, equal offsets would reveal the difference of the two
// releases; a new encrypt run has new key ids and so gets new offsets. Two
// releases of the same ciphertexts under one key and γ would share their
// offsets, which is why perturb refuses --noise-key with --allow-recompose.
func DeriveNoiseKey(master []byte, fingerprint string, gamma float64, keyIDs []string) [32]byte {
	mac := hmac.New(sha256.New, master)
	mac.Write([]byte("pramkit/perturb/pram-offset/v1"))
	mac.Write([]byte(fingerprint))
	mac.Write([]byte{0})
	mac.Write([]byte(strconv.FormatFloat(gamma, 'g', -1, 64)))
	mac.Write([]byte{0})
	for _, id := range keyIDs {
		mac.Write([]byte(id))
		mac.Write([]byte{0})
	}
	var k [32]byte
	copy(k[:], mac.Sum(nil))
	return k
}

// NoiseID is a public identifier of a release key k_rel (DeriveNoiseKey):
// the first 16 bytes of HMAC-SHA-256(k_rel, "pramkit/perturb/noise-id/v1"),
// in hex. perturb's ledger records it, so that a retried run (same key,
// sample and γ, hence the same offsets and the same released rows) is
// recognised as the same release; it reveals nothing about k_rel.
func NoiseID(releaseKey [32]byte) string {
	mac := hmac.New(sha256.New, releaseKey[:])
	mac.Write([]byte("pramkit/perturb/noise-id/v1"))
	return hex.EncodeToString(mac.Sum(nil)[:16])
}

// ParsePRFKey reads a long-term PRF key file's content: 32 raw bytes, or 64
// hex digits with optional surrounding white space. Errors never quote the
// content.
func ParsePRFKey(content []byte) ([]byte, error) {
	if len(content) == pad.KeySize {
		return content, nil
	}
	s := strings.TrimSpace(string(content))
	if len(s) == 2*pad.KeySize {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("a PRF key must be %d bytes or %d hex digits, and this file is neither", pad.KeySize, 2*pad.KeySize)
}

// RunKeyFromMeta reads a PRF key file's per-run pad key. Errors never quote
// the value.
func RunKeyFromMeta(meta table.Meta, file string) (pad.Key, error) {
	var k pad.Key
	s, ok := meta[KeyPRFKey]
	if !ok {
		return k, fmt.Errorf("%s: the key file holds PRF pads but no %q; use the key file encrypt wrote", file, KeyPRFKey)
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != pad.KeySize {
		return k, fmt.Errorf("%s: the PRF pad key in the metadata is damaged (value not shown); use the key file encrypt wrote", file)
	}
	copy(k[:], b)
	return k, nil
}
