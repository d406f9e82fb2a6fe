package agenttask_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestLogsRecordedWhereNodesServeNone: the simulated cluster's nodes serve
// no logs. Each attempt's pod still gets a record before it may go, which
// says why there is no log, so pruning goes on; the operator bound itself
// to read logs in the namespace, and to nothing else. (Real logs are read
// in hack/realnode.)
func TestLogsRecordedWhereNodesServeNone(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, task("unlogged", ns, 2, "boom").Retry(2, time.Second).Obj())
	got := waitTask(t, ns, "unlogged", "failed with every attempt's record", func(a *schedv1.AgentTask) bool {
		return finished(a) && len(a.Status.Logs) == 3
	})
	if got.Status.Phase != schedv1.TaskFailed || got.Status.Attempts != 3 {
		t.Fatalf("status %+v, want Failed after 3 attempts", got.Status)
	}
	var last time.Time
	for _, rec := range got.Status.Logs {
		if rec.Reason != schedv1.LogUnavailable || rec.Log != "" || !strings.Contains(rec.Message, "could not read the log from node sim-") {
			t.Errorf("pod %s: %s %q, want Unavailable saying its node served no log", rec.Pod, rec.Reason, rec.Message)
		}
		if ptr.Deref(rec.ExitCode, -1) != 2 || rec.CreationTime == nil || rec.CreationTime.Time.Before(last) {
			t.Errorf("pod %s: exit code %v, created %v: want 2, in order", rec.Pod, rec.ExitCode, rec.CreationTime)
		} else {
			last = rec.CreationTime.Time
		}
	}
	// The first attempt's record stands for it once it is pruned.
	first := got.Status.Logs[0].Pod
	if got.Status.Pruned == nil || !contains(got.Status.Pruned.Pods, first) {
		t.Errorf("pruned %+v, want the first attempt's pod %s", got.Status.Pruned, first)
	}
	waitPods(t, ns, "unlogged", "the first attempt's pod gone", func(pods []corev1.Pod) bool {
		for _, p := range pods {
			if p.Name == first {
				return false
			}
		}
		return len(pods) == 2
	})

	rb := &rbacv1.RoleBinding{}
	if err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: schedv1.OperatorPodLogsRole}, rb); err != nil {
		t.Fatalf("the operator's binding to read logs in %s: %v", ns, err)
	}
	want := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: testenv.OperatorServiceAccount, Namespace: testenv.OperatorNamespace}
	if rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != schedv1.OperatorPodLogsRole || len(rb.Subjects) != 1 || rb.Subjects[0] != want {
		t.Errorf("binding %+v to %+v, want the operator's account to ClusterRole %s", rb.Subjects, rb.RoleRef, schedv1.OperatorPodLogsRole)
	}
}
