package workflow_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// hostPath makes the workspaces of wf use the simulated cluster's
// host-path provisioner.
func hostPath(s *schedv1.WorkflowSpec) {
	for i := range s.Workspaces {
		s.Workspaces[i].StorageClass = cluster.HostPathStorageClass
	}
}

func getClaim(ctx context.Context, ns, name string) (*corev1.PersistentVolumeClaim, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	return pvc, sim.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc)
}

// TestWorkspaceClaimLifecycle: a run's workspace is one claim, made before
// the first step that mounts it, bound by the cluster's provisioner,
// mounted by every step that names it (read-only where it says so) on the
// node of the first pod that mounted it (ReadWriteOnce), and deleted with
// the workflow by the garbage collector.
func TestWorkspaceClaimLifecycle(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	wf := MakeWorkflow("shared", ns).Workspace("src", "1Gi").
		StepTask("checkout", step("git:1", 0, "sha=abc", 1)).Mount("src", "/src", false).
		StepTask("build", step("builder:1", 0, "", 0)).Mount("src", "/src", true).
		StepTask("lint", step("busybox", 0, "", 0)).DependsOn("checkout").Mount("src", "/work", true).
		Spec(hostPath).Obj()
	if err := sim.Client.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	got := waitWorkflow(t, ns, "shared", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowSucceeded {
		t.Fatalf("status %+v, want Succeeded", got.Status)
	}
	claim := names.WorkspaceClaim("shared", "src")
	pvc, err := getClaim(t.Context(), ns, claim)
	if err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(pvc, got) {
		t.Errorf("claim %s owners %+v, want the workflow", claim, pvc.OwnerReferences)
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		t.Errorf("claim phase %s, want Bound (the host-path provisioner)", pvc.Status.Phase)
	}
	if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(resource.MustParse("1Gi")) != 0 ||
		!cmp.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) || ptr.Deref(pvc.Spec.StorageClassName, "") != cluster.HostPathStorageClass {
		t.Errorf("claim spec %+v, want 1Gi ReadWriteOnce of class %s", pvc.Spec, cluster.HostPathStorageClass)
	}

	first := getTask(t, ns, names.StepTask("shared", 0, "checkout"))
	firstPod := &corev1.Pod{}
	if err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: first.Status.PodName}, firstPod); err != nil {
		t.Fatal(err)
	}
	node := firstPod.Spec.NodeName
	if diff := cmp.Diff([]schedv1.WorkspaceStatus{{Name: "src", ClaimName: claim, Node: node}}, got.Status.Workspaces); diff != "" {
		t.Errorf("status.workspaces (-want +got):\n%s", diff)
	}
	for i, s := range []struct{ name, path string }{{"build", "/src"}, {"lint", "/work"}} {
		task := getTask(t, ns, names.StepTask("shared", i+1, s.name))
		want := []schedv1.WorkspaceMount{{Name: "src", MountPath: s.path, ReadOnly: true, ClaimName: claim, Node: node}}
		if diff := cmp.Diff(want, task.Spec.Workspaces); diff != "" {
			t.Errorf("step %s's workspaces (-want +got):\n%s", s.name, diff)
		}
		pod := &corev1.Pod{}
		if err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: task.Status.PodName}, pod); err != nil {
			t.Fatal(err)
		}
		if pod.Spec.NodeName != node {
			t.Errorf("step %s ran on %s, want %s, the node of the first pod that mounted the workspace", s.name, pod.Spec.NodeName, node)
		}
		mounted := false
		for _, v := range pod.Spec.Volumes {
			mounted = mounted || v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim && v.PersistentVolumeClaim.ReadOnly
		}
		if !mounted {
			t.Errorf("step %s's pod volumes %+v, want the claim %s read-only", s.name, pod.Spec.Volumes, claim)
		}
	}

	if err := sim.Client.Delete(t.Context(), got, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, testenv.LongTimeout, "the claim to go with the workflow", func(ctx context.Context) (bool, error) {
		_, err := getClaim(ctx, ns, claim)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// TestKeptWorkspaceOutlivesTheRun: keep leaves the claim, with no owner,
// when the workflow goes.
func TestKeptWorkspaceOutlivesTheRun(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	wf := MakeWorkflow("kept", ns).Workspace("out", "1Gi").
		StepTask("make", step("busybox", 0, "", 0)).Mount("out", "/out", false).
		Spec(func(s *schedv1.WorkflowSpec) { hostPath(s); s.Workspaces[0].Keep = true }).Obj()
	if err := sim.Client.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	got := waitWorkflow(t, ns, "kept", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowSucceeded {
		t.Fatalf("status %+v, want Succeeded", got.Status)
	}
	claim := names.WorkspaceClaim("kept", "out")
	pvc, err := getClaim(t.Context(), ns, claim)
	if err != nil {
		t.Fatal(err)
	}
	if len(pvc.OwnerReferences) != 0 || pvc.Annotations[schedv1.AnnotationWorkflowUID] != string(got.UID) {
		t.Fatalf("kept claim owners %+v, annotations %v: want no owner and the run's UID", pvc.OwnerReferences, pvc.Annotations)
	}
	if err := sim.Client.Delete(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, testenv.LongTimeout, "the workflow to be deleted", func(ctx context.Context) (bool, error) {
		err := sim.Client.Get(ctx, client.ObjectKeyFromObject(got), &schedv1.Workflow{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	// The garbage collector had its chance: the tasks the workflow owned go.
	testenv.Poll(t, testenv.LongTimeout, "the step task to go with the workflow", func(ctx context.Context) (bool, error) {
		err := sim.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.StepTask("kept", 0, "make")}, &schedv1.AgentTask{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if _, err := getClaim(t.Context(), ns, claim); err != nil {
		t.Fatalf("the kept claim is gone: %v", err)
	}
}

// TestWorkspaceClaimNameTaken: a claim the run did not make that holds
// the workspace claim's name is never mounted; the step fails, saying so.
func TestWorkspaceClaimNameTaken(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	claim := names.WorkspaceClaim("taken", "src")
	mine := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if err := sim.Client.Create(t.Context(), mine); err != nil {
		t.Fatal(err)
	}
	wf := MakeWorkflow("taken", ns).Workspace("src", "1Gi").
		StepTask("a", step("busybox", 0, "", 0)).Mount("src", "/src", false).Spec(hostPath).Obj()
	if err := sim.Client.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	got := waitWorkflow(t, ns, "taken", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowFailed || !strings.Contains(got.Status.Steps[0].Message, "is not this run's") {
		t.Fatalf("status %+v, want Failed with the step saying the claim is not the run's", got.Status)
	}
	if got.Status.Steps[0].TaskName != "" {
		t.Errorf("step task %s was made; want none", got.Status.Steps[0].TaskName)
	}
	pvc, err := getClaim(t.Context(), ns, claim)
	if err != nil || len(pvc.OwnerReferences) != 0 {
		t.Fatalf("the user's claim: %v, owners %+v; want it untouched", err, pvc.OwnerReferences)
	}
}

// TestParallelStepsShareAReadWriteOnceNode: two steps that start side by
// side and mount one ReadWriteOnce workspace run on one node: the second
// waits until the first is placed, then is pinned to its node.
func TestParallelStepsShareAReadWriteOnceNode(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	wf := MakeWorkflow("side", ns).Workspace("src", "1Gi").
		StepTask("root", step("busybox", 0, "", 0)).
		StepTask("left", step("busybox", 0, "", 2)).DependsOn("root").Mount("src", "/src", false).
		StepTask("right", step("busybox", 0, "", 2)).DependsOn("root").Mount("src", "/src", false).
		Spec(hostPath).Obj()
	if err := sim.Client.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	got := waitWorkflow(t, ns, "side", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowSucceeded {
		t.Fatalf("status %+v, want Succeeded", got.Status)
	}
	nodes, pinned := map[string]string{}, 0
	for i, s := range []string{"left", "right"} {
		task := getTask(t, ns, names.StepTask("side", i+1, s))
		if task.Spec.Workspaces[0].Node != "" {
			pinned++
		}
		pod := &corev1.Pod{}
		if err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: task.Status.PodName}, pod); err != nil {
			t.Fatal(err)
		}
		nodes[s] = pod.Spec.NodeName
	}
	if nodes["left"] == "" || nodes["left"] != nodes["right"] || len(got.Status.Workspaces) != 1 || got.Status.Workspaces[0].Node != nodes["left"] {
		t.Errorf("steps ran on %v, status.workspaces %+v: want both on the node the status records", nodes, got.Status.Workspaces)
	}
	// Not by chance: the second was made once the first was placed, pinned.
	if pinned != 1 {
		t.Errorf("%d of the two tasks pinned to the workspace's node; want the second", pinned)
	}
}
