package tenant

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-sched/kubectl-sched/operator/status"
)

func TestPending(t *testing.T) {
	quota := func(pods, rv string) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "tier", Namespace: "ns", ResourceVersion: rv},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse(pods)}},
		}
	}
	cases := map[string]struct {
		written, desired, cached *corev1.ResourceQuota
		want, kept               bool
	}{
		"nothing written":                      {desired: quota("100", ""), cached: quota("5", "10")},
		"the cache is behind the write":        {written: quota("100", "20"), desired: quota("100", ""), cached: quota("5", "10"), want: true, kept: true},
		"the cache is behind, desired changed": {written: quota("100", "20"), desired: quota("50", ""), cached: quota("5", "10"), kept: true},
		"the cache holds the write":            {written: quota("100", "20"), desired: quota("100", ""), cached: quota("100", "20")},
		"the cache holds a later edit":         {written: quota("100", "20"), desired: quota("100", ""), cached: quota("5", "100")},
		"resourceVersions that do not compare": {written: quota("100", "b"), desired: quota("100", ""), cached: quota("5", "a")},
		"another object of the namespace":      {written: &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "ns", ResourceVersion: "20"}}, desired: quota("100", ""), cached: quota("5", "10"), kept: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var w status.Expectations
			if tc.written != nil {
				w.Wrote(status.KeyOf(tc.written), "", tc.written.ResourceVersion, tc.written)
			}
			if got := pending(&w, tc.desired, tc.cached); got != tc.want {
				t.Errorf("pending = %v, want %v", got, tc.want)
			}
			if kept := w.Len() == 1; kept != tc.kept {
				t.Errorf("entry kept %v, want %v", kept, tc.kept)
			}
			w.ForgetNamespace("ns")
			if w.Len() != 0 {
				t.Errorf("forget left %d entries", w.Len())
			}
		})
	}
}
