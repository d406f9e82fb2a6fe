package agenttask_test

import (
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestLogsRecordedWhereNodesServeNone: the simulated cluster's nodes serve
// no logs. Each attempt's pod still gets a record before it may go, which
// says why there is no log (never naming another namespace's pod), so
// pruning goes on; the operator may read logs only where it bound itself
// to, and to nothing else. (Real logs are read in hack/test/realnode.)
func TestLogsRecordedWhereNodesServeNone(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	// Its generated RBAC does not let the operator read logs.
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + testenv.OperatorNamespace + ":" + testenv.OperatorServiceAccount,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + testenv.OperatorNamespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "pods", Subresource: "log"},
	}}
	if err := sim.Client.Create(t.Context(), sar); err != nil || sar.Status.Allowed {
		t.Fatalf("before any task, the operator may read logs in %s: %v %+v", ns, err, sar.Status)
	}
	create(t, task("unlogged", ns, 2, "boom").Retry(2, 0).Obj())
	got := waitTask(t, ns, "unlogged", "failed with every attempt's record", func(a *schedv1.AgentTask) bool {
		return finished(a) && len(a.Status.Logs) == 3
	})
	if got.Status.Phase != schedv1.TaskFailed || got.Status.Attempts != 3 {
		t.Fatalf("status %+v, want Failed after 3 attempts", got.Status)
	}
	var last time.Time
	for _, rec := range got.Status.Logs {
		// Read, or not asked when another read found the node quiet.
		if rec.Reason != schedv1.LogUnavailable || rec.Log != "" || !strings.Contains(rec.Message, "could not read the log from node sim-") && !strings.Contains(rec.Message, "could read no log from node sim-") {
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

	// A record of another namespace's never names its pod.
	for _, rec := range got.Status.Logs {
		if strings.Contains(rec.Message, "/containerLogs/") && !strings.Contains(rec.Message, "/containerLogs/"+ns+"/"+rec.Pod+"/") {
			t.Errorf("pod %s's record names another pod: %s", rec.Pod, rec.Message)
		}
	}
	// The binding is made when a read is refused; the operator does not
	// ask a node it found quiet for another task (hack/test/realnode reads
	// real logs through it).
	rb := &rbacv1.RoleBinding{}
	if err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: schedv1.OperatorPodLogsRole}, rb); apierrors.IsNotFound(err) {
		return
	} else if err != nil {
		t.Fatal(err)
	}
	want := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: testenv.OperatorServiceAccount, Namespace: testenv.OperatorNamespace}
	if rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != schedv1.OperatorPodLogsRole || len(rb.Subjects) != 1 || rb.Subjects[0] != want {
		t.Errorf("binding %+v to %+v, want the operator's account to ClusterRole %s", rb.Subjects, rb.RoleRef, schedv1.OperatorPodLogsRole)
	}
}
