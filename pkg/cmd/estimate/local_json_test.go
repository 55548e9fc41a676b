package estimate

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestStreamedJSONIsEncodersJSON: writeJSON, which writes a summary's
// lists an element at a time, writes the bytes that json.Encoder writes
// for the summary with the lists filled in — with a nested list under the
// same key, an empty list, and labels that are JSON-like ("counts":null
// in a value), need escaping, or are HTML (left as they are).
func TestStreamedJSONIsEncodersJSON(t *testing.T) {
	type item struct {
		Value string  `json:"value"`
		X     float64 `json:"x"`
	}
	type inner struct {
		Counts []item `json:"counts"`
		N      int    `json:"n"`
	}
	type summary struct {
		Name   string  `json:"name"`
		Counts []item  `json:"counts"`
		Empty  []item  `json:"empty"`
		Tail   string  `json:"tail"`
		Inner  *inner  `json:"inner,omitempty"`
		Last   float64 `json:"last"`
	}
	labels := []string{`"counts":null`, ">50K", "a\"b\\c", "é ☃", "\x00\n", "", "1e-7"}
	items := func(scale float64) []item {
		var l []item
		for i, v := range labels {
			l = append(l, item{v, scale * float64(i) / 3})
		}
		return l
	}
	full := summary{Name: `"counts":null`, Counts: items(1), Empty: []item{}, Tail: "<t>", Inner: &inner{Counts: items(1e-9), N: 7}, Last: 2.5e21}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(full); err != nil {
		t.Fatal(err)
	}
	skel := full
	skel.Counts, skel.Empty, skel.Inner = nil, nil, &inner{N: 7}
	list := func(key string, l []item) jsonList {
		return jsonList{key: key, n: len(l), elem: func(i int) any { return l[i] }}
	}
	rep := &localReport{
		summary: func() any { return skel },
		lists:   []jsonList{list("counts", full.Counts), list("empty", nil), list("counts", full.Inner.Counts)},
	}
	var got bytes.Buffer
	if err := rep.writeJSON(&got); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("streamed:\n%s\nencoding/json:\n%s", got.String(), want.String())
	}

	rep.lists = append(rep.lists, list("missing", nil))
	if err := rep.writeJSON(&bytes.Buffer{}); err == nil {
		t.Error("a list whose key the summary does not have: no error")
	}
}
