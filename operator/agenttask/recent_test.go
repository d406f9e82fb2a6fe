package agenttask

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestRecentUIDs: a time is remembered for a minute, not longer, and
// what is older than a minute is dropped as new releases come.
func TestRecentUIDs(t *testing.T) {
	var p recentUIDs
	start := t0.Time
	p.add("a", start)
	cases := map[string]struct {
		uid  string
		at   time.Duration
		want bool
	}{
		"just released":         {"a", time.Second, true},
		"released 59s ago":      {"a", 59 * time.Second, true},
		"released a minute ago": {"a", time.Minute, false},
		"never released":        {"b", time.Second, false},
		"released long ago":     {"a", time.Hour, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := p.recent(types.UID(tc.uid), start.Add(tc.at)); got != tc.want {
				t.Errorf("recent(%s) after %v = %v, want %v", tc.uid, tc.at, got, tc.want)
			}
		})
	}
	// A release two minutes later drops the first: the memory stays bounded
	// by what the last minute brought.
	p.add("c", start.Add(2*time.Minute))
	if len(p.times) != 1 {
		t.Errorf("remembered %v, want only c", p.times)
	}
	p.forget("c")
	if _, ok := p.at("c"); ok {
		t.Error("c is remembered after forget")
	}
}
