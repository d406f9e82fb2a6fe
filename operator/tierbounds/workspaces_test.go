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
// for a claim; the claim is made in the member's namespace, so the tier's
// quota (requests.storage, persistentvolumeclaims) counts it and refuses
// what the member could not make directly: a workspace past the tier's
// storage waits, saying which quota holds it, and no claim is made.
func TestWorkspacesCountAgainstTheTier(t *testing.T) {
	t.Parallel()
	const ns = "workspaces-free"
	member := testenv.Tenant(t, sim, ns, "free", "wendy", 2*time.Minute)
	withClass := func(s *schedv1.WorkflowSpec) { s.Workspaces[0].StorageClass = cluster.HostPathStorageClass }

	big := MakeWorkflow("big", ns).Workspace("src", "20Gi").
		StepTask("a", schedv1.AgentTaskSpec{Image: "registry.example/agent:1"}).Mount("src", "/src", false).Spec(withClass).Obj()
	createAs(t, member, big)
	poll(t, pollTimeout, "the workflow past the tier's storage to wait for quota", func(ctx context.Context) error {
		wf := &schedv1.Workflow{}
		if err := member.Get(ctx, client.ObjectKeyFromObject(big), wf); err != nil {
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
	if err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: names.WorkspaceClaim("big", "src")}, &corev1.PersistentVolumeClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("the claim past the quota: %v, want it not made", err)
	}

	fits := MakeWorkflow("fits", ns).Workspace("src", "1Gi").
		StepTask("a", schedv1.AgentTaskSpec{Image: "registry.example/agent:1"}).Mount("src", "/src", false).Spec(withClass).Obj()
	createAs(t, member, fits)
	poll(t, pollTimeout, "the workflow within the tier to succeed, its claim counted", func(ctx context.Context) error {
		wf := &schedv1.Workflow{}
		if err := member.Get(ctx, client.ObjectKeyFromObject(fits), wf); err != nil {
			return err
		}
		if wf.Status.Phase != schedv1.WorkflowSucceeded {
			return fmt.Errorf("workflow %s (%s): %s", wf.Status.Phase, wf.Status.Reason, wf.Status.Message)
		}
		q := &corev1.ResourceQuota{}
		if err := member.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kubectl-sched-tier"}, q); err != nil {
			return err
		}
		claims, storage := q.Status.Used[corev1.ResourcePersistentVolumeClaims], q.Status.Used[corev1.ResourceRequestsStorage]
		if claims.Value() != 1 || storage.String() != "1Gi" {
			return fmt.Errorf("quota used: %d claims, %s of storage; want 1 and 1Gi", claims.Value(), storage.String())
		}
		return nil
	})
}
