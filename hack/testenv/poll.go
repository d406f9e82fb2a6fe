package testenv

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
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
