package tenant

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestRecountSchedule: the first request at once, then every 5s for a
// minute, then doubling up to 5 minutes; a counted quota starts over.
func TestRecountSchedule(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	r := &recounts{clock: clk}
	step := func(after time.Duration, want time.Duration) {
		t.Helper()
		clk.SetTime(start.Add(after))
		wait, s := r.due("ns")
		if wait != want {
			t.Errorf("at %s: wait %s, want %s", after, wait, want)
		}
		if wait == 0 {
			r.asked(s)
		}
	}
	step(0, 0)
	step(time.Second, 4*time.Second)
	step(5*time.Second, 0)
	step(55*time.Second, 0)
	step(61*time.Second, 4*time.Second) // asked at 55s, every 10s past the first minute
	step(65*time.Second, 0)
	step(2*time.Minute+5*time.Second, 0)
	step(2*time.Minute+10*time.Second, 15*time.Second) // every 20s past two minutes
	step(time.Hour, 0)
	step(time.Hour+time.Minute, 4*time.Minute) // capped at 5 minutes
	r.forget("ns")
	step(time.Hour+time.Minute, 0)
}
