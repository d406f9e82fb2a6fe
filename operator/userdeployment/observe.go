package userdeployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// objectKey identifies an owned object; the kinds' names do not collide.
type objectKey struct{ kind, name string }

func (k objectKey) String() string { return k.kind + " " + k.name }

// builtinKinds are the built-in kinds the controller creates, with how to
// list them.
var builtinKinds = []struct {
	kind string
	list func() client.ObjectList
}{
	{"Deployment", func() client.ObjectList { return &appsv1.DeploymentList{} }},
	{"StatefulSet", func() client.ObjectList { return &appsv1.StatefulSetList{} }},
	{"Service", func() client.ObjectList { return &corev1.ServiceList{} }},
	{"ConfigMap", func() client.ObjectList { return &corev1.ConfigMapList{} }},
	{"Ingress", func() client.ObjectList { return &networkingv1.IngressList{} }},
	{"NetworkPolicy", func() client.ObjectList { return &networkingv1.NetworkPolicyList{} }},
}

// observeOwned lists, from the caches, the objects ud controls.
func (r *Reconciler) observeOwned(ctx context.Context, ud *schedv1.UserDeployment, a apis) (map[objectKey]client.Object, error) {
	owned := map[objectKey]client.Object{}
	// A label lookup scans the namespace's cached objects of the kind; an
	// index would make it a lookup but costs about 0.4 KiB per cached
	// object (measured by hack/test/bench/heap), which matters more.
	opts := []client.ListOption{client.InNamespace(ud.Namespace), client.MatchingLabels{schedv1.LabelUserDeployment: ud.Name}}
	collect := func(kind string, reader client.Reader, list client.ObjectList) error {
		if err := reader.List(ctx, list, opts...); err != nil {
			return fmt.Errorf("list %ss: %w", kind, err)
		}
		return meta.EachListItem(list, func(o runtime.Object) error {
			if obj := o.(client.Object); metav1.IsControlledBy(obj, ud) {
				owned[objectKey{kind, obj.GetName()}] = obj
			}
			return nil
		})
	}
	for _, k := range builtinKinds {
		if err := collect(k.kind, r.Client, k.list()); err != nil {
			return nil, err
		}
	}
	for _, gvk := range a.kinds() {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := collect(gvk.Kind, r.optional, list); err != nil {
			return nil, err
		}
	}
	return owned, nil
}

func (r *Reconciler) observePods(ctx context.Context, ud *schedv1.UserDeployment) (map[string][]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(ud.Namespace), client.MatchingLabels{schedv1.LabelUserDeployment: ud.Name}); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	pods := map[string][]corev1.Pod{}
	for _, pod := range list.Items {
		svc := pod.Labels[schedv1.LabelService]
		pods[svc] = append(pods[svc], pod)
	}
	return pods, nil
}

// asDeployment reads a service's workload, a Deployment or a StatefulSet
// (seen through statefulSetView).
func asDeployment(obj client.Object) (*appsv1.Deployment, error) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return o, nil
	case *appsv1.StatefulSet:
		return statefulSetView(o), nil
	case *unstructured.Unstructured:
		if o.GetKind() == "StatefulSet" {
			sts := &appsv1.StatefulSet{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, sts); err != nil {
				return nil, fmt.Errorf("read StatefulSet %s: %w", o.GetName(), err)
			}
			return statefulSetView(sts), nil
		}
		dep := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, dep); err != nil {
			return nil, fmt.Errorf("read Deployment %s: %w", o.GetName(), err)
		}
		return dep, nil
	}
	return nil, fmt.Errorf("unexpected %T for a Deployment", obj)
}
