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
