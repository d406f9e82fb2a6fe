package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestJoin(t *testing.T) {
	long := strings.Repeat("a", 60)
	cases := map[string]struct {
		parts []string
		want  string
	}{
		"short stays as is":   {parts: []string{"wf", "0", "fetch"}, want: "wf-0-fetch"},
		"exactly 63 is kept":  {parts: []string{strings.Repeat("b", 63)}, want: strings.Repeat("b", 63)},
		"over 63 is hashed":   {parts: []string{long, "1", "build"}, want: strings.Repeat("a", 54) + "-" + hashOf(long+"-1-build")},
		"no dash before hash": {parts: []string{strings.Repeat("c", 53) + "-xxxxxxxxxx", "yy"}, want: strings.Repeat("c", 53) + "-" + hashOf(strings.Repeat("c", 53)+"-xxxxxxxxxx-yy")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Join(tc.parts...)
			if got != tc.want {
				t.Errorf("Join(%q) = %q, want %q", tc.parts, got, tc.want)
			}
			if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
				t.Errorf("%q is not a DNS label: %v", got, errs)
			}
		})
	}
}

func TestJoinKeepsLongNamesApart(t *testing.T) {
	a := StepTask(strings.Repeat("w", 60), 1, "step")
	b := StepTask(strings.Repeat("w", 60), 2, "step")
	if a == b {
		t.Errorf("two steps share the task name %q", a)
	}
	if len(a) != MaxLength {
		t.Errorf("len(%q) = %d, want %d", a, len(a), MaxLength)
	}
}

// hashOf is written out here, not taken from the package, so a change to
// the hashing shows up as a failing test: derived names must not change
// between releases or a restart would miss existing objects.
func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}

func TestHostPrefixKeepsNamespacesApart(t *testing.T) {
	cases := []struct{ app, namespace, want string }{
		{"shop", "default", "shop.default"},
		{"a-b", "c", "a-b.c"},
		{"a", "b-c", "a.b-c"},
	}
	seen := map[string]string{}
	for _, tc := range cases {
		got := HostPrefix(tc.app, tc.namespace)
		if got != tc.want {
			t.Errorf("HostPrefix(%q, %q) = %q, want %q", tc.app, tc.namespace, got, tc.want)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("%s/%s and %s share %q", tc.namespace, tc.app, other, got)
		}
		seen[got] = tc.namespace + "/" + tc.app
		if errs := validation.IsDNS1123Subdomain(got + ".apps.example.com"); len(errs) > 0 {
			t.Errorf("%q: %v", got, errs)
		}
	}
}

func TestFinallyTask(t *testing.T) {
	if got := FinallyTask("release", 0, "notify"); got != "release-finally0-notify" {
		t.Errorf("FinallyTask = %q", got)
	}
	long := FinallyTask(strings.Repeat("w", 63), 7, strings.Repeat("s", 40))
	if len(long) > MaxLength || long == FinallyTask(strings.Repeat("w", 63), 6, strings.Repeat("s", 40)) {
		t.Errorf("long names: %q (%d), not kept apart or over %d", long, len(long), MaxLength)
	}
	for label, want := range map[string]int{"finally0": 0, "finally12": 12} {
		if i, ok := ParseFinallyStep(label); !ok || i != want {
			t.Errorf("ParseFinallyStep(%q) = %d, %v", label, i, ok)
		}
	}
	for _, label := range []string{"0", "finally", "finally-1", "finally01", "finallyx"} {
		if _, ok := ParseFinallyStep(label); ok {
			t.Errorf("ParseFinallyStep(%q) took it for a finally step", label)
		}
	}
}

// TestCronRunNamesFit: the longest CronWorkflow name the API allows gives
// runs of at most 63 characters, with the schedule time in them whole.
func TestCronRunNamesFit(t *testing.T) {
	at := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	longest := strings.Repeat("n", 45)
	for _, tc := range []struct{ got, want string }{
		{CronRun("nightly", at), "nightly-1795744800"},
		{ManualCronRun("nightly", at), "nightly-manual-1795744800"},
		{CronRun(longest, at), longest + "-1795744800"},
		{ManualCronRun(longest, at), longest + "-manual-1795744800"},
	} {
		if tc.got != tc.want || len(tc.got) > MaxLength {
			t.Errorf("got %q (%d characters), want %q", tc.got, len(tc.got), tc.want)
		}
	}
}

func TestItemTask(t *testing.T) {
	if got := ItemTask("rel", 2, "deploy", 7); got != "rel-2-deploy-7" {
		t.Errorf("ItemTask = %q", got)
	}
	if got := FinallyItemTask("rel", 0, "notify", 3); got != "rel-finally0-notify-3" {
		t.Errorf("FinallyItemTask = %q", got)
	}
	// Long names: every item of a step keeps a name of its own, within 63.
	seen := map[string]bool{StepTask(strings.Repeat("w", 50), 1, "deploy"): true}
	for i := range 100 {
		n := ItemTask(strings.Repeat("w", 50), 1, "deploy", i)
		if seen[n] || len(n) > MaxLength {
			t.Fatalf("item %d: %q taken or longer than %d", i, n, MaxLength)
		}
		seen[n] = true
	}
}

func TestWorkspaceClaim(t *testing.T) {
	if got := WorkspaceClaim("ci", "src"); got != "ci-ws-src" {
		t.Errorf("WorkspaceClaim = %q", got)
	}
	// The longest workflow and workspace names: a DNS label within 63,
	// and each of a run's four workspaces a claim of its own.
	wf := strings.Repeat("w", 253)
	seen := map[string]bool{}
	for _, ws := range []string{strings.Repeat("a", 40), strings.Repeat("a", 39) + "b", "src", "cache"} {
		n := WorkspaceClaim(wf, ws)
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 || seen[n] {
			t.Errorf("%q: %v, or taken", n, errs)
		}
		seen[n] = true
	}
}
