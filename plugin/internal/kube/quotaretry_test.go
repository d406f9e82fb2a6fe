package kube

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestQuotaConflict(t *testing.T) {
	quota := apierrors.NewConflict(schema.GroupResource{Resource: "resourcequotas"}, "kubectl-sched-tier",
		errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"the quota admission conflict", quota, true},
		{"wrapped", fmt.Errorf("creating task: %w", quota), true},
		{"a conflict on the object itself", apierrors.NewConflict(schema.GroupResource{Group: "sched.io", Resource: "agenttasks"}, "t", errors.New("modified")), false},
		{"a quota that is full", apierrors.NewForbidden(schema.GroupResource{Resource: "agenttasks"}, "t", errors.New("exceeded quota: kubectl-sched-tier")), false},
		{"not an API error", errors.New("resourcequotas"), false},
		{"nil", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := quotaConflict(tc.err); got != tc.want {
				t.Errorf("quotaConflict(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestRetryQuotaConflict(t *testing.T) {
	quota := apierrors.NewConflict(schema.GroupResource{Resource: "resourcequotas"}, "q", errors.New("modified"))
	calls := 0
	err := retryQuotaConflict(func() error {
		calls++
		if calls < 3 {
			return quota
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("two conflicts then success: err %v after %d calls, want nil after 3", err, calls)
	}

	calls = 0
	full := apierrors.NewForbidden(schema.GroupResource{Resource: "agenttasks"}, "t", errors.New("exceeded quota"))
	if err := retryQuotaConflict(func() error { calls++; return full }); !apierrors.IsForbidden(err) || calls != 1 {
		t.Errorf("a full quota: err %v after %d calls, want Forbidden after 1", err, calls)
	}

	calls = 0
	if err := retryQuotaConflict(func() error { calls++; return quota }); !quotaConflict(err) || calls != quotaBackoff.Steps {
		t.Errorf("conflicts every time: err %v after %d calls, want the conflict after %d", err, calls, quotaBackoff.Steps)
	}
}
