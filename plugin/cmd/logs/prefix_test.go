package logs

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Two streams written in pieces: each line comes out whole, behind its
// prefix; colour only when asked, one colour per stream.
func TestPrefixWriter(t *testing.T) {
	const (
		cyan, green, reset = "\033[36m", "\033[32m", "\033[0m"
	)
	cases := map[string]struct {
		color bool
		want  string
	}{
		"plain": {want: `[web shop-web-7c9d-x2] GET / 200
[api shop-api-55f-k8] listening on :8080
[web shop-web-7c9d-x2] GET /health 200
[api shop-api-55f-k8] größe ✓ 日本
[api shop-api-55f-k8] no newline at the end
`},
		"colour": {color: true, want: cyan + "[web shop-web-7c9d-x2]" + reset + " GET / 200\n" +
			green + "[api shop-api-55f-k8]" + reset + " listening on :8080\n" +
			cyan + "[web shop-web-7c9d-x2]" + reset + " GET /health 200\n" +
			green + "[api shop-api-55f-k8]" + reset + " größe ✓ 日本\n" +
			green + "[api shop-api-55f-k8]" + reset + " no newline at the end\n"},
	}
	for name, tc := range cases {
		color := tc.color
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			w := newPrefixWriter(&out, color)
			web, api := w.For("web shop-web-7c9d-x2"), w.For("api shop-api-55f-k8")
			for _, step := range []struct {
				w    interface{ Write([]byte) (int, error) }
				text string
			}{
				{web, "GET / 200\nGET /he"},
				{api, "listening on :8080\n"},
				{web, "alth 200\n"},
				{api, "größe ✓ 日本\r\nno newline at the end"},
			} {
				if _, err := step.w.Write([]byte(step.text)); err != nil {
					t.Fatal(err)
				}
			}
			_ = web.Close()
			_ = api.Close()
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

// A log line and a prefix reach the terminal with no control in them: a
// carriage return would let one pod's line rewrite its prefix as another's.
func TestPrefixWriterEscapes(t *testing.T) {
	var out bytes.Buffer
	w := newPrefixWriter(&out, false)
	lw := w.For("web pod\x1b[2J")
	if _, err := lw.Write([]byte("ok\r[api other-pod] forged\x1b]52;c;eA==\x07\tend\n")); err != nil {
		t.Fatal(err)
	}
	want := "[web pod^[[2J] ok^M[api other-pod] forged^[]52;c;eA==^G\tend\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
