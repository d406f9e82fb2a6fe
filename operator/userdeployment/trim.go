package userdeployment

import (
	"reflect"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// TrimOwned is the cache transform of a kind an app is made of (gvk; for
// unstructured objects their own). The controller reads three things of
// such an object: the fields it applied, which the drift check compares
// with the plan (inSync); its identity and owner; and, for workloads and
// Certificates, the replicas and the status. So each object keeps the
// fields its managed-fields entries say the operator set (the field
// managers fieldOwner and fieldOwnerHandover), its name, namespace, UID,
// resourceVersion, generation and timestamps, spec.replicas and the
// status; the rest (server defaults, other controllers' fields and
// annotations, managed fields) is dropped before caching.
//
// A field someone else changes moves to their manager, so it is dropped
// from the cached copy and the drift check sees it missing and applies the
// plan again, as it would have seen it changed. An object without an entry
// of the operator's (a ConfigMap an installer labelled, say) is kept whole,
// less its managed fields.
func TrimOwned(gvk schema.GroupVersionKind) func(any) (any, error) {
	return func(obj any) (any, error) {
		o, ok := obj.(client.Object)
		if !ok {
			return obj, nil
		}
		kind := gvk
		if u, ok := o.(*unstructured.Unstructured); ok && kind.Empty() {
			kind = u.GroupVersionKind()
		}
		if trimmed := trimToApplied(o, kind); trimmed != nil {
			return trimmed, nil
		}
		o.SetManagedFields(nil)
		return o, nil
	}
}

// trimToApplied is o as TrimOwned keeps it, or nil to keep o whole.
func trimToApplied(o client.Object, gvk schema.GroupVersionKind) client.Object {
	set := &fieldpath.Set{}
	found := false
	for _, e := range o.GetManagedFields() {
		if (e.Manager != fieldOwner && e.Manager != fieldOwnerHandover) || e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			return nil
		}
		set, found = set.Union(s), true
	}
	if !found {
		return nil
	}
	full, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil
	}
	u := &unstructured.Unstructured{Object: full}
	u.SetGroupVersionKind(gvk)
	tv, err := typeConverter(gvk).ObjectToTyped(u, typed.AllowDuplicates)
	if err != nil {
		return nil
	}
	kept, ok := tv.ExtractItems(set.Leaves()).AsValue().Unstructured().(map[string]any)
	if !ok {
		return nil
	}
	out := &unstructured.Unstructured{Object: kept}
	out.SetAPIVersion(u.GetAPIVersion())
	out.SetKind(u.GetKind())
	out.SetName(o.GetName())
	out.SetNamespace(o.GetNamespace())
	out.SetUID(o.GetUID())
	out.SetResourceVersion(o.GetResourceVersion())
	out.SetGeneration(o.GetGeneration())
	out.SetCreationTimestamp(o.GetCreationTimestamp())
	out.SetDeletionTimestamp(o.GetDeletionTimestamp())
	out.SetManagedFields(nil)
	if status, ok := full["status"]; ok {
		out.Object["status"] = status
	}
	// An autoscaler's replicas are not the operator's field, and the status
	// reads them.
	if replicas, ok, _ := unstructured.NestedFieldNoCopy(full, "spec", "replicas"); ok {
		_ = unstructured.SetNestedField(out.Object, replicas, "spec", "replicas")
	}
	if _, ok := o.(*unstructured.Unstructured); ok {
		return out
	}
	typedOut := reflect.New(reflect.TypeOf(o).Elem()).Interface().(client.Object)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(out.Object, typedOut); err != nil {
		return nil
	}
	// Cached typed objects carry no apiVersion and kind, as before.
	typedOut.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return typedOut
}

// TrimHPA is the cache transform for HorizontalPodAutoscalers, cached in
// every namespace because users make them for the apps' workloads without
// the operator's labels: the controller reads only which workload one
// scales (spec.scaleTargetRef), to leave that workload's replicas to it.
// Its metrics, behavior, bounds and status (rewritten every sync) are
// dropped.
func TrimHPA(obj any) (any, error) {
	hpa, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return obj, nil
	}
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: identity(hpa.ObjectMeta),
		Spec:       autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: hpa.Spec.ScaleTargetRef},
	}, nil
}

// identity is what a trimmed object keeps of its metadata at the least.
func identity(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
	}
}

// TrimRevision is the cache transform for the ControllerRevisions that
// record the apps' revisions: the controller reads which app controls one,
// its labels (the hash of its data), its number and when it was made. Its
// data, up to the size of an app's spec, is read from the API server only
// when an app is rolled back to it; its annotations are the plugin's to
// read.
func TrimRevision(obj any) (any, error) {
	cr, ok := obj.(*appsv1.ControllerRevision)
	if !ok {
		return obj, nil
	}
	meta := identity(cr.ObjectMeta)
	meta.Labels, meta.OwnerReferences = cr.Labels, cr.OwnerReferences
	return &appsv1.ControllerRevision{ObjectMeta: meta, Revision: cr.Revision}, nil
}

// TrimApp is the cache transform for UserDeployments: it keeps the managed
// fields of the app's spec and metadata, which say who made each change
// (revision.ChangedBy, recorded with each revision), and drops those of
// its status, which the operator writes. Without them a new revision cost
// a read of the app from the API server. They are about the size of the
// spec's field names, which the CRD bounds.
func TrimApp(obj any) (any, error) {
	ud, ok := obj.(*schedv1.UserDeployment)
	if !ok {
		return obj, nil
	}
	ud.ManagedFields = slices.DeleteFunc(ud.ManagedFields, func(e metav1.ManagedFieldsEntry) bool { return e.Subresource != "" })
	return ud, nil
}
