package status

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

// TestUnseen: a write is expected until the cache holds its version or a
// later one; a cache at the version the write was made against, or at an
// older one, has not seen it. Versions that do not compare, a write that
// made no new version and another object's write expect nothing.
func TestUnseen(t *testing.T) {
	w := Key{Kind: "*v1.ResourceQuota", Namespace: "ns", Name: "tier"}
	other := Key{Kind: "*v1.ResourceQuota", Namespace: "ns", Name: "other"}
	cases := map[string]struct {
		key            Key
		from, to       string
		cached         string
		unseen, kept   bool
		wantSent       any
		noWriteWritten bool
	}{
		"nothing written":                  {key: w, noWriteWritten: true, cached: "10"},
		"the cache at the write's base":    {key: w, from: "10", to: "11", cached: "10", unseen: true, kept: true, wantSent: "sent"},
		"the cache older than the write":   {key: w, to: "20", cached: "10", unseen: true, kept: true, wantSent: "sent"},
		"the cache holds the write":        {key: w, from: "10", to: "20", cached: "20"},
		"the cache past the write":         {key: w, from: "10", to: "11", cached: "11"},
		"the cache holds a later edit":     {key: w, to: "20", cached: "100"},
		"versions that do not compare":     {key: w, to: "b", cached: "a"},
		"a write that made no new version": {key: w, from: "10", to: "10", cached: "10"},
		"another object's write":           {key: other, from: "10", to: "20", cached: "10", kept: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := &Expectations{Clock: clocktesting.NewFakePassiveClock(t0)}
			if !tc.noWriteWritten {
				e.Wrote(tc.key, tc.from, tc.to, "sent")
			}
			sent, unseen := e.Unseen(w, tc.cached)
			if unseen != tc.unseen || sent != tc.wantSent {
				t.Errorf("Unseen = %v, %v; want %v, %v", sent, unseen, tc.wantSent, tc.unseen)
			}
			if kept := e.Len() == 1; kept != tc.kept {
				t.Errorf("expectation kept %v, want %v", kept, tc.kept)
			}
			e.ForgetNamespace("ns")
			if e.Len() != 0 {
				t.Errorf("ForgetNamespace left %d", e.Len())
			}
		})
	}
}

// TestExpectationsLastAMinute: what the cache has not shown a minute
// after it was recorded is no longer expected, and the expired entries
// go as new ones come, so what is kept stays bounded.
func TestExpectationsLastAMinute(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(t0)
	e := &Expectations{Clock: clock}
	a, b := Key{Name: "a", UID: "a"}, Key{Name: "b", UID: "b"}
	e.Wrote(a, "1", "2", nil)
	e.ExpectCreates(b, 1)
	steps := []struct {
		at              time.Duration
		unseen, pending bool
	}{
		{time.Second, true, true},
		{59 * time.Second, true, true},
		{time.Minute, false, false},
	}
	for _, s := range steps {
		clock.SetTime(t0.Add(s.at))
		if _, unseen := e.Unseen(a, "1"); unseen != s.unseen {
			t.Errorf("after %v: write unseen %v, want %v", s.at, unseen, s.unseen)
		}
		if p := e.CreatesPending(b); p != s.pending {
			t.Errorf("after %v: creates pending %v, want %v", s.at, p, s.pending)
		}
	}
	clock.SetTime(t0.Add(2 * time.Minute))
	e.ExpectCreates(Key{Name: "c"}, 1)
	if e.Len() != 1 {
		t.Errorf("%d expectations kept, want only c's", e.Len())
	}
}

// TestCreates: creates are expected until as many are observed (a failed
// create is observed too); then nothing is left of them.
func TestCreates(t *testing.T) {
	e := &Expectations{Clock: clocktesting.NewFakePassiveClock(t0)}
	k := Key{Namespace: "ns", Name: "t", UID: "u"}
	steps := []struct {
		name string
		do   func()
		want bool
	}{
		{"nothing expected", func() {}, false},
		{"two created", func() { e.ExpectCreates(k, 2) }, true},
		{"one seen", func() { e.CreatesObserved(k, 1) }, true},
		{"another object's seen", func() { e.CreatesObserved(Key{Name: "x"}, 1) }, true},
		{"both seen", func() { e.CreatesObserved(k, 1) }, false},
		{"seen again", func() { e.CreatesObserved(k, 1) }, false},
		{"one more, forgotten", func() { e.ExpectCreates(k, 1); e.Forget(k) }, false},
	}
	for _, s := range steps {
		s.do()
		if got := e.CreatesPending(k); got != s.want {
			t.Errorf("%s: CreatesPending = %v, want %v", s.name, got, s.want)
		}
	}
	if e.Len() != 0 {
		t.Errorf("%d expectations left", e.Len())
	}
}
