package recent

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

// TestTimes: a time is kept for a minute, not longer; what is older than a
// minute is dropped as new times come, so what is kept stays bounded.
func TestTimes(t *testing.T) {
	var tt Times
	tt.Add("a", t0)
	cases := map[string]struct {
		uid  types.UID
		at   time.Duration
		want bool
	}{
		"just added":         {"a", time.Second, true},
		"added 59s ago":      {"a", 59 * time.Second, true},
		"added a minute ago": {"a", time.Minute, false},
		"never added":        {"b", time.Second, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tt.Within(tc.uid, t0.Add(tc.at)); got != tc.want {
				t.Errorf("Within(%s) after %v = %v, want %v", tc.uid, tc.at, got, tc.want)
			}
		})
	}
	tt.Add("c", t0.Add(2*time.Minute))
	if tt.Len() != 1 {
		t.Errorf("%d times kept, want only c's", tt.Len())
	}
	tt.Forget("c")
	if _, ok := tt.At("c"); ok {
		t.Error("c is kept after Forget")
	}
	// A version is kept with its time, and goes with it.
	tt.AddVersion("d", t0.Add(2*time.Minute), "42")
	if v := tt.Version("d"); v != "42" {
		t.Errorf("Version(d) = %q, want 42", v)
	}
	tt.Add("d", t0.Add(2*time.Minute))
	if v := tt.Version("d"); v != "" {
		t.Errorf("Version(d) after Add = %q, want none", v)
	}
	tt.AddVersion("e", t0.Add(4*time.Minute), "43")
	if v := tt.Version("d"); v != "" || tt.Len() != 1 {
		t.Errorf("d's version %q kept past a minute, %d times kept", v, tt.Len())
	}
}

func TestStatusWait(t *testing.T) {
	var written Times
	written.Add("w", t0)
	cases := map[string]struct {
		uid     types.UID
		created time.Time
		now     time.Time
		want    time.Duration
	}{
		"right after a write":    {"w", t0.Add(-time.Hour), t0.Add(300 * time.Millisecond), 700 * time.Millisecond},
		"a second after a write": {"w", t0.Add(-time.Hour), t0.Add(time.Second), 0},
		// Its creation timestamp has whole seconds: a second from when
		// it is first seen, not from the start of the second it was
		// created in.
		"never written, first seen just after created":  {"new", t0, t0.Add(200 * time.Millisecond), time.Second},
		"never written, first seen in the second after": {"new2", t0, t0.Add(1500 * time.Millisecond), 500 * time.Millisecond},
		"never written, created long ago":               {"old", t0.Add(-time.Hour), t0, -time.Hour + 2*time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := StatusWait(&written, tc.uid, tc.created, tc.now); got != tc.want {
				t.Errorf("StatusWait = %v, want %v", got, tc.want)
			}
		})
	}
	// Seen again later, a young object's wait runs from its first sight.
	if got := StatusWait(&written, "new", t0, t0.Add(900*time.Millisecond)); got != 300*time.Millisecond {
		t.Errorf("StatusWait of new, 700ms after it was first seen = %v, want 300ms", got)
	}
}
