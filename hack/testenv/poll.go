package testenv

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// The waits the operator's package tests share. Each bounds how long a
// test waits for the operator to get somewhere, on a machine other tests
// load too; none is a speed target (benchmarks measure speed).
const (
	// Interval is how often a wait looks again.
	Interval = 100 * time.Millisecond
	// ShortTimeout bounds a wait for what a controller does in a reconcile
	// or two on envtest, with no pods.
	ShortTimeout = 30 * time.Second
	// Timeout bounds a wait for what a controller does in a few
	// reconciles, pods on the simulated cluster included.
	Timeout = 60 * time.Second
	// LongTimeout bounds a wait for a chain of them: a workflow's steps,
	// one pod after another.
	LongTimeout = 90 * time.Second
)

// Eventually calls cond every interval until it returns nil, and fails
// the test with cond's last error when timeout passes first.
func Eventually(t testing.TB, interval, timeout time.Duration, what string, cond func(context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), interval, timeout, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, last)
	}
}

// EventuallyWithin is Eventually every Interval.
func EventuallyWithin(t testing.TB, timeout time.Duration, what string, cond func(context.Context) error) {
	t.Helper()
	Eventually(t, Interval, timeout, what, cond)
}

// Poll calls cond every Interval until it is done, and fails the test
// when cond returns an error (at once: it is not retried) or timeout
// passes first.
func Poll(t testing.TB, timeout time.Duration, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), Interval, timeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
