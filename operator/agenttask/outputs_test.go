package agenttask

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-sched/kubectl-sched/api/substitution"
	"github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func invalidErr(msg string) *OutputsError {
	return &OutputsError{Reason: v1alpha1.ReasonOutputsInvalid, Message: msg}
}

const notJSONPrefix = `termination message starts with "{" but is not one JSON object of strings: `

func TestParseOutputs(t *testing.T) {
	many := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "k%d=v\n", i)
		}
		return b.String()
	}
	manyMap := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("k%d", i)] = "v"
		}
		return m
	}
	// sized returns a valid one-output message of exactly n bytes.
	sized := func(n int) string { return "k=" + strings.Repeat("v", n-2) }

	tests := map[string]struct {
		msg  string
		want map[string]string
		// wantErr is matched exactly, or as a prefix when errPrefix is set
		// (for text that comes from encoding/json).
		wantErr   *OutputsError
		errPrefix bool
	}{
		"empty":                         {msg: ""},
		"whitespace only":               {msg: " \n\t\r\n  "},
		"empty object":                  {msg: "{}"},
		"comments only":                 {msg: "# nothing\n\n#a=b\n"},
		"json":                          {msg: `{"digest": "sha256:abc", "tag": "v1"}`, want: map[string]string{"digest": "sha256:abc", "tag": "v1"}},
		"json surrounded by whitespace": {msg: "\n  {\"a\":\"b\"}\r\n", want: map[string]string{"a": "b"}},
		"json tricky values": {
			msg: `{"q": "say \"hi\" it's", "nl": "a\nb\r\n", "u": "日本 ✓ \u00e9", "d": "$HOME $$ $", "ref": "${steps.0.output.x} $${x}", "empty": "", "eq": "a=b"}`,
			want: map[string]string{
				"q": `say "hi" it's`, "nl": "a\nb\r\n", "u": "日本 ✓ é", "d": "$HOME $$ $",
				"ref": "${steps.0.output.x} $${x}", "empty": "", "eq": "a=b",
			},
		},
		"json key characters": {msg: `{"_a.b-C9": "x"}`, want: map[string]string{"_a.b-C9": "x"}},
		"json number":         {msg: `{"ok": "x", "n": 1.5}`, wantErr: invalidErr(`output "n" is a number; outputs are strings: quote it`)},
		"json negative":       {msg: `{"n": -1}`, wantErr: invalidErr(`output "n" is a number; outputs are strings: quote it`)},
		"json bool":           {msg: `{"b": true}`, wantErr: invalidErr(`output "b" is a boolean; outputs are strings: quote it`)},
		"json null":           {msg: `{"z": null}`, wantErr: invalidErr(`output "z" is null; outputs are strings: write "" for an empty value`)},
		"json nested object":  {msg: `{"o": {"a": "b"}}`, wantErr: invalidErr(`output "o" is an object; outputs are strings: encode it into a string`)},
		"json array":          {msg: `{"l": ["a"]}`, wantErr: invalidErr(`output "l" is an array; outputs are strings: encode it into a string`)},
		"json first bad value in written order": {
			msg: `{"z": 1, "a": true}`, wantErr: invalidErr(`output "z" is a number; outputs are strings: quote it`),
		},
		"json bad key": {
			msg:     `{"my key": "x"}`,
			wantErr: invalidErr(`output key "my key" is invalid: a key starts with a letter or '_' and holds only letters, digits, '_', '.' and '-'`),
		},
		"json empty key":     {msg: `{"": "x"}`, wantErr: invalidErr(`output key is empty`)},
		"json duplicate":     {msg: `{"a": "1", "b": "2", "a": "3"}`, wantErr: invalidErr(`output "a" appears twice in the JSON object`)},
		"json syntax":        {msg: `{"a": "b",}`, wantErr: invalidErr(notJSONPrefix), errPrefix: true},
		"json unterminated":  {msg: `{"a": "b"`, wantErr: invalidErr(notJSONPrefix), errPrefix: true},
		"json trailing text": {msg: `{"a": "b"} c=d`, wantErr: invalidErr(notJSONPrefix), errPrefix: true},
		"json two objects":   {msg: `{"a": "b"}{"c": "d"}`, wantErr: invalidErr(notJSONPrefix + "found { after the object")},
		"json array top level": {
			msg: "\n[1]", wantErr: invalidErr(`line 2 ("[1]") has no "=": write KEY=VALUE lines or one JSON object; use JSON for values with newlines`),
		},

		"lines":                       {msg: "digest=sha256:abc\ntag=v1\n", want: map[string]string{"digest": "sha256:abc", "tag": "v1"}},
		"lines without final newline": {msg: "a=1\nb=2", want: map[string]string{"a": "1", "b": "2"}},
		"value verbatim": {
			msg: "eq=a=b==c\nq=\"quoted\" 'single'\nd=$HOME $$ $\nref=${steps.0.output.x} $${y}\nu=日本 ✓\nsp= padded \nempty=\njson={\"x\":1}",
			want: map[string]string{
				"eq": "a=b==c", "q": `"quoted" 'single'`, "d": "$HOME $$ $", "ref": "${steps.0.output.x} $${y}",
				"u": "日本 ✓", "sp": " padded ", "empty": "", "json": `{"x":1}`,
			},
		},
		"crlf":                  {msg: "a=1\r\nb=2\r\n", want: map[string]string{"a": "1", "b": "2"}},
		"cr inside value stays": {msg: "a=x\ry\n", want: map[string]string{"a": "x\ry"}},
		"comments and blank lines": {
			msg:  "# outputs of the build\n\na=1\n   \n#b=2\nc=3 # not a comment\n",
			want: map[string]string{"a": "1", "c": "3 # not a comment"},
		},
		"duplicate": {msg: "a=1\nb=2\na=3\n", wantErr: invalidErr(`output "a" is set twice, on lines 1 and 3`)},
		"duplicate after comment lines": {
			msg: "#x\na=1\r\n\r\na=1\r\n", wantErr: invalidErr(`output "a" is set twice, on lines 2 and 4`),
		},
		"no equals": {
			msg:     "a=1\njust some text\n",
			wantErr: invalidErr(`line 2 ("just some text") has no "=": write KEY=VALUE lines or one JSON object; use JSON for values with newlines`),
		},
		"multi-line value": {
			msg:     "notes=first line\nsecond line ✓ that is quite long and goes on and on\n",
			wantErr: invalidErr(`line 2 ("second line ✓ that is quite long and g...") has no "=": write KEY=VALUE lines or one JSON object; use JSON for values with newlines`),
		},
		"bad key": {
			msg:     "a=1\n1a=2\n",
			wantErr: invalidErr(`line 2: output key "1a" is invalid: a key starts with a letter or '_' and holds only letters, digits, '_', '.' and '-'`),
		},
		"key with spaces": {
			msg:     "key = value",
			wantErr: invalidErr(`line 1: output key "key " is invalid: a key starts with a letter or '_' and holds only letters, digits, '_', '.' and '-'`),
		},
		"empty key":   {msg: "=value", wantErr: invalidErr(`line 1: output key is empty`)},
		"long key":    {msg: strings.Repeat("k", 64) + "=v", wantErr: invalidErr(`line 1: output key "` + strings.Repeat("k", 64) + `" is 64 characters; at most 63 are allowed`)},
		"max outputs": {msg: many(64), want: manyMap(64)},
		"json too many": {
			msg:     func() string { b, _ := json.Marshal(manyMap(65)); return string(b) }(),
			wantErr: invalidErr("termination message has more than 64 outputs; write at most 64"),
		},
		"too many":     {msg: many(65), wantErr: invalidErr("termination message has more than 64 outputs; write at most 64")},
		"invalid utf8": {msg: "a=ok\nb=\xff\xfe", wantErr: invalidErr("termination message is not valid UTF-8 (first bad byte at offset 7); outputs must be text")},
		"invalid utf8 in json": {
			msg: "{\"a\": \"\xc3\"}", wantErr: invalidErr("termination message is not valid UTF-8 (first bad byte at offset 7); outputs must be text"),
		},
		"4095 bytes": {msg: sized(4095), want: map[string]string{"k": strings.Repeat("v", 4093)}},
		// The kubelet cuts longer messages to exactly this size.
		"4096 bytes": {msg: sized(4096), wantErr: &OutputsError{
			Reason:  v1alpha1.ReasonOutputsTruncated,
			Message: "termination message is 4096 bytes; Kubernetes keeps at most 4096 per container, so outputs may be cut: write fewer or shorter outputs",
		}},
		"4097 bytes": {msg: sized(4097), wantErr: &OutputsError{
			Reason:  v1alpha1.ReasonOutputsTruncated,
			Message: "termination message is 4097 bytes; Kubernetes keeps at most 4096 per container, so outputs may be cut: write fewer or shorter outputs",
		}},
		"oversize wins over invalid utf8": {msg: "\xff" + sized(4096), wantErr: &OutputsError{
			Reason:  v1alpha1.ReasonOutputsTruncated,
			Message: "termination message is 4097 bytes; Kubernetes keeps at most 4096 per container, so outputs may be cut: write fewer or shorter outputs",
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, oerr := ParseOutputs(tc.msg)
			if tc.errPrefix && oerr != nil && strings.HasPrefix(oerr.Message, tc.wantErr.Message) {
				oerr = &OutputsError{Reason: oerr.Reason, Message: tc.wantErr.Message}
			}
			if diff := cmp.Diff(tc.wantErr, oerr); diff != "" {
				t.Errorf("ParseOutputs error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseOutputs (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseOutputs(f *testing.F) {
	for _, s := range []string{
		"", " ", "{}", "a=b", "a=b\r\nc=d=e\n#x\n\n", "a", "=", "a=1\na=2", "1a=b",
		`{"a":"b"}`, `{"a":1}`, `{"a":"b","a":"c"}`, `{"a":"\u0000"}`, `{"a":"b"} x`, "{", `{"a":`,
		"a=${steps.0.output.x}", "a=\xff", "\xef\xbb\xbfa=b", strings.Repeat("x", 4096),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		outs, oerr := ParseOutputs(msg)
		if oerr != nil {
			if outs != nil {
				t.Fatalf("ParseOutputs(%q) returned outputs and an error", msg)
			}
			if oerr.Reason != v1alpha1.ReasonOutputsInvalid && oerr.Reason != v1alpha1.ReasonOutputsTruncated {
				t.Fatalf("ParseOutputs(%q): unknown reason %q", msg, oerr.Reason)
			}
			return
		}
		if len(msg) >= MaxTerminationMessageBytes {
			t.Fatalf("ParseOutputs accepted a %d-byte message", len(msg))
		}
		if len(outs) > MaxOutputs {
			t.Fatalf("ParseOutputs(%q) returned %d outputs", msg, len(outs))
		}
		for k := range outs {
			if err := substitution.ValidKey(k); err != nil {
				t.Fatalf("ParseOutputs(%q) returned key %q: %v", msg, k, err)
			}
		}
		// Whatever was accepted survives a round trip through the JSON form.
		if b, err := json.Marshal(outs); err == nil && len(b) < MaxTerminationMessageBytes && outs != nil {
			again, oerr := ParseOutputs(string(b))
			if oerr != nil {
				t.Fatalf("ParseOutputs(%s): %+v", b, oerr)
			}
			if diff := cmp.Diff(outs, again); diff != "" {
				t.Fatalf("JSON round trip of %q (-first +again):\n%s", msg, diff)
			}
		}
	})
}
