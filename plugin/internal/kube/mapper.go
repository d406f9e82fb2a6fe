package kube

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
)

// restMapper maps the kinds commands use without asking the server.
func restMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	ns := meta.RESTScopeNamespace
	root := meta.RESTScopeRoot
	add := func(gv schema.GroupVersion, kind, plural string, scope meta.RESTScope) {
		m.AddSpecific(gv.WithKind(kind), gv.WithResource(plural), gv.WithResource(plural[:len(plural)-1]), scope)
		m.AddSpecific(gv.WithKind(kind+"List"), gv.WithResource(plural), gv.WithResource(plural[:len(plural)-1]), scope)
	}
	for _, k := range kinds.Kinds {
		scope := root
		if k.Namespaced {
			scope = ns
		}
		add(schedv1.GroupVersion, k.Kind, k.Plural, scope)
	}
	v1 := schema.GroupVersion{Version: "v1"}
	add(v1, "Pod", "pods", ns)
	add(v1, "Event", "events", ns)
	add(v1, "Secret", "secrets", ns)
	add(v1, "ConfigMap", "configmaps", ns)
	add(v1, "Service", "services", ns)
	add(v1, "Namespace", "namespaces", root)
	add(v1, "Node", "nodes", root)
	add(v1, "ResourceQuota", "resourcequotas", ns)
	add(v1, "LimitRange", "limitranges", ns)
	rbac := schema.GroupVersion{Group: "rbac.authorization.k8s.io", Version: "v1"}
	add(rbac, "RoleBinding", "rolebindings", ns)
	apps := schema.GroupVersion{Group: "apps", Version: "v1"}
	add(apps, "Deployment", "deployments", ns)
	add(apps, "DaemonSet", "daemonsets", ns)
	add(apps, "StatefulSet", "statefulsets", ns)
	add(apps, "ControllerRevision", "controllerrevisions", ns)
	autoscaling := schema.GroupVersion{Group: "autoscaling", Version: "v2"}
	add(autoscaling, "HorizontalPodAutoscaler", "horizontalpodautoscalers", ns)
	batch := schema.GroupVersion{Group: "batch", Version: "v1"}
	add(batch, "Job", "jobs", ns)
	ext := schema.GroupVersion{Group: "apiextensions.k8s.io", Version: "v1"}
	add(ext, "CustomResourceDefinition", "customresourcedefinitions", root)
	return m
}

func toUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	gvks, _, err := Scheme.ObjectKinds(obj)
	if err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvks[0])
	return u, nil
}
