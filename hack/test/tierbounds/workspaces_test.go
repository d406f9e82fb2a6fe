package tierbounds_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestWorkspacesCountAgainstTheTier: a member's workflow asks the operator
// for claims; they are made in the member's namespace, so the tier's quota
// (requests.storage, persistentvolumeclaims) counts them and refuses what
// the member could not hold. What can never fit (a workspace past the
// tier's storage, more workspaces than its claims, a kept claim the member
// could not delete) is refused when the workflow is created, saying why;
// a run that fits alone but not beside another waits for room, saying
// which quota holds it, and no claim is made past it.
func TestWorkspacesCountAgainstTheTier(t *testing.T) {
	t.Parallel()
	const ns = "workspaces-free"
	member := testenv.Tenant(t, sim, ns, "free", "wendy", 2*time.Minute)
	withClass := func(s *schedv1.WorkflowSpec) {
		for i := range s.Workspaces {
			s.Workspaces[i].StorageClass = cluster.HostPathStorageClass
		}
	}
	run := func(name, size string) *schedv1.Workflow {
		return MakeWorkflow(name, ns).Workspace("src", size).
			StepTask("a", schedv1.AgentTaskSpec{Image: "registry.example/agent:1",
				PodMetadata: &schedv1.PodMetadata{Annotations: map[string]string{cluster.AnnotationRunSeconds: "30"}}}).
			Mount("src", "/src", false).Spec(withClass).Obj()
	}

	for name, tc := range map[string]struct {
		wf   *schedv1.Workflow
		want string
	}{
		"past the tier's storage": {run("big", "20Gi"), "spec.workspaces: a workspace asks more than the claims of tier free may hold in all (requests.storage 10Gi)"},
		"more than its claims": {MakeWorkflow("many", ns).Workspace("a", "1Gi").Workspace("b", "1Gi").Workspace("c", "1Gi").
			Step("x", "busybox").Spec(withClass).Obj(), "spec.workspaces: 3 workspaces, but tier free holds at most 2 claims"},
		"kept": {run("kept", "1Gi").DeepCopy(), "keep is not for a namespace of tier free: its members cannot delete claims"},
	} {
		if name == "kept" {
			tc.wf.Spec.Workspaces[0].Keep = true
		}
		err := member.Create(t.Context(), tc.wf)
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want refused with %q", name, err, tc.want)
		}
	}

	first, second := run("first", "6Gi"), run("second", "6Gi")
	createAs(t, member, first)
	poll(t, pollTimeout, "the first run's claim to be made and counted", func(ctx context.Context) error {
		q := &corev1.ResourceQuota{}
		if err := member.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kubectl-sched-tier"}, q); err != nil {
			return err
		}
		claims, storage := q.Status.Used[corev1.ResourcePersistentVolumeClaims], q.Status.Used[corev1.ResourceRequestsStorage]
		if claims.Value() != 1 || storage.String() != "6Gi" {
			return fmt.Errorf("quota used: %d claims, %s of storage; want 1 and 6Gi", claims.Value(), storage.String())
		}
		return nil
	})
	createAs(t, member, second)
	poll(t, pollTimeout, "the second run to wait for quota", func(ctx context.Context) error {
		wf := &schedv1.Workflow{}
		if err := member.Get(ctx, client.ObjectKeyFromObject(second), wf); err != nil {
			return err
		}
		if len(wf.Status.Steps) == 0 {
			return fmt.Errorf("no step status yet")
		}
		s := wf.Status.Steps[0]
		if wf.Status.Reason != schedv1.ReasonQuotaExceeded || s.Phase != schedv1.StepWaiting ||
			!strings.Contains(s.Message, "the claim of workspace src") || !strings.Contains(s.Message, "requests.storage") {
			return fmt.Errorf("workflow %s (%s), step %s: %s", wf.Status.Phase, wf.Status.Reason, s.Phase, s.Message)
		}
		return nil
	})
	if err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: names.WorkspaceClaim("second", "src")}, &corev1.PersistentVolumeClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("the claim past the quota: %v, want it not made", err)
	}
	// Once the first run is deleted, its claim goes with it and the
	// second's is made: the quota's room is the run's to use.
	if err := member.Delete(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	poll(t, 3*time.Minute, "the second run to get its claim and succeed", func(ctx context.Context) error {
		wf := &schedv1.Workflow{}
		if err := member.Get(ctx, client.ObjectKeyFromObject(second), wf); err != nil {
			return err
		}
		if wf.Status.Phase != schedv1.WorkflowSucceeded {
			return fmt.Errorf("workflow %s (%s): %s", wf.Status.Phase, wf.Status.Reason, wf.Status.Message)
		}
		return nil
	})
}
