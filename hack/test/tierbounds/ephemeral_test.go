package tierbounds_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
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

// TestEphemeralStorageIsBounded: a free-tier member's task gets the tier's
// ephemeral-storage request and limit (256Mi, 1Gi) without asking, and one
// asking more than the tier's 2Gi gets no pod, its status saying why.
// Then the task that fills its disk: the kubelet evicts its pod each time
// (what its eviction manager writes, done here by hand: the simulated
// nodes have no disk), an eviction is a disruption that uses no retry, and
// the Job would replace the pod without end, pressing a node each time.
// The fourth eviction fails the task (TooManyDisruptions), its Job is
// stopped, and the pods of the earlier evictions are gone.
func TestEphemeralStorageIsBounded(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const ns = "ephemeral-free"
	member := testenv.Tenant(t, sim, ns, "free", "erin", 2*time.Minute)
	long := func(name string) *schedv1.AgentTask {
		return MakeAgentTask(name, ns).Image("registry.example/agent:1").PodAnnotation(cluster.AnnotationRunSeconds, "3600").Obj()
	}
	createAs(t, member, long("disk"))
	big := long("big")
	big.Spec.Resources = schedv1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("4Gi")}}
	createAs(t, member, big)

	pod := runningPod(t, ns, "disk", nil)
	res := pod.Spec.Containers[0].Resources
	if got, want := res.Requests[corev1.ResourceEphemeralStorage], resource.MustParse("256Mi"); got.Cmp(want) != 0 {
		t.Errorf("ephemeral-storage request %s, want the tier's default 256Mi", got.String())
	}
	if got, want := res.Limits[corev1.ResourceEphemeralStorage], resource.MustParse("1Gi"); got.Cmp(want) != 0 {
		t.Errorf("ephemeral-storage limit %s, want the tier's default 1Gi", got.String())
	}
	poll(t, pollTimeout, "the task asking 4Gi to say why it has no pod", func(ctx context.Context) error {
		a := &schedv1.AgentTask{}
		if err := member.Get(ctx, client.ObjectKeyFromObject(big), a); err != nil {
			return err
		}
		if a.Status.Reason != schedv1.ReasonForbidden || !strings.Contains(a.Status.Message, "maximum ephemeral-storage usage per Container is 2Gi, but limit is 4Gi") {
			return fmt.Errorf("status %s: %s", a.Status.Reason, a.Status.Message)
		}
		return nil
	})

	evicted := []string{}
	for i := range schedv1.MaxDisruptions + 1 {
		if i > 0 {
			pod = runningPod(t, ns, "disk", evicted)
		}
		pod.Status.Phase = corev1.PodFailed
		pod.Status.Reason = "Evicted"
		pod.Status.Message = "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi."
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "TerminationByKubelet", Message: pod.Status.Message, LastTransitionTime: metav1.Now()})
		if err := sim.Client.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
		evicted = append(evicted, pod.Name)
		t.Logf("evicted %s", pod.Name)
	}
	task := &schedv1.AgentTask{}
	poll(t, 3*time.Minute, "the task failed for its disruptions", func(ctx context.Context) error {
		if err := member.Get(ctx, client.ObjectKey{Namespace: ns, Name: "disk"}, task); err != nil {
			return err
		}
		if task.Status.Phase != schedv1.TaskFailed {
			return fmt.Errorf("task %s (%s): %s", task.Status.Phase, task.Status.Reason, task.Status.Message)
		}
		return nil
	})
	if task.Status.Reason != schedv1.ReasonTooManyDisruptions || task.Status.Disruptions != schedv1.MaxDisruptions+1 ||
		!strings.Contains(task.Status.Message, "4 of its pods were disrupted") || !strings.Contains(task.Status.Message, "raise the limit or write less") {
		t.Errorf("status %s, %d disruptions: %s", task.Status.Reason, task.Status.Disruptions, task.Status.Message)
	}
	poll(t, pollTimeout, "the Job stopped and the earlier evictions' pods gone", func(ctx context.Context) error {
		job := &batchv1.Job{}
		if err := sim.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.Job("disk")}, job); err != nil {
			return err
		}
		if !ptr.Deref(job.Spec.Suspend, false) {
			return fmt.Errorf("job not suspended")
		}
		pods := taskPods(ctx, t, ns, "disk")
		if len(pods) != 1 || pods[0].Name != evicted[len(evicted)-1] {
			return fmt.Errorf("pods %v, want only the last evicted, %s", podNames(pods), evicted[len(evicted)-1])
		}
		return nil
	})
}

// runningPod waits for the task's running pod not among skip.
func runningPod(t *testing.T, ns, task string, skip []string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	poll(t, 3*time.Minute, "a running pod of "+task, func(ctx context.Context) error {
		for _, p := range taskPods(ctx, t, ns, task) {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && !slices.Contains(skip, p.Name) {
				pod = &p
				return nil
			}
		}
		return fmt.Errorf("none running")
	})
	return pod
}

func taskPods(ctx context.Context, t *testing.T, ns, task string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := sim.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelAgentTask: names.Job(task)}); err != nil {
		return nil
	}
	return pods.Items
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
