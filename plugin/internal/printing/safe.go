package printing

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Everything the plugin prints from the cluster (names, messages,
// container-written outputs and termination messages, events, annotations,
// log lines) goes through the functions in this file before it reaches a
// terminal. A tenant writes much of it: a termination message holding
// "\x1b]52;c;...\a" would set the reader's clipboard, "\x1b[2J" clear the
// screen, a carriage return or a cursor move overwrite what another line
// says. So every control character is shown, never sent:
//
//   - C0 controls in caret notation, as cat -v: ESC is ^[ (as kubectl's
//     tables write it), CR ^M, BEL ^G;
//   - DEL, the C1 controls (U+0080 to U+009F, which some terminals obey as
//     ESC sequences) and the bidirectional overrides that reorder what a
//     line appears to say (U+202E and kin) as \u009b: JSON's own escape,
//     so JSON output made safe still decodes to the same value (JSON
//     escapes C0 itself, and lets these through);
//   - bytes that are not UTF-8 as \x9b (a lone 0x9b is CSI to an 8-bit
//     terminal).
//
// Newlines and tabs are kept by Text and become spaces in Line and Cell.

// Text makes multi-line text safe for a terminal: newlines and tabs stay,
// every other control is shown escaped.
func Text(s string) string { return escape(s, true) }

// Line makes a value safe to print within one line: newlines, tabs and the
// other line-breaking characters become a space, every other control is
// shown escaped. Spaces are kept as they are.
func Line(s string) string { return escape(s, false) }

// OneLine is Line with runs of white space collapsed to one space and the
// ends trimmed: a multi-line message in its table row or after a colon.
func OneLine(s string) string { return strings.Join(strings.Fields(Line(s)), " ") }

// Cell is a table cell as kubectl's table printer shows one: a value of
// several lines shows its first line and "...", then Line.
func Cell(s string) string {
	if n := strings.IndexAny(s, "\f\n\r\v\u0085\u2028\u2029"); n >= 0 {
		s = s[:n] + "..."
	}
	return Line(s)
}

// Safe returns args with each string, error, Stringer and value of a
// string type (a phase) made safe with Line, for Fprintf calls whose format
// is the plugin's own and whose arguments come from the cluster.
func Safe(args ...any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = Line(v)
		case error:
			out[i] = Line(v.Error())
		case fmt.Stringer:
			out[i] = Line(v.String())
		default:
			out[i] = a
			if rv := reflect.ValueOf(a); rv.Kind() == reflect.String {
				out[i] = Line(rv.String())
			}
		}
	}
	return out
}

// needsEscape reports whether s holds anything escape changes, so the
// usual clean value is returned without a copy.
func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b == 0x7f || b >= 0x80 {
			return true
		}
	}
	return false
}

func escape(s string, multiline bool) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t':
			if multiline {
				b.WriteRune(r)
			} else {
				b.WriteByte(' ')
			}
		case !multiline && (r == '\r' || r == '\f' || r == '\v' || r == '\u0085' || r == '\u2028' || r == '\u2029'):
			b.WriteByte(' ')
		case r < 0x20:
			b.WriteByte('^')
			b.WriteByte(byte(r) + '@')
		case r == 0x7f, r >= 0x80 && r <= 0x9f, bidi(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// bidi reports the Unicode bidirectional controls: embeddings, overrides,
// isolates and marks, which make a line display in another order than it
// reads ("Trojan Source").
func bidi(r rune) bool {
	switch {
	case r == '\u061c', r == '\u200e', r == '\u200f':
		return true
	case r >= '\u202a' && r <= '\u202e':
		return true
	case r >= '\u2066' && r <= '\u2069':
		return true
	}
	return false
}

// SafeLines is a writer for streams from the cluster, such as a
// container's log: it writes each line to out made safe with Text, with
// its newline (a CR before it is dropped, as in a CRLF log). A line longer
// than maxLine is written in pieces, so a container that never writes a
// newline cannot make the plugin buffer without bound. Close writes an
// unfinished last line.
type SafeLines struct {
	out io.Writer
	buf []byte
	err error
}

// maxLine bounds what SafeLines holds back waiting for a newline.
const maxLine = 64 << 10

// NewSafeLines returns a SafeLines writing to out.
func NewSafeLines(out io.Writer) *SafeLines { return &SafeLines{out: out} }

func (w *SafeLines) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimSuffix(w.buf[:i], []byte("\r"))
		if _, w.err = io.WriteString(w.out, Text(string(line))+"\n"); w.err != nil {
			return len(p), w.err
		}
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > maxLine {
		// Keep back a character cut in two, so it is not shown as
		// invalid bytes.
		n := len(w.buf)
		if start := lastRuneStart(w.buf); !utf8.FullRune(w.buf[start:]) {
			n = start
		}
		_, w.err = io.WriteString(w.out, Text(string(w.buf[:n])))
		w.buf = append([]byte(nil), w.buf[n:]...)
	}
	return len(p), w.err
}

// lastRuneStart is where the last, maybe partial, character of b starts.
func lastRuneStart(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return len(b)
}

// Close writes an unfinished last line, with a newline.
func (w *SafeLines) Close() error {
	if w.err != nil || len(w.buf) == 0 {
		return w.err
	}
	_, w.err = io.WriteString(w.out, Text(string(w.buf))+"\n")
	w.buf = nil
	return w.err
}
