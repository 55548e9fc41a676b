package encrypt

import (
	"crypto/hmac"
	"encoding/hex"
	"fmt"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/release"
)

// nonceSource is the release whose pads a part shares (--nonce-from): the
// nonce and key id of its first encrypt run, and what they are bound to —
// the sample (n, m, fingerprint, and the digest of its codes), the columns
// and the curator's PRF key.
type nonceSource struct {
	file     string
	nonce    string
	keyID    string
	cols     []release.Column
	digest   string
	insecure bool
}

// readNonce reads --nonce-from: a PRF key file of the same sample, written
// with the same --prf-key. The sample digest is compared once the rows have
// been read (writeEncrypted). Errors never quote key material.
func (o *Options) readNonce(master []byte, smp release.Sample) (*nonceSource, error) {
	path := o.NonceFrom
	r, err := o.Streams.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	meta := r.Meta()
	if st := meta[release.KeyStage]; st != release.StageKey {
		return nil, fmt.Errorf("%s is not a key file (stage: %q): --nonce-from takes the key file that encrypt --prf-key wrote for another part of this sample", path, st)
	}
	var k release.Key
	if err := k.Decode(meta, path); err != nil {
		return nil, err
	}
	if release.PadKind(k.Columns) != release.PadPRF {
		return nil, fmt.Errorf("%s holds one-time pads: --nonce-from takes a key file written with --prf-key", path)
	}
	if k.Sample != smp {
		return nil, fmt.Errorf("%s belongs to another sample (n = %d, m = %d, fingerprint %.12s… against n = %d, m = %d, fingerprint %.12s… here): a nonce serves the parts of one sample only; encrypt this sample without --nonce-from", path, k.N, k.M, k.Fingerprint, smp.N, smp.M, smp.Fingerprint)
	}
	src := &nonceSource{file: path, nonce: meta[release.KeyPRFNonce], cols: k.Columns, digest: meta[release.KeySampleDigest], insecure: meta[cli.InsecureSeedKey] == "true"}
	if src.nonce == "" || src.digest == "" {
		return nil, fmt.Errorf("%s has no %q or %q: it was written before encrypt could work in parts; encrypt the whole sample again, or its first part without --nonce-from", path, release.KeyPRFNonce, release.KeySampleDigest)
	}
	runKey, err := release.RunKeyFromMeta(meta, path)
	if err != nil {
		return nil, err
	}
	want := release.DeriveRunKey(master, src.nonce)
	if !hmac.Equal(want[:], runKey[:]) {
		return nil, fmt.Errorf("%s was written with another --prf-key than %s: every part of a curator's sample takes the same --prf-key", path, o.PRFKey)
	}
	src.keyID = k.Columns[0].KeyID
	if _, err := hex.DecodeString(src.nonce); err != nil {
		return nil, fmt.Errorf("%s: the nonce in the metadata is damaged; use the key file encrypt wrote", path)
	}
	return src, nil
}

// match checks that this run encrypts the columns of the nonce's release:
// same names, order, k, codebook and key id.
func (s *nonceSource) match(cols []release.Column) error {
	if len(cols) != len(s.cols) {
		return fmt.Errorf("%s holds the pads of %d column(s) (%v) and this run encrypts %d (%v): every part encrypts the same --columns", s.file, len(s.cols), release.Names(s.cols), len(cols), release.Names(cols))
	}
	for j := range cols {
		if cols[j] != s.cols[j] {
			return fmt.Errorf("%s does not match this run on column %d (%q against %q, or another codebook): every part encrypts the same --columns with the same codebook", s.file, j+1, s.cols[j].Name, cols[j].Name)
		}
	}
	return nil
}
