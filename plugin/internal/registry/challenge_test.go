package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseChallenge(t *testing.T) {
	cases := map[string]struct {
		scheme string
		params map[string]string
	}{
		`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/busybox:pull"`: {
			"Bearer", map[string]string{"realm": "https://auth.docker.io/token", "service": "registry.docker.io", "scope": "repository:library/busybox:pull"}},
		`Bearer realm="https://r.example.com/t", scope="repository:a:pull,push"`: {
			"Bearer", map[string]string{"realm": "https://r.example.com/t", "scope": "repository:a:pull,push"}},
		`Basic realm="Registry Realm"`:         {"Basic", map[string]string{"realm": "Registry Realm"}},
		`Bearer Realm=https://x/t,Service=reg`: {"Bearer", map[string]string{"realm": "https://x/t", "service": "reg"}},
		`Bearer realm="a \"quoted\" realm"`:    {"Bearer", map[string]string{"realm": `a "quoted" realm`}},
		`Bearer realm="unterminated`:           {"Bearer", map[string]string{"realm": "unterminated"}},
		``:                                     {"", map[string]string{}},
	}
	for h, want := range cases {
		scheme, params := parseChallenge(h)
		if scheme != want.scheme || !cmp.Equal(params, want.params) {
			t.Errorf("parseChallenge(%q) = %q, %v; want %q, %v", h, scheme, params, want.scheme, want.params)
		}
	}
}
