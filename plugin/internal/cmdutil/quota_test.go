package cmdutil

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var tasks = schema.GroupResource{Group: "sched.kubectl-sched.dev", Resource: "agenttasks"}

func TestQuotaRefusalOf(t *testing.T) {
	cases := map[string]struct {
		err  error
		want *QuotaRefusal
	}{
		"exceeded": {
			err: apierrors.NewForbidden(tasks, "x", errors.New("exceeded quota: kubectl-sched-tier, requested: count/agenttasks.sched.kubectl-sched.dev=1,pods=1, used: count/agenttasks.sched.kubectl-sched.dev=20,pods=3, limited: count/agenttasks.sched.kubectl-sched.dev=20,pods=3")),
			want: &QuotaRefusal{Quota: "kubectl-sched-tier", Exceeded: []QuotaExceeded{
				{Resource: "count/agenttasks.sched.kubectl-sched.dev", Requested: "1", Used: "20", Limited: "20"},
				{Resource: "pods", Requested: "1", Used: "3", Limited: "3"},
			}},
		},
		"status unknown": {
			err:  apierrors.NewForbidden(tasks, "x", errors.New("status unknown for quota: kubectl-sched-tier, resources: count/agenttasks.sched.kubectl-sched.dev,count/jobs.batch")),
			want: &QuotaRefusal{Quota: "kubectl-sched-tier", Unknown: []string{"count/agenttasks.sched.kubectl-sched.dev", "count/jobs.batch"}},
		},
		"RBAC":          {err: apierrors.NewForbidden(tasks, "x", errors.New(`User "bob" cannot create resource "agenttasks"`))},
		"not forbidden": {err: errors.New("exceeded quota: q, requested: a=1, used: a=1, limited: a=1")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, QuotaRefusalOf(tc.err)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestAPIExitCodes(t *testing.T) {
	quota := apierrors.NewForbidden(tasks, "x", errors.New("exceeded quota: q, requested: count/x=1, used: count/x=2, limited: count/x=2"))
	policy := apierrors.NewForbidden(tasks, "x", errors.New("ValidatingAdmissionPolicy 'kubectl-sched-tier-ttl' with binding 'kubectl-sched-tier-ttl' denied request: spec.ttlAfterFinished 168h0m0s: tier free keeps finished tasks at most 24h"))
	rbac := apierrors.NewForbidden(tasks, "x", errors.New(`User "bob" cannot create resource "agenttasks" in API group "sched.kubectl-sched.dev" in the namespace "payments"`))
	for _, tc := range []struct {
		err  error
		code int
		msg  string
	}{
		{quota, ExitQuota, `cannot create agenttasks "x": quota q is full (count/x: 2 used of 2, 1 more asked)`},
		{policy, ExitInvalid, `the cluster refused agenttasks "x": spec.ttlAfterFinished 168h0m0s: tier free keeps finished tasks at most 24h`},
		{rbac, ExitForbidden, `forbidden: user "bob" may not create agenttasks.sched.kubectl-sched.dev "x" in namespace "payments"`},
	} {
		err := API(tc.err, "create", `agenttasks "x"`)
		var e *Error
		if !errors.As(err, &e) || e.Code != tc.code || e.Msg != tc.msg {
			t.Errorf("API(%v) = %v (%+v), want exit %d with %q", tc.err, err, e, tc.code, tc.msg)
		}
	}
}
