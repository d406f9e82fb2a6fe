package secretstore

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTemplateProblem(t *testing.T) {
	for tmpl, want := range map[string]string{
		"":                       "",
		"{{namespace}}/":         "",
		"tenants/{{namespace}}/": "",
		"{{namespace}}":          "must end in /",
		"apps/":                  "must hold {{namespace}}",
	} {
		got := TemplateProblem(tmpl)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("TemplateProblem(%q) = %q, want %q", tmpl, got, want)
		}
	}
}

func TestCovered(t *testing.T) {
	for _, tc := range []struct {
		prefix   string
		reserved []string
		want     string
	}{
		{"secret/", []string{"secret"}, "secret"},
		{"kv/", []string{"kv/tenants"}, "kv/tenants"},
		{"shared/", []string{"secret", "shared"}, "shared"},
		{"secrets/", []string{"secret"}, ""},
		{"tenants/secret/", []string{"secret"}, ""},
		{"secret/", nil, ""},
	} {
		if got := Covered(tc.prefix, tc.reserved); got != tc.want {
			t.Errorf("Covered(%q, %q) = %q, want %q", tc.prefix, tc.reserved, got, tc.want)
		}
	}
}

func TestOutside(t *testing.T) {
	for key, want := range map[string]bool{
		"ns/db":          false,
		"ns/a/b":         false,
		"ns-b/db":        true,
		"other/db":       true,
		"ns/../other/db": true,
		"/ns/db":         true,
		"ns/a..b":        false,
	} {
		if got := Outside(key, "ns/"); got != want {
			t.Errorf("Outside(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestParsePaths(t *testing.T) {
	if diff := cmp.Diff([]string{"kv/tenants", "shared"}, ParsePaths(" /kv/tenants/ ,, shared")); diff != "" {
		t.Errorf("ParsePaths (-want +got):\n%s", diff)
	}
}
