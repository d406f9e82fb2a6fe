package printing

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Hostile is what a tenant's container can put in a termination message,
// an output or a log line: an OSC 52 clipboard write, a screen clear, a
// carriage return that overwrites the line, BEL, backspace, DEL, an 8-bit
// CSI as a C1 control and as a raw byte, and a right-to-left override.
const Hostile = "ok\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\rFAKE\x08\x7f\u009b31m\x9b\u202eevil"

// visible is every character a terminal obeys rather than shows.
func visible(t *testing.T, s string, keep string) {
	t.Helper()
	for _, r := range s {
		if strings.ContainsRune(keep, r) {
			continue
		}
		if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || bidi(r) || r == '\ufffd' {
			t.Errorf("control %U left in %q", r, s)
		}
	}
}

func TestSanitise(t *testing.T) {
	cases := map[string]struct {
		f    func(string) string
		in   string
		want string
	}{
		"line":                          {Line, Hostile, `ok^[]52;c;ZWNobyBwd25lZA==^G^[[2J FAKE^H\u007f\u009b31m\x9b\u202eevil`},
		"text keeps newlines and tabs":  {Text, "a\tb\nc\r\n\x1b[2J", "a\tb\nc^M\n^[[2J"},
		"line turns breaks into spaces": {Line, "a\tb\nc\r\nd\u2028e", "a b c  d e"},
		"one line collapses":            {OneLine, " exited\n\n  with\t3 \x1b[31m", "exited with 3 ^[[31m"},
		"cell cuts at the first break":  {Cell, "first\x1b[2J\nsecond", "first^[[2J..."},
		"plain text is unchanged":       {Line, "ビルド ok: sha=0a8b 失敗", "ビルド ok: sha=0a8b 失敗"},
		"a real U+FFFD stays":           {Line, "a\ufffdb", "a\ufffdb"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.f(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	visible(t, Line(Hostile), "")
	visible(t, Text(Hostile+"\n\t"), "\n\t")
}

func TestSafeArgs(t *testing.T) {
	type phase string
	got := Safe("a\x1b[2J", phase("Failed\r"), 3, errString("e\x07"))
	want := []any{"a^[[2J", "Failed ", 3, "e^G"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestSafeLines(t *testing.T) {
	var out bytes.Buffer
	w := NewSafeLines(&out)
	// Written in pieces that cut an escape and a character in two.
	for _, p := range []string{"one\x1b]52;", "c;eA==\x07\r\ntwo ビ", "ルド\n", "last\x1b[2J"} {
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := "one^[]52;c;eA==^G\ntwo ビルド\nlast^[[2J\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// A line with no end is written in pieces as it comes, never split
	// inside a character.
	out.Reset()
	w = NewSafeLines(&out)
	in := []byte("x" + strings.Repeat("é", maxLine)) // two bytes each
	for len(in) > 0 {
		n := min(len(in), 4097)
		if _, err := w.Write(in[:n]); err != nil {
			t.Fatal(err)
		}
		in = in[n:]
		if len(w.buf) > maxLine {
			t.Fatalf("holds back %d bytes", len(w.buf))
		}
	}
	_ = w.Close()
	if got, want := out.String(), "x"+strings.Repeat("é", maxLine)+"\n"; got != want {
		t.Errorf("the long line came out changed (%d bytes, want %d)", len(got), len(want))
	}
}
