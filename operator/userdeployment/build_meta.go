package userdeployment

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// objectLabels mark what the operator manages (its caches select on them)
// and which app and service an object belongs to.
func objectLabels(ud *schedv1.UserDeployment, service string) map[string]string {
	l := map[string]string{
		schedv1.LabelManagedBy:      schedv1.ManagedByValue,
		schedv1.LabelUserDeployment: ud.Name,
	}
	if service != "" {
		l[schedv1.LabelService] = service
	}
	return l
}

// selectorLabels pick one service's pods. They never change, since a
// Deployment's selector is immutable.
func selectorLabels(ud *schedv1.UserDeployment, service string) map[string]string {
	return map[string]string{schedv1.LabelUserDeployment: ud.Name, schedv1.LabelService: service}
}

// objectMeta is what every object of ud carries: its name, labels and
// ud as controller.
func objectMeta(ud *schedv1.UserDeployment, name, service string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       ud.Namespace,
		Labels:          objectLabels(ud, service),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ud, schedv1.GroupVersion.WithKind("UserDeployment"))},
	}
}

func unstructuredObject(gvk schema.GroupVersionKind, m metav1.ObjectMeta, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetName(m.Name)
	u.SetNamespace(m.Namespace)
	u.SetLabels(m.Labels)
	u.SetOwnerReferences(m.OwnerReferences)
	return u
}
