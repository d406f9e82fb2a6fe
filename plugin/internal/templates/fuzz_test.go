package templates

import (
	"testing"
)

// FuzzRender feeds arbitrary template text and values to Parse and Render:
// they may refuse, but never panic. Run it with
//
//	go test ./plugin/internal/templates -run '^$' -fuzz '^FuzzRender$' -fuzztime 20s -fuzzminimizetime 2s
//
// (the default minimisation time, 60s per new input, would use up the run).
func FuzzRender(f *testing.F) {
	ts, err := Catalog()
	if err != nil {
		f.Fatal(err)
	}
	for _, tmpl := range ts {
		f.Add(string(tmpl.Raw), "image", "nginx:1.27", "POSTGRES_PASSWORD", "x")
	}
	f.Add(doc("  - name: a\n    default: x", "  kind: AgentTask\n  spec:\n    image: ${{ a }}"), "a", "${{ a }}", "s", "")
	f.Add(doc("  - name: n\n    type: labels\n    default: a=b", "  kind: SchedExt\n  spec:\n    scheduler:\n      name: scx_x\n    nodeSelector: ${{ n }}"), "n", "a=b,c", "", "")
	f.Fuzz(func(t *testing.T, text, key, value, secretKey, secretValue string) {
		tmpl, err := Parse([]byte(text), "fuzz")
		if err != nil {
			return
		}
		in := Input{Name: "x", Namespace: "ns", Params: map[string]string{key: value}, Secrets: map[string][]byte{secretKey: []byte(secretValue)}}
		obj, _, err := tmpl.Render(in)
		if err == nil && obj.GetName() != "x" {
			t.Fatalf("rendered object named %q", obj.GetName())
		}
		// Without the fuzzed values, only the defaults.
		_, _, _ = tmpl.Render(Input{Name: "x", Namespace: "ns"})
		_ = tmpl.Expected()
	})
}

// FuzzScan checks the placeholder scanner on its own: it never panics and
// literal text without "${{" comes back unchanged.
func FuzzScan(f *testing.F) {
	for _, s := range []string{"", "${{ a }}", "$${{a}}", "${{", "}}${{a", "$$${{ b }}x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var out []byte
		err := scan(s, func(l string) { out = append(out, l...) }, func(string, int) error { return nil })
		if err == nil && !containsPlaceholder(s) && string(out) != s {
			t.Fatalf("scan(%q) changed text without placeholders to %q", s, out)
		}
	})
}

func containsPlaceholder(s string) bool {
	for i := 0; i+3 <= len(s); i++ {
		if s[i:i+3] == "${{" {
			return true
		}
	}
	return false
}
