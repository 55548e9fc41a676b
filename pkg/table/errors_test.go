package table

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuoteCell(t *testing.T) {
	long := strings.Repeat("x", 10<<20)
	for _, c := range []struct{ in, want string }{
		{"", `""`},
		{`say "hi"`, `"say \"hi\""`},
		{strings.Repeat("a", 80), `"` + strings.Repeat("a", 80) + `"`},
		{strings.Repeat("a", 81), `"` + strings.Repeat("a", 80) + `"… (81 bytes)`},
		{long, `"` + strings.Repeat("x", 80) + `"… (10485760 bytes)`},
		// 79 ASCII then a 2-byte rune: the cut keeps the rune whole.
		{strings.Repeat("a", 79) + "üü", `"` + strings.Repeat("a", 79) + `ü"… (83 bytes)`},
		// Invalid UTF-8 counts one character per byte and is escaped.
		{strings.Repeat("\xff", 100), `"` + strings.Repeat(`\xff`, 80) + `"… (100 bytes)`},
	} {
		if got := QuoteCell(c.in); got != c.want {
			t.Errorf("QuoteCell(%.20q…) = %.120s, want %.120s", c.in, got, c.want)
		}
	}
	// Every cut of a multi-byte text is valid UTF-8.
	s := strings.Repeat("日本語", 50)
	for i := range len(s) {
		head, _ := cutCell(s[:i+1])
		if !utf8.ValidString(head) && utf8.ValidString(s[:i+1]) {
			t.Fatalf("cut of %d bytes splits a character", i+1)
		}
	}
	if got := ShortCell(strings.Repeat("b", 90)); got != strings.Repeat("b", 80)+"… (90 bytes)" {
		t.Errorf("ShortCell = %q", got)
	}
}
