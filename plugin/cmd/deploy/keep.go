package deploy

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
)

// keepScale keeps the replicas of each service of current that ud leaves
// unset, when kubectl-sched set them (`kubectl sched scale`, or an earlier
// deploy that set them): server-side apply would otherwise remove them
// with the rest of what this manager no longer sends, and the service
// would fall back to the CRD's default of 1. Whether the template sets a
// service's replicas is whether the rendered object has them, before the
// API server's defaults: a template that names them (a literal, or a
// parameter, its default included) sets them, as --replicas does with
// --image. Replicas that another manager set stay without this, as
// server-side apply keeps them.
//
// It notes on stderr each service whose replicas the deploy keeps or
// changes, and each it removes.
func (o *Options) keepScale(ud *schedv1.UserDeployment, current *unstructured.Unstructured) error {
	if current == nil {
		return nil
	}
	live := &schedv1.UserDeployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(current.Object, live); err != nil {
		return fmt.Errorf("userdeployment %s: %w", o.Name, err)
	}
	applied, err := kube.Applied(current, kube.FieldManager)
	if err != nil {
		return err
	}
	scaled := map[string]int32{}
	var ours []string
	items, _, _ := unstructured.NestedSlice(applied.Object, "spec", "services")
	for _, item := range items {
		m, _ := item.(map[string]any)
		name, _ := m["name"].(string)
		ours = append(ours, name)
		if n, ok := m["replicas"].(int64); ok {
			scaled[name] = int32(n)
		}
	}
	for i := range ud.Spec.Services {
		s := &ud.Spec.Services[i]
		j := slices.IndexFunc(live.Spec.Services, func(l schedv1.ServiceSpec) bool { return l.Name == s.Name })
		if j < 0 {
			continue
		}
		now := ptr.Deref(live.Spec.Services[j].Replicas, 1)
		n, set := scaled[s.Name]
		switch {
		case s.Replicas == nil && set:
			s.Replicas = ptr.To(n)
			if n != 1 {
				fmt.Fprintf(o.ErrOut, "note: service %s keeps its %d replicas (kubectl sched scale changes them)\n", s.Name, n)
			}
		case s.Replicas != nil && *s.Replicas != now && o.Template != "":
			fmt.Fprintf(o.ErrOut, "note: service %s goes from %d to %d replicas: the template sets them\n", s.Name, now, *s.Replicas)
		}
	}
	for _, l := range live.Spec.Services {
		if slices.Contains(ours, l.Name) && !slices.ContainsFunc(ud.Spec.Services, func(s schedv1.ServiceSpec) bool { return s.Name == l.Name }) {
			fmt.Fprintf(o.ErrOut, "note: service %s is not in the new spec: the operator removes it\n", l.Name)
		}
	}
	return nil
}
