package release

import (
	"fmt"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/table"
)

// Encrypted is the metadata of an encrypted table (stage "encrypt"):
// what the server needs to perturb it, and nothing that depends on the
// data values.
type Encrypted struct {
	Sample
	// SampleID is how sample identified rows (SampleIDColumn,
	// SampleIDPosition), "" when not recorded.
	SampleID string
	// Pad is PadKind(Columns): PadOTP or PadPRF (PadMixed only in a
	// joined release).
	Pad     string
	Columns []Column
	// History counts the earlier γ-diagonal releases of the rows, when a
	// decrypted release was encrypted again; Releases = 0 otherwise.
	History History
}

// notEncrypted is what to do when an item of an encrypted table is missing.
const notEncrypted = "the file was not written by encrypt; encrypt the curator's sample first"

// Encode stores the encrypted table's items.
func (e Encrypted) Encode(meta table.Meta) error {
	meta[KeyStage] = StageEncrypt
	meta[KeyPad] = e.Pad
	e.Sample.Encode(meta)
	delete(meta, KeySampleID)
	if e.SampleID != "" {
		meta[KeySampleID] = e.SampleID
	}
	e.History.Set(meta)
	if e.History.Releases == 1 {
		// A single release records its γ as "gamma" (ReadHistory).
		meta.SetFloat(KeyGamma, e.History.GammaProduct)
	}
	return SetColumns(meta, e.Columns)
}

// Decode reads an encrypted table's items (ReadSample, ReadColumns,
// ReadHistory) and checks that the "pad" item, when present, is the
// columns' pad kind. The stage is the caller's to check: perturb also
// reads its own output, whose items these are too.
func (e *Encrypted) Decode(meta table.Meta, file string) error {
	var err error
	*e = Encrypted{}
	if e.Sample, err = ReadSample(meta, file, notEncrypted); err != nil {
		return err
	}
	if e.Columns, err = ReadColumns(meta, file, notEncrypted); err != nil {
		return err
	}
	if e.History, err = ReadHistory(meta, file); err != nil {
		return err
	}
	e.SampleID = meta[KeySampleID]
	e.Pad = PadKind(e.Columns)
	if p, ok := meta[KeyPad]; ok && p != e.Pad {
		return &Error{File: file, Key: KeyPad, Msg: fmt.Sprintf("metadata %q = %q does not match the pad kind %q of the columns", KeyPad, p, e.Pad), Fix: "re-create it with encrypt"}
	}
	return nil
}

// Decrypted is the metadata of decrypt's output (stage "decrypt"): the
// γ-diagonal release it decrypted (nil for decrypt --unperturbed, which
// decrypts an encrypted table that was never perturbed), the sampling,
// and the codebook that restored the labels.
type Decrypted struct {
	Sample
	Release  *GammaDiagonal
	Codebook *codebook.Codebook
}

// Encode stores the items decrypt changes in its input's metadata, which
// it carries over: stage "decrypt" and the codebook — unless Codebook is
// nil: a writer then makes the item (CodebookFileItem).
func (d Decrypted) Encode(meta table.Meta) error {
	meta[KeyStage] = StageDecrypt
	if d.Release != nil {
		r := *d.Release
		r.Stage = StageDecrypt
		r.Sample = d.Sample
		r.Encode(meta)
	} else {
		d.Sample.Encode(meta)
	}
	// The codebook's own layout (one column per line), as key files
	// carry it, rather than compacted.
	if d.Codebook != nil {
		meta[KeyCodebook] = d.Codebook.FileJSON()
	}
	return nil
}

// Decode reads decrypt's output: stage "decrypt", the sampling, a valid
// codebook and, when the file records a mechanism, the γ-diagonal
// release (GammaDiagonal.Decode).
func (d *Decrypted) Decode(meta table.Meta, file string) error {
	f := newFields(meta, file, "decrypt the release again")
	*d = Decrypted{}
	if st := f.str(KeyStage); f.err == nil && st != StageDecrypt {
		f.failf(KeyStage, "metadata %q = %q is not decrypt's output (want %q)", KeyStage, st, StageDecrypt)
	}
	cb := f.codebook(KeyCodebook)
	if f.err != nil {
		return f.err
	}
	d.Codebook = cb
	if f.has(KeyMechanism) {
		d.Release = new(GammaDiagonal)
		if err := d.Release.Decode(meta, file); err != nil {
			return err
		}
		d.Sample = d.Release.Sample
		return nil
	}
	d.Sample.decode(f)
	return f.err
}
