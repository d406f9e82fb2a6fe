package userdeployment

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// failedPodsDue are the pods of a service to delete: those its ReplicaSets
// made that failed (a kubelet's eviction, a container over its
// ephemeral-storage limit), but the latest, whose status says why. A
// ReplicaSet replaces a failed pod and leaves it, and the pods quota no
// longer counts it: without this an app evicted over and over keeps a
// copy of its pod for each time, until the cluster's pod garbage collector
// (12,500 terminated pods, cluster-wide). A StatefulSet deletes its own.
func failedPodsDue(pods []corev1.Pod) []corev1.Pod {
	var failed []corev1.Pod
	for _, p := range pods {
		ref := metav1.GetControllerOf(&p)
		if p.Status.Phase == corev1.PodFailed && p.DeletionTimestamp.IsZero() && ref != nil && ref.Kind == "ReplicaSet" {
			failed = append(failed, p)
		}
	}
	if len(failed) < 2 {
		return nil
	}
	slices.SortFunc(failed, func(a, b corev1.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return failed[:len(failed)-1]
}

// deleteFailedPods deletes, for each service, the failed pods
// failedPodsDue names.
func (r *Reconciler) deleteFailedPods(ctx context.Context, pods map[string][]corev1.Pod) error {
	for svc, list := range pods {
		for _, p := range failedPodsDue(list) {
			uid := p.UID
			if err := r.Delete(ctx, &p, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete failed pod %s of service %s: %w", p.Name, svc, err)
			}
			log.FromContext(ctx).Info("Deleted a failed pod, keeping the service's latest", "service", svc, "pod", p.Name, "reason", p.Status.Reason)
		}
	}
	return nil
}
