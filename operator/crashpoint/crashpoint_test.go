package crashpoint

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]struct {
		name string
		n    int64
	}{
		"":                      {"", 1},
		JobCreated:              {JobCreated, 1},
		JobCreated + ":3":       {JobCreated, 3},
		JobCreated + ":0":       {JobCreated, 1},
		JobCreated + ":x":       {JobCreated, 1},
		StepTasksCreated + ":2": {StepTasksCreated, 2},
	} {
		name, n := parse(in)
		if name != want.name || n != want.n {
			t.Errorf("parse(%q) = %q, %d; want %q, %d", in, name, n, want.name, want.n)
		}
	}
}

func TestHitElsewhereDoesNothing(t *testing.T) {
	target, nth = JobCreated, 1
	t.Cleanup(func() { target, nth = "", 0 })
	Hit(StepTasksCreated) // another point: the test process lives on
	if hits.Load() != 0 {
		t.Errorf("hits = %d for another point", hits.Load())
	}
}
