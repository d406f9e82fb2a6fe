package userdeployment_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestEvictedPodsDoNotPileUp: a kubelet that evicts a pod (a container
// over its ephemeral-storage limit, a node short of memory) leaves it
// Failed, and its ReplicaSet makes another; the pods quota no longer
// counts the failed one. An app evicted over and over kept a copy of its
// pod for each time, until the cluster's pod garbage collector, 12,500
// terminated pods later. The operator keeps each service's latest failed
// pod, whose status says why, and deletes the others.
func TestEvictedPodsDoNotPileUp(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, MakeUserDeployment("evicted", ns).Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).Obj())
	var evicted []string
	for i := range 3 {
		var pod corev1.Pod
		testenv.EventuallyWithin(t, testenv.Timeout, fmt.Sprintf("a running pod after %d evictions", i), func(ctx context.Context) error {
			pods, err := runningPods(ctx, ns, "evicted")
			if err != nil {
				return err
			}
			if len(pods) != 1 {
				return fmt.Errorf("%d running pods", len(pods))
			}
			pod = pods[0]
			return nil
		})
		// What the kubelet's eviction manager writes.
		pod.Status.Phase = corev1.PodFailed
		pod.Status.Reason = "Evicted"
		pod.Status.Message = "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi."
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "TerminationByKubelet", Message: pod.Status.Message, LastTransitionTime: metav1.Now()})
		if err := sim.Client.Status().Update(t.Context(), &pod); err != nil {
			t.Fatal(err)
		}
		evicted = append(evicted, pod.Name)
		// Created a second apart: the latest is the latest.
		time.Sleep(time.Second)
	}
	testenv.EventuallyWithin(t, testenv.Timeout, "one failed pod left, the latest evicted", func(ctx context.Context) error {
		var pods corev1.PodList
		if err := sim.Client.List(ctx, &pods, client.InNamespace(ns), appLabel("evicted")); err != nil {
			return err
		}
		var failed []string
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodFailed {
				failed = append(failed, p.Name)
			}
		}
		if len(failed) != 1 || failed[0] != evicted[len(evicted)-1] {
			return fmt.Errorf("failed pods %v, want only the latest evicted of %v", failed, evicted)
		}
		return nil
	})
}
