package table

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// TestReadPrefixedReadsExactlySize: readPrefixed returns head and the
// next size bytes, whatever the reader's pieces, leaves the rest unread,
// allocates no more than twice what came, and reports a short input as
// io.ErrUnexpectedEOF.
func TestReadPrefixedReadsExactlySize(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), (3*ipcFirstRead)/16+5)
	head := []byte{0xFF, 0xFF, 0xFF, 0xFF, 1, 2, 3, 4}
	for _, size := range []int{0, 1, 100, ipcFirstRead, ipcFirstRead + 1, 3 * ipcFirstRead} {
		for name, r := range map[string]io.Reader{
			"whole":    bytes.NewReader(data),
			"one byte": iotest.OneByteReader(bytes.NewReader(data[:min(size+10, len(data))])),
			"halves":   iotest.HalfReader(bytes.NewReader(data)),
		} {
			got, err := readPrefixed(r, head, size)
			if err != nil {
				t.Fatalf("%s, %d bytes: %v", name, size, err)
			}
			if want := append(append([]byte{}, head...), data[:size]...); !bytes.Equal(got, want) {
				t.Errorf("%s, %d bytes: got %d bytes, not head and the first %d", name, size, len(got), size)
			}
			if cap(got) > 2*len(got)+ipcFirstRead {
				t.Errorf("%s, %d bytes: capacity %d for %d bytes", name, size, cap(got), len(got))
			}
			rest, _ := io.ReadAll(io.LimitReader(r, 10))
			if name != "one byte" && !bytes.Equal(rest, data[size:size+10]) {
				t.Errorf("%s, %d bytes: read past the message", name, size)
			}
		}
	}
	if _, err := readPrefixed(bytes.NewReader(data[:50]), head, 100); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short input: %v, want io.ErrUnexpectedEOF", err)
	}
}
