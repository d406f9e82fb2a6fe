//go:build crashpoint

package crashpoint

import "testing"

func TestHitElsewhereDoesNothing(t *testing.T) {
	target, nth = JobCreated, 1
	t.Cleanup(func() { target, nth = "", 0 })
	Hit(StepTasksCreated) // another point: the test process lives on
	if hits.Load() != 0 {
		t.Errorf("hits = %d for another point", hits.Load())
	}
}
