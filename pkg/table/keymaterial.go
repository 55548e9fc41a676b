package table

import (
	"bytes"
	"encoding/hex"
	"io"
	"os"
	"strings"
)

// StageKey is the "stage" metadata item of a key file (encrypt --key-out):
// the pads or the PRF key that open a curator's ciphertext.
const StageKey = "key"

// KeyKind says what kind of key material a file holds.
type KeyKind int

const (
	NotKey     KeyKind = iota
	KeyFile            // a table whose metadata says stage "key" (encrypt --key-out)
	KeySidecar         // the .meta.json sidecar of a CSV key file (it can hold the PRF key)
	Secret             // 64 hex digits: a sampling secret (sample --new-secret) or a PRF key
	RawKey             // 32 binary bytes: a PRF key (encrypt --prf-key)
)

// String is the phrase used in messages: "alice.key: is a pramkit key file".
func (k KeyKind) String() string {
	switch k {
	case KeyFile:
		return "a pramkit key file"
	case KeySidecar:
		return "the metadata of a pramkit key file"
	case Secret:
		return "a pramkit secret"
	case RawKey:
		return "a PRF key"
	}
	return "not key material"
}

// IsKeyMaterial reports whether the file at path holds key material, judged
// by content, not by name: a key file's metadata (Parquet/Arrow schema
// metadata, a CSV's sidecar or "#pramkit" line), a key file's sidecar, or a
// secret in the forms sample.FormatSecret and release.ParsePRFKey accept.
// It reads only the head of the file, and a table's metadata, never its
// rows. A file that cannot be read is not reported.
func IsKeyMaterial(path string) (bool, KeyKind) {
	k := keyKind(path)
	return k != NotKey, k
}

func keyKind(path string) KeyKind {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return NotKey
	}
	if k := secretKind(path, st.Size()); k != NotKey {
		return k
	}
	if strings.HasSuffix(path, sidecarSuffix) {
		if stage, ok := sidecarFileStage(path); ok && stage == StageKey {
			return KeySidecar
		}
		return NotKey
	}
	if stage, ok := peekStage(path); ok && stage == StageKey {
		return KeyFile
	}
	return NotKey
}

// peekStage is peekMeta(path)'s "stage" item, read without the other
// items where it can be (keypeek.go): from a Parquet footer that has
// pramkit items and no stage "key" (a key file is opened, to be sure), and
// from a CSV's sidecar.
func peekStage(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	head := make([]byte, 8)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case sniff(head) == Parquet:
		if stage, ours, err := parquetStage(f); err == nil && ours && stage != StageKey {
			return stage, true
		}
	case sniff(head) == Arrow:
		if stage, ours, err := arrowStage(f); err == nil && ours && stage != StageKey {
			return stage, true
		}
	case bytes.HasPrefix(head, []byte(metaLinePrefix)):
	default:
		return sidecarFileStage(sidecarPath(path))
	}
	m, ok := peekMeta(path)
	return m["stage"], ok
}

// sidecarFileStage is sidecarStageOf the sidecar file at path.
func sidecarFileStage(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	return sidecarStageOf(f)
}

// secretKind recognises the two secret layouts by their first bytes: 64 hex
// digits and optional white space (the sampling secret --new-secret writes,
// or a hex PRF key), or exactly 32 bytes that are not all printable text (a
// raw PRF key from /dev/urandom; 32 random bytes are all printable with
// probability (95/256)^32 < 10⁻¹³).
func secretKind(path string, size int64) KeyKind {
	if size > 256 || size < 32 {
		return NotKey
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return NotKey
	}
	// The hex secret may be followed by comment lines (sample's mark of a
	// secret made with --insecure-seed).
	t := b
	if first, rest, ok := bytes.Cut(b, []byte("\n")); ok && bytes.HasPrefix(bytes.TrimSpace(rest), []byte("#")) {
		t = first
	}
	if t = bytes.TrimSpace(t); len(t) == 64 {
		if _, err := hex.DecodeString(string(t)); err == nil {
			return Secret
		}
	}
	if len(b) == 32 {
		for _, c := range b {
			if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') || c >= 0x7f {
				return RawKey
			}
		}
	}
	return NotKey
}

// peekMeta returns the pramkit metadata of the table at path without
// checking that a CSV's sidecar belongs to it and without reading rows.
func peekMeta(path string) (Meta, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	head := make([]byte, 8)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch sniff(head) {
	case Parquet, Arrow:
		r, err := Open(path, ReadOptions{BatchSize: 1})
		if err != nil {
			return nil, false
		}
		defer r.Close()
		return r.Meta(), true
	}
	if bytes.HasPrefix(head, []byte(metaLinePrefix)) {
		f.Seek(0, io.SeekStart)
		b := make([]byte, 1<<20)
		n, _ := io.ReadFull(f, b)
		line, _, _ := bytes.Cut(b[:n], []byte("\n"))
		m, err := decodeSidecar(bytes.TrimSpace(line[len(metaLinePrefix):]))
		return m, err == nil
	}
	b, err := os.ReadFile(sidecarPath(path))
	if err != nil {
		return nil, false
	}
	m, err := decodeSidecar(b)
	return m, err == nil
}
