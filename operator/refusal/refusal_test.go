package refusal

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
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

func TestGivesRoom(t *testing.T) {
	status := func(hard, used map[string]string) corev1.ResourceQuotaStatus {
		list := func(m map[string]string) corev1.ResourceList {
			if m == nil {
				return nil
			}
			out := corev1.ResourceList{}
			for k, v := range m {
				out[corev1.ResourceName(k)] = resource.MustParse(v)
			}
			return out
		}
		return corev1.ResourceQuotaStatus{Hard: list(hard), Used: list(used)}
	}
	hard := map[string]string{"pods": "10", "requests.cpu": "4"}
	cases := map[string]struct {
		old, cur corev1.ResourceQuotaStatus
		want     bool
	}{
		"usage goes up":         {old: status(hard, map[string]string{"pods": "3", "requests.cpu": "1"}), cur: status(hard, map[string]string{"pods": "4", "requests.cpu": "1500m"})},
		"nothing changes":       {old: status(hard, map[string]string{"pods": "3"}), cur: status(hard, map[string]string{"pods": "3"})},
		"usage goes down":       {old: status(hard, map[string]string{"pods": "3", "requests.cpu": "1"}), cur: status(hard, map[string]string{"pods": "4", "requests.cpu": "500m"}), want: true},
		"a limit is raised":     {old: status(hard, map[string]string{"pods": "10"}), cur: status(map[string]string{"pods": "20", "requests.cpu": "4"}, map[string]string{"pods": "10"}), want: true},
		"a limit is removed":    {old: status(hard, map[string]string{"pods": "10"}), cur: status(map[string]string{"requests.cpu": "4"}, map[string]string{"pods": "10"}), want: true},
		"counted for the first": {old: status(hard, map[string]string{"pods": "3"}), cur: status(hard, map[string]string{"pods": "3", "requests.cpu": "0"}), want: true},
		"no longer counted":     {old: status(hard, map[string]string{"pods": "3", "requests.cpu": "1"}), cur: status(hard, map[string]string{"pods": "3"}), want: true},
		"synced for the first":  {old: status(nil, nil), cur: status(hard, map[string]string{"pods": "0", "requests.cpu": "0"}), want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := givesRoom(tc.old, tc.cur); got != tc.want {
				t.Errorf("givesRoom = %v, want %v", got, tc.want)
			}
		})
	}
}
