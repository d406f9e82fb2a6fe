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
		"right after a write":             {"w", t0.Add(-time.Hour), t0.Add(300 * time.Millisecond), 700 * time.Millisecond},
		"a second after a write":          {"w", t0.Add(-time.Hour), t0.Add(time.Second), 0},
		"never written, just created":     {"new", t0, t0.Add(200 * time.Millisecond), 800 * time.Millisecond},
		"never written, created long ago": {"old", t0.Add(-time.Hour), t0, -time.Hour + time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := StatusWait(&written, tc.uid, tc.created, tc.now); got != tc.want {
				t.Errorf("StatusWait = %v, want %v", got, tc.want)
			}
		})
	}
}
