package substitution

import (
	"errors"
	"strings"
	"testing"

	"github.com/kubectl-sched/kubectl-sched/api/substitution/substitutiontest"
)

func FuzzExpand(f *testing.F) {
	// The seeds, the tricky cases and the generated ones that the admission
	// policy is also tested with (substitutiontest).
	for _, s := range substitutiontest.Corpus() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fail := func(r Ref) (string, error) { return "", errors.New("lookup " + r.Raw) }
		empty := func(Ref) (string, error) { return "", nil }

		// Text without '$' holds nothing to expand.
		if !strings.Contains(s, "$") {
			got, err := Expand(s, fail)
			if err != nil || got != s {
				t.Fatalf("Expand(%q) = %q, %v; want it unchanged", s, got, err)
			}
		}

		// What Parse accepts, Expand can expand.
		refs, perr := Parse(s)
		got, err := Expand(s, empty)
		if perr == nil && err != nil {
			t.Fatalf("Parse(%q) succeeds but Expand fails: %v", s, err)
		}
		if perr != nil && (err == nil || err.Error() != perr.Error()) {
			t.Fatalf("Parse(%q) fails with %v but Expand returns %q, %v", s, perr, got, err)
		}
		for _, r := range refs {
			if s[r.Offset:r.Offset+len(r.Raw)] != r.Raw {
				t.Fatalf("Parse(%q): %q is not at offset %d", s, r.Raw, r.Offset)
			}
			again, err := Parse(r.Raw)
			r.Offset = 0
			if err != nil || len(again) != 1 || again[0] != r {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v", r.Raw, again, err, r)
			}
		}

		// Escaping makes any text literal.
		if back, err := Expand(Escape(s), fail); err != nil || back != s {
			t.Fatalf("Expand(Escape(%q)) = %q, %v", s, back, err)
		}

		// Single pass: expanding with a tricky value is the same as expanding
		// with a marker byte and putting the value in its place afterwards.
		if perr == nil && !strings.Contains(s, "\x00") {
			const tricky = "${steps.0.output.x}$${params.p}$"
			withValue, err1 := Expand(s, func(Ref) (string, error) { return tricky, nil })
			withMarker, err2 := Expand(s, func(Ref) (string, error) { return "\x00", nil })
			if err1 != nil || err2 != nil {
				t.Fatalf("Expand(%q): %v, %v", s, err1, err2)
			}
			if want := strings.ReplaceAll(withMarker, "\x00", tricky); withValue != want {
				t.Fatalf("Expand(%q) = %q, want %q: a value was expanded again", s, withValue, want)
			}
		}
	})
}
