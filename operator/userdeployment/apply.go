package userdeployment

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/refusal"
)

// fieldOwner is the server-side apply field manager of every object written.
const fieldOwner = "kubectl-sched-operator"

// applyObjects writes every planned object that is missing or differs from
// the cluster's copy, and nothing else.
func (r *Reconciler) applyObjects(ctx context.Context, s *syncState, p plan) {
	for _, desired := range p.objects {
		form, err := applyForm(desired)
		if err != nil {
			s.errs = append(s.errs, err)
			continue
		}
		key := objectKey{form.GetKind(), form.GetName()}
		current, err := r.ensure(ctx, s, key, form)
		var c *conflictError
		switch {
		case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			s.terminating = true
			return
		case errors.As(err, &c):
			s.conflict = true
			s.problems = append(s.problems, err.Error())
			continue
		case err != nil:
			s.errs = append(s.errs, fmt.Errorf("apply %s: %w", key, err))
			// What a retry may pass (an object changed since it was read, a
			// timeout) is retried with backoff and does not make the app
			// Degraded; a refusal is the status's to say.
			if refusal.Classify(err) != refusal.Transient {
				s.problems = append(s.problems, err.Error())
			}
			continue
		}
		if key.kind == "Deployment" || key.kind == "StatefulSet" {
			dep, err := asDeployment(current)
			if err != nil {
				s.errs = append(s.errs, err)
				continue
			}
			s.deployments[dep.Labels[schedv1.LabelService]] = dep
		}
	}
}

// conflictError: the name is taken by an object the app does not control.
type conflictError struct{ key objectKey }

func (e *conflictError) Error() string {
	return fmt.Sprintf("%s already exists and is not controlled by this UserDeployment; delete or rename it", e.key)
}

// ensure returns the object as it is after writing it if needed.
func (r *Reconciler) ensure(ctx context.Context, s *syncState, key objectKey, form *unstructured.Unstructured) (client.Object, error) {
	current := s.owned[key]
	var fresh *unstructured.Unstructured // read from the API server, managed fields and all
	if current == nil {
		// Not in the cache: new, deleted out of band, or someone else's
		// (the cache holds only labelled objects). Creating it settles the
		// common case, a new object, in one request; only a name that is
		// taken costs a read, to tell ours from someone else's.
		err := r.Create(ctx, form.DeepCopy(), client.FieldOwner(fieldOwner))
		if err == nil {
			if s.ud.Status.ObservedGeneration == s.ud.Generation {
				// This spec was already in place, so the object was deleted.
				s.repaired = append(s.repaired, key.String()+" (deleted)")
			} else {
				s.created = append(s.created, key.String())
			}
			return form, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(form.GroupVersionKind())
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(form), live); err != nil {
			return nil, err
		}
		if !metav1.IsControlledBy(live, s.ud) {
			return nil, &conflictError{key}
		}
		current, fresh = live, live // ours; the cache is behind or lost our labels
	}
	ok, err := inSync(form, current)
	if err != nil || ok {
		return current, err
	}
	fresh, err = r.upgradeCreatedFields(ctx, form, fresh)
	if err != nil {
		return nil, err
	}
	if err := r.handOverReplicas(ctx, form, fresh); err != nil {
		return nil, err
	}
	if err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(form), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return nil, err
	}
	if current.GetAnnotations()[annotationApplied] == form.GetAnnotations()[annotationApplied] {
		// Same plan as last applied, different object: edited out of band.
		s.repaired = append(s.repaired, key.String()+" (edited)")
	} else {
		log.FromContext(ctx).Info("Updated object to the spec", "kind", key.kind, "name", key.name)
	}
	return form, nil
}

// upgradeCreatedFields moves the fields an object got from our create (an
// Update entry in its managed fields) to our server-side apply entry, before
// the first apply that changes it. Without it a field dropped from the spec
// would stay, still owned by the create. The cache strips managed fields, so
// it reads the object unless the caller already has (live); it runs only
// when an object must change. It returns the object as the API server now
// has it, for the replicas hand-over's optimistic lock.
func (r *Reconciler) upgradeCreatedFields(ctx context.Context, form, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if live == nil {
		live = &unstructured.Unstructured{}
		live.SetGroupVersionKind(form.GroupVersionKind())
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(form), live); err != nil {
			return nil, err
		}
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, sets.New(fieldOwner), fieldOwner)
	if err != nil || patch == nil {
		return live, err
	}
	// Patch leaves the patched object, with its new resourceVersion, in live.
	return live, r.Patch(ctx, live, client.RawPatch(types.JSONPatchType, patch))
}

// fieldOwnerHandover co-owns the replicas of a workload an autoscaler took
// over, so that applying it without spec.replicas does not remove the field
// (and reset the workload to one replica): server-side apply's documented
// way to hand a field to another controller.
const fieldOwnerHandover = fieldOwner + "-handover"

// handOverReplicas runs before a workload is applied without spec.replicas;
// current is the workload as just read from the API server.
func (r *Reconciler) handOverReplicas(ctx context.Context, form, current *unstructured.Unstructured) error {
	if form.GetKind() != "Deployment" && form.GetKind() != "StatefulSet" {
		return nil
	}
	if _, planned, _ := unstructured.NestedFieldNoCopy(form.Object, "spec", "replicas"); planned {
		return nil
	}
	replicas, found, err := unstructured.NestedInt64(current.Object, "spec", "replicas")
	if err != nil || !found {
		return err
	}
	handover := &unstructured.Unstructured{}
	handover.SetGroupVersionKind(form.GroupVersionKind())
	handover.SetNamespace(form.GetNamespace())
	handover.SetName(form.GetName())
	// Only the value we read: should the autoscaler scale in between,
	// forcing it would undo that. A conflict retries with fresh data.
	handover.SetResourceVersion(current.GetResourceVersion())
	if err := unstructured.SetNestedField(handover.Object, replicas, "spec", "replicas"); err != nil {
		return err
	}
	return r.Apply(ctx, client.ApplyConfigurationFromUnstructured(handover), client.FieldOwner(fieldOwnerHandover), client.ForceOwnership)
}

// autoscaled returns which of the planned workloads (by name) a
// HorizontalPodAutoscaler scales: a lookup per workload in the index of
// autoscalers by target, however many the namespace has.
func (r *Reconciler) autoscaled(ctx context.Context, ns string, objects []client.Object) (map[string]bool, error) {
	targets := map[string]bool{}
	for _, obj := range objects {
		var kind string
		switch obj.(type) {
		case *appsv1.Deployment:
			kind = "Deployment"
		case *appsv1.StatefulSet:
			kind = "StatefulSet"
		default:
			continue
		}
		var hpas autoscalingv2.HorizontalPodAutoscalerList
		key := scaleTargetKey(kind, obj.GetName())
		if err := r.List(ctx, &hpas, client.InNamespace(ns), client.MatchingFields{indexScaleTarget: key}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("list HorizontalPodAutoscalers: %w", err)
		}
		if len(hpas.Items) > 0 {
			targets[obj.GetName()] = true
		}
	}
	return targets, nil
}

// indexScaleTarget indexes the cached autoscalers by the Deployment or
// StatefulSet they scale (scaleTargetKey).
const indexScaleTarget = "sched.kubectl-sched.dev/hpa-target"

func scaleTargetKey(kind, name string) string { return kind + "/" + name }

// scaleTargetOf is an autoscaler's indexScaleTarget value.
func scaleTargetOf(o client.Object) []string {
	hpa, ok := o.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return nil
	}
	ref := hpa.Spec.ScaleTargetRef
	if gv, _ := schema.ParseGroupVersion(ref.APIVersion); gv.Group == appsv1.GroupName && (ref.Kind == "Deployment" || ref.Kind == "StatefulSet") {
		return []string{scaleTargetKey(ref.Kind, ref.Name)}
	}
	return nil
}

// deleteUnwanted removes owned objects the plan no longer has: a removed
// service, an exposure turned to None, config emptied, isolation opened.
func (r *Reconciler) deleteUnwanted(ctx context.Context, s *syncState, p plan) {
	wanted := map[objectKey]bool{}
	for _, o := range p.objects {
		gvk := o.GetObjectKind().GroupVersionKind()
		wanted[objectKey{gvk.Kind, o.GetName()}] = true
	}
	for key, obj := range s.owned {
		if wanted[key] {
			continue
		}
		uid := obj.GetUID()
		err := r.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			s.errs = append(s.errs, fmt.Errorf("delete %s: %w", key, err))
		default:
			s.deleted = append(s.deleted, key.String())
		}
	}
}
