package docgen

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSlug: anchors as GitHub makes them (github-slugger).
func TestSlug(t *testing.T) {
	cases := map[string]string{
		"Apps without a template: deploy --image, scale, set": "apps-without-a-template-deploy---image-scale-set",
		"What is cleaned up, and when":                        "what-is-cleaned-up-and-when",
		"spec.steps[].task":                                   "specstepstask",
		"kubectl sched placement explain":                     "kubectl-sched-placement-explain",
		"Loops (forEach)":                                     "loops-foreach",
		"Why hack/cluster, not kwokctl":                       "why-hackcluster-not-kwokctl",
		"A tenant's first day → the free tier":                "a-tenants-first-day--the-free-tier",
		"Größe_and 2×":                                        "größe_and-2",
	}
	for text, want := range cases {
		if got := Slug(text); got != want {
			t.Errorf("Slug(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestAnchors(t *testing.T) {
	md := "# Title\n\n## `spec.retry`\n\n## Repeat\n\n```sh\n# not a heading\n```\n\n## Repeat\n\n### [Linked](x.md) heading ##\n\n<a id=\"custom\"></a>\n#no-space is not a heading\n"
	got := Anchors(md)
	want := map[string]bool{"title": true, "specretry": true, "repeat": true, "repeat-1": true, "linked-heading": true, "custom": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Anchors (-want +got):\n%s", diff)
	}
}

func TestLinks(t *testing.T) {
	md := "See [a](a.md), [b](b.md#x \"title\") and ![img](i.png).\n" +
		"Not `[c](c.md)` in code.\n\n```\n[d](d.md)\n```\n~~~\n[e](e.md)\n~~~\n[ref]: ref.md\n<https://example.org> [f](<f g.md>)\n"
	var got []Link
	got = append(got, Links(md)...)
	want := []Link{{1, "a.md"}, {1, "b.md#x"}, {1, "i.png"}, {10, "ref.md"}, {11, "f g.md"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Links (-want +got):\n%s", diff)
	}
}

func TestEscapeProse(t *testing.T) {
	cases := map[string]string{
		"named <app>.<ns> here":        "named &lt;app&gt;.&lt;ns&gt; here",
		"code `<app>|*` stays":         "code `<app>|*` stays",
		"*.example.org and scx_[a-z]+": `\*.example.org and scx_[a-z]+`,
		"an _emphasis_ try":            `an \_emphasis_ try`,
	}
	for in, want := range cases {
		if got := escapeProse(in); got != want {
			t.Errorf("escapeProse(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := cell("a | b\nc"), `a \| b c`; got != want {
		t.Errorf("cell = %q, want %q", got, want)
	}
}

// TestCELMessage: a messageExpression read as the message it makes.
func TestCELMessage(t *testing.T) {
	vars := map[string]string{"fixed": "it cannot change"}
	cases := map[string]string{
		`'spec.steps: ' + variables.fixed`: "spec.steps: it cannot change",
		`variables.field + variables.ttl + ': tier ' + variables.tier + (variables.default != '' ? ' (default ' + variables.default + ')' : '')`: "⟨field⟩⟨ttl⟩: tier ⟨tier⟩ (default ⟨default⟩)",
		`'allowed: ' + (size(variables.classes) == 0 ? 'none' : variables.classes.join(', '))`:                                                   "allowed: ⟨classes⟩",
		`'user ' + request.userInfo.username + ' may not'`:                                                                                       "user ⟨username⟩ may not",
		`'took ' + string(object.spec.count) + ' of ' + string(100)`:                                                                             "took ⟨count⟩ of 100",
	}
	for expr, want := range cases {
		got, ok := celMessage(expr, vars)
		if !ok || got != want {
			t.Errorf("celMessage(%s) = %q, %v; want %q", expr, got, ok, want)
		}
	}
	if _, ok := celMessage("'unterminated", nil); ok {
		t.Error("celMessage of a broken expression says ok")
	}
	if celIsText("a == b") || celIsText("a.split(',') + ['b']") || !celIsText("'x' + y") || !celIsText("y + z + 'x'") || !celIsText("'x'") {
		t.Error("celIsText misreads what makes text")
	}
}
