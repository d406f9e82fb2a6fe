package userdeployment

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/placement"
	"github.com/kubectl-sched/kubectl-sched/operator/podstatus"
)

// indexCPUScheduler indexes the apps by their placement.cpuScheduler: a
// SchedExt or a node's CPU scheduler label changing concerns only them.
const indexCPUScheduler = "userdeployment.byCPUScheduler"

// cpuSchedulerOf is an app's indexCPUScheduler value.
func cpuSchedulerOf(o client.Object) []string {
	if ud, ok := o.(*schedv1.UserDeployment); ok && ud.Spec.Placement != nil && ud.Spec.Placement.CPUScheduler != "" {
		return []string{ud.Spec.Placement.CPUScheduler}
	}
	return nil
}

// The operator evicts an app's pods from nodes where its CPU scheduler
// detached, so that they come back where it runs.
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// placement.cpuScheduler: which nodes run it, and which SchedExts load it.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=schedexts,verbs=get;list;watch

// cpuSchedulerCause explains, for an app that asks for a CPU scheduler,
// its first pod (by name) the scheduler cannot place: a message when no
// node it may run on has that scheduler attached (placement.CPUSchedulerCause),
// "" otherwise. Only the caches are read, and only for such a pod.
func (r *Reconciler) cpuSchedulerCause(ctx context.Context, ud *schedv1.UserDeployment, pods map[string][]corev1.Pod) (string, error) {
	p := ud.Spec.Placement
	if p == nil || p.CPUScheduler == "" {
		return "", nil
	}
	var first *corev1.Pod
	for _, list := range pods {
		for i := range list {
			pod := &list[i]
			if pod.DeletionTimestamp == nil && podstatus.Unschedulable(pod) && (first == nil || pod.Name < first.Name) {
				first = pod
			}
		}
	}
	if first == nil {
		return "", nil
	}
	_, msg, err := placement.CPUSchedulerCause(ctx, r.Client, p.CPUScheduler, first.Spec.Affinity)
	return msg, err
}

// moveOffDetached evicts, in each service of an app that asks for a CPU
// scheduler, one pod that runs on a node where that scheduler is no longer
// attached (podToMove says which, and when), so that its controller starts
// it again where the scheduler runs. Required node affinity is only
// checked when a pod is scheduled, so without this the pod would stay on
// the kernel's default scheduler for good. A pod is moved only when some
// node it may run on has the scheduler (placement.NodesRunning): with
// nowhere to go it keeps running where it is. The eviction API honours
// PodDisruptionBudgets; one refused is tried again with the workqueue's
// backoff.
func (r *Reconciler) moveOffDetached(ctx context.Context, ud *schedv1.UserDeployment, pods map[string][]corev1.Pod, workloads map[string]*appsv1.Deployment) error {
	p := ud.Spec.Placement
	if p == nil || p.CPUScheduler == "" || ud.Spec.State == schedv1.StateStopped {
		return nil
	}
	runs := map[string]*bool{}
	nodeRuns := func(name string) (has, known bool) {
		if v, seen := runs[name]; seen {
			return v != nil && *v, v != nil
		}
		node := &corev1.Node{}
		if err := r.Get(ctx, types.NamespacedName{Name: name}, node); err != nil {
			runs[name] = nil // unknown (gone, or not cached yet): not moved
			return false, false
		}
		has = node.Labels[schedv1.NodeLabelCPUScheduler] == p.CPUScheduler
		runs[name] = &has
		return has, true
	}
	services := make([]string, 0, len(pods))
	for svc := range pods {
		services = append(services, svc)
	}
	sort.Strings(services)
	for _, svc := range services {
		dep := workloads[svc]
		if dep == nil || dep.Spec.Replicas == nil {
			continue
		}
		pod := podToMove(pods[svc], *dep.Spec.Replicas, p.CPUScheduler, nodeRuns)
		if pod == nil {
			continue
		}
		allowed, _, err := placement.NodesRunning(ctx, r.Client, p.CPUScheduler, pod.Spec.Affinity)
		if err != nil {
			return err
		}
		if !allowed {
			continue
		}
		if err := r.evict(ctx, ud, pod, svc); err != nil {
			return err
		}
	}
	return nil
}

// evict asks the API server to evict pod, the one it names by UID.
func (r *Reconciler) evict(ctx context.Context, ud *schedv1.UserDeployment, pod *corev1.Pod, svc string) error {
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}},
	}
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
	err := r.SubResource("eviction").Create(ctx, target, ev)
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return nil // gone, or another pod by now
	case err != nil:
		return fmt.Errorf("evict pod %s from node %s, where %s detached: %w", pod.Name, pod.Spec.NodeName, ud.Spec.Placement.CPUScheduler, err)
	}
	log.FromContext(ctx).Info("Evicted a pod from a node where its CPU scheduler detached", "pod", pod.Name, "node", pod.Spec.NodeName, "service", svc, "cpuScheduler", ud.Spec.Placement.CPUScheduler)
	r.Recorder.Eventf(ud, nil, corev1.EventTypeNormal, schedv1.ReasonCPUSchedulerDetached, "Evict",
		"evicted pod %s of service %s from node %s, which no longer runs the CPU scheduler %s; it starts again on a node that does",
		pod.Name, svc, pod.Spec.NodeName, ud.Spec.Placement.CPUScheduler)
	return nil
}

// podToMove is the pod of one service to evict from a node where the CPU
// scheduler it requires (scheduler, in its required node affinity) no
// longer runs (nodeRuns), or nil. One at a time, as a rolling update
// would: nothing is moved unless the service runs its replicas (want), all
// Ready and none being deleted, so the next pod goes once the last one's
// replacement is up. The first by name is chosen, so a view from before
// the last eviction picks that pod again rather than a second one. A pod
// whose affinity does not require the scheduler (one of an older
// template, which the rollout replaces anyway) and a node the cache does
// not know are left alone.
func podToMove(pods []corev1.Pod, want int32, scheduler string, nodeRuns func(node string) (has, known bool)) *corev1.Pod {
	if int32(len(pods)) < want {
		return nil
	}
	var candidates []*corev1.Pod
	for i := range pods {
		pod := &pods[i]
		if pod.DeletionTimestamp != nil || !podReady(pod) {
			return nil
		}
		if pod.Spec.NodeName == "" || !requiresCPUScheduler(pod.Spec.Affinity, scheduler) {
			continue
		}
		if has, known := nodeRuns(pod.Spec.NodeName); known && !has {
			candidates = append(candidates, pod)
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	slices.SortFunc(candidates, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return candidates[0]
}

// requiresCPUScheduler says whether affinity's required terms ask for the
// scheduler, as placement.RequireCPUScheduler writes it.
func requiresCPUScheduler(affinity *corev1.Affinity, scheduler string) bool {
	if affinity == nil || affinity.NodeAffinity == nil || affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	for _, term := range affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, r := range term.MatchExpressions {
			if r.Key == schedv1.NodeLabelCPUScheduler && r.Operator == corev1.NodeSelectorOpIn && slices.Equal(r.Values, []string{scheduler}) {
				return true
			}
		}
	}
	return false
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
