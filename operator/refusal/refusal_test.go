package refusal

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestClassify(t *testing.T) {
	job := schema.GroupResource{Group: "batch", Resource: "jobs"}
	jobKind := schema.GroupKind{Group: "batch", Kind: "Job"}
	cases := map[string]struct {
		err  error
		want ErrorClass
	}{
		"quota full": {
			err:  apierrors.NewForbidden(job, "t", errors.New("exceeded quota: jobs, requested: count/jobs.batch=1, used: count/jobs.batch=1, limited: count/jobs.batch=1")),
			want: Quota,
		},
		"quota not counted yet": {
			err:  apierrors.NewForbidden(job, "t", errors.New("status unknown for quota: jobs, resource: count/jobs.batch")),
			want: Quota,
		},
		"quota needs limits": {
			// Waiting does not add the limits the quota demands.
			err:  apierrors.NewForbidden(job, "t", errors.New("failed quota: compute: must specify limits.cpu")),
			want: Final,
		},
		"admission denied": {
			err:  apierrors.NewForbidden(job, "t", errors.New("ValidatingAdmissionPolicy 'x' denied request")),
			want: Final,
		},
		"invalid": {
			err:  apierrors.NewInvalid(jobKind, "t", field.ErrorList{field.TooLong(field.NewPath("spec", "args").Index(0), "", 4096)}),
			want: Final,
		},
		"too large":   {err: apierrors.NewRequestEntityTooLargeError("limit is 3145728"), want: Final},
		"bad request": {err: apierrors.NewBadRequest("bad"), want: Final},
		"conflict":    {err: apierrors.NewConflict(job, "t", errors.New("changed")), want: Transient},
		"server away": {err: apierrors.NewServiceUnavailable("down"), want: Transient},
		"timeout":     {err: apierrors.NewTimeoutError("slow", 1), want: Transient},
		"plain error": {err: errors.New("connection refused"), want: Transient},
		"wrapped final": {
			err:  errors.Join(errors.New("create"), apierrors.NewInvalid(jobKind, "t", nil)),
			want: Final,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Classify(tc.err); got != tc.want {
				t.Errorf("Classify(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

func TestMessageIsTheServers(t *testing.T) {
	err := apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "t", errors.New("exceeded quota: jobs"))
	if got, want := Message(err), `jobs.batch "t" is forbidden: exceeded quota: jobs`; got != want {
		t.Errorf("Message() = %q, want %q", got, want)
	}
}
