package table

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// sidecarSeeds are sidecars of the usual shape and of every shape the fast
// decoder leaves to json.Unmarshal.
var sidecarSeeds = []string{
	`{"pramkit":1,"meta":{"stage":"perturb","codebook":"{\"columns\":[{\"name\":\"s\",\"categories\":[\"a\\\"b\",\"é\",\"\\u00e9\"]}]}"},"data":{"bytes":12,"sha256":"ab"}}`,
	`{"pramkit":1,"meta":{"a":"\u00e9\t\n\\\/\"\b\f\r x"}}`,
	` { "pramkit" : 1 , "meta" : { } , "data" : null } `,
	`{"pramkit":1,"meta":null}`,
	`{"pramkit":1}`,
	`{"Pramkit":1,"META":{"k":"v"},"Data":{"Bytes":3,"SHA256":"x","other":[1,{"a":"}"}]}}`,
	`{"pramkit":1,"extra":{"x":[1,2,"]",{"y":null}],"z":true},"meta":{"k":"v"}}`,
	`{"pramkit":1,"meta":{"k":"v","k":"w"}}`,
	`{"pramkit":1,"meta":{"k":"v"},"meta":{"j":"w"}}`,
	`{"pramkit":1,"meta":{"k":null}}`,
	`{"pramkit":1,"meta":{"k":1}}`,
	`{"pramkit":1.0}`,
	`{"pramkit":"1"}`,
	`{"pramkit":1e2}`,
	`{"pramkit":99999999999999999999}`,
	`{"pramkit":-1,"meta":{"k":"\ud83d\ude00"}}`,
	`{"pramkit":1,"meta":{"k":"\ud800"}}`,
	"{\"pramkit\":1,\"meta\":{\"k\":\"\xff\"}}",
	`{"pramkıt":1}`,
	`{"pramkit":1,"data":{"bytes":1.5}}`,
	`{"pramkit":1,"data":{"bytes":1,"bytes":2}}`,
	`{"pramkit":1,"data":[]}`,
	`[1]`,
	`{"pramkit":1`,
	`{"pramkit":1} x`,
	``,
}

// TestSidecarDecodesAsJSONUnmarshal: decodeSidecarJSON gives what
// json.Unmarshal gives — the same items, digest and version, or the same
// error — for each seed.
func TestSidecarDecodesAsJSONUnmarshal(t *testing.T) {
	for _, s := range sidecarSeeds {
		checkSidecarDecode(t, []byte(s))
	}
}

// TestSidecarFastPathTakesTheUsualShape: the usual sidecar is decoded by
// the fast path (what the memory saving rests on), a repeated item is not.
func TestSidecarFastPathTakesTheUsualShape(t *testing.T) {
	var s sidecar
	if !decodeSidecarFast([]byte(sidecarSeeds[0]), &s) {
		t.Error("a sidecar of the usual shape went to json.Unmarshal")
	}
	if decodeSidecarFast([]byte(`{"pramkit":1,"meta":{"k":"v","k":"w"}}`), &s) {
		t.Error("a repeated item was decoded by the fast path")
	}
}

func FuzzSidecarDecode(f *testing.F) {
	for _, s := range sidecarSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkSidecarDecode(t, b) })
}

func checkSidecarDecode(t *testing.T, b []byte) {
	t.Helper()
	var want, got sidecar
	wantErr := json.Unmarshal(b, &want)
	gotErr := decodeSidecarJSON(b, &got)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("%q: error %v, json.Unmarshal's %v", b, gotErr, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %+v (data %+v), json.Unmarshal %+v (data %+v)", b, got, got.Data, want, want.Data)
	}
	// In place, from every value of 1 or 3 bytes quoted: the same result
	// again, and a buffer the fast path gave up on left intact (it went
	// to json.Unmarshal).
	for _, min := range []int{1, 3} {
		own := bytes.Clone(b)
		var in sidecar
		inErr := decodeSidecarBytes(own, &in, min)
		if fmt.Sprint(inErr) != fmt.Sprint(wantErr) {
			t.Fatalf("%q in place from %d bytes: error %v, json.Unmarshal's %v", b, min, inErr, wantErr)
		}
		if wantErr == nil && !reflect.DeepEqual(in, want) {
			t.Fatalf("%q in place from %d bytes: decoded %+v (data %+v), json.Unmarshal %+v (data %+v)", b, min, in, in.Data, want, want.Data)
		}
		if var0 := (sidecar{}); !json.Valid(b) || !decodeSidecarFast(bytes.Clone(b), &var0) {
			if !bytes.Equal(own, b) {
				t.Fatalf("%q: the fast path gave up, and the buffer changed to %q", b, own)
			}
		}
	}
}

// TestOwnedSidecarSharesItsBuffer: a large item of a sidecar decoded in
// place is a string in the sidecar's own memory, with the bytes
// json.Unmarshal gives (escapes of every kind, multi-byte runes), and
// small items are strings of their own.
func TestOwnedSidecarSharesItsBuffer(t *testing.T) {
	big := strings.Repeat(`{"a\\b\u00e9\n"}é/`, inPlaceBytes/8)
	data, err := encodeSidecar(Meta{"codebook": big, "stage": "perturb"})
	if err != nil {
		t.Fatal(err)
	}
	var want, got sidecar
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if err := decodeSidecarOwned(data, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("decoded in place, not json.Unmarshal's items")
	}
	in := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		lo := uintptr(unsafe.Pointer(&data[0]))
		return p >= lo && p < lo+uintptr(len(data))
	}
	if !in(got.Meta["codebook"]) {
		t.Error("the large item is not in the sidecar's buffer")
	}
	if in(got.Meta["stage"]) {
		t.Error("a small item is in the sidecar's buffer")
	}
}

// BenchmarkSidecarDecode decodes a sidecar holding a codebook of 100k
// labels, by the fast path and by json.Unmarshal.
func BenchmarkSidecarDecode(b *testing.B) {
	var cb strings.Builder
	cb.WriteString(`{"columns":[{"name":"s","categories":[`)
	for i := range 100_000 {
		if i > 0 {
			cb.WriteByte(',')
		}
		fmt.Fprintf(&cb, "%q", fmt.Sprintf("v%d", i))
	}
	cb.WriteString(`]}]}`)
	data, err := encodeSidecar(Meta{"codebook": cb.String(), "stage": "perturb"})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			var s sidecar
			if err := decodeSidecarJSON(data, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		for b.Loop() {
			var s sidecar
			if err := json.Unmarshal(data, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
