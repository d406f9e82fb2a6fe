package fit

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	resourcehelper "k8s.io/component-helpers/resource"
)

// WithDefaults returns a copy of pod with the requests and limits the API
// server would give it at creation: a request defaults to the container's
// limit, then each LimitRange of the namespace fills in its container
// defaults (the LimitRanger admission plugin), so quota sees what the
// API server will count.
func WithDefaults(pod *corev1.Pod, ranges []corev1.LimitRange) *corev1.Pod {
	pod = pod.DeepCopy()
	fill := func(c *corev1.Container) {
		for name, q := range c.Resources.Limits {
			if _, ok := c.Resources.Requests[name]; !ok {
				if c.Resources.Requests == nil {
					c.Resources.Requests = corev1.ResourceList{}
				}
				c.Resources.Requests[name] = q
			}
		}
		for _, lr := range ranges {
			for _, item := range lr.Spec.Limits {
				if item.Type != corev1.LimitTypeContainer {
					continue
				}
				c.Resources.Limits = withMissing(c.Resources.Limits, item.Default)
				c.Resources.Requests = withMissing(c.Resources.Requests, item.DefaultRequest)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		fill(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		fill(&pod.Spec.Containers[i])
	}
	return pod
}

func withMissing(list, defaults corev1.ResourceList) corev1.ResourceList {
	for name, q := range defaults {
		if _, ok := list[name]; !ok {
			if list == nil {
				list = corev1.ResourceList{}
			}
			list[name] = q
		}
	}
	return list
}

// Quota says which of the namespace's quotas would refuse n more pods like
// pod (after WithDefaults), as the API server's ResourceQuota admission
// would: a resource whose use would pass its hard limit, one the quota
// controller has not counted yet, or a container that does not set a
// request or limit the quota tracks. A quota whose scopes do not select
// the pod does not count.
func Quota(pod *corev1.Pod, n int, quotas []corev1.ResourceQuota) []Reason {
	if n <= 0 {
		return nil
	}
	usage := podUsage(pod)
	var out []Reason
	for _, q := range quotas {
		if !selects(&q, pod) {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(q.Spec.Hard)) {
			if missing := unset(pod, name); len(missing) > 0 {
				out = append(out, Reason{Kind: KindQuota, Message: fmt.Sprintf("quota %s tracks %s, which container %s does not set (and no LimitRange gives it a default)",
					q.Name, name, strings.Join(missing, ", "))})
				continue
			}
			per, ok := usage[name]
			if !ok || per.IsZero() {
				continue
			}
			hard := q.Spec.Hard[name]
			used, counted := q.Status.Used[name]
			if !counted {
				out = append(out, Reason{Kind: KindQuota, Message: fmt.Sprintf("quota %s has not counted %s yet, so the API server refuses pods for now", q.Name, name)})
				continue
			}
			asked := per.DeepCopy()
			asked.Mul(int64(n))
			after := used.DeepCopy()
			after.Add(asked)
			if after.Cmp(hard) > 0 {
				out = append(out, Reason{Kind: KindQuota, Message: fmt.Sprintf("quota %s is full: %s %s used of %s, %s more asked",
					q.Name, name, used.String(), hard.String(), asked.String())})
			}
		}
	}
	return out
}

// podUsage is what one pod counts against a quota, by quota resource name.
func podUsage(pod *corev1.Pod) map[corev1.ResourceName]resource.Quantity {
	u := map[corev1.ResourceName]resource.Quantity{
		corev1.ResourcePods: resource.MustParse("1"),
		"count/pods":        resource.MustParse("1"),
	}
	for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
		u[corev1.ResourceName("requests."+string(name))] = q
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
			u[name] = q
		}
	}
	for name, q := range resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{}) {
		u[corev1.ResourceName("limits."+string(name))] = q
	}
	return u
}

// unset names the containers that set no value for a compute resource the
// quota tracks: the API server refuses such a pod ("must specify").
func unset(pod *corev1.Pod, quotaResource corev1.ResourceName) []string {
	var get func(c *corev1.Container) corev1.ResourceList
	var name corev1.ResourceName
	switch quotaResource {
	case corev1.ResourceCPU, corev1.ResourceRequestsCPU:
		get, name = func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests }, corev1.ResourceCPU
	case corev1.ResourceMemory, corev1.ResourceRequestsMemory:
		get, name = func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests }, corev1.ResourceMemory
	case corev1.ResourceLimitsCPU:
		get, name = func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits }, corev1.ResourceCPU
	case corev1.ResourceLimitsMemory:
		get, name = func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits }, corev1.ResourceMemory
	default:
		return nil
	}
	var out []string
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		if _, ok := get(&c)[name]; !ok {
			out = append(out, c.Name)
		}
	}
	return out
}

// selects reports whether q's scopes select pod, as the quota's pod
// evaluator matches them. Scopes that select no pod of ours
// (CrossNamespacePodAffinity) or none of a pod (VolumeAttributesClass)
// do not match.
func selects(q *corev1.ResourceQuota, pod *corev1.Pod) bool {
	for _, s := range q.Spec.Scopes {
		if !inScope(s, corev1.ScopeSelectorOpExists, nil, pod) {
			return false
		}
	}
	if q.Spec.ScopeSelector != nil {
		for _, e := range q.Spec.ScopeSelector.MatchExpressions {
			if !inScope(e.ScopeName, e.Operator, e.Values, pod) {
				return false
			}
		}
	}
	return true
}

func inScope(scope corev1.ResourceQuotaScope, op corev1.ScopeSelectorOperator, values []string, pod *corev1.Pod) bool {
	terminating := pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
	switch scope {
	case corev1.ResourceQuotaScopeTerminating:
		return terminating
	case corev1.ResourceQuotaScopeNotTerminating:
		return !terminating
	case corev1.ResourceQuotaScopeBestEffort:
		return bestEffort(pod)
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !bestEffort(pod)
	case corev1.ResourceQuotaScopePriorityClass:
		// The quota evaluator matches a set with the pod's class under
		// the key PriorityClass, empty when it has none.
		set := labels.Set{}
		if pod.Spec.PriorityClassName != "" {
			set[string(corev1.ResourceQuotaScopePriorityClass)] = pod.Spec.PriorityClassName
		}
		ops := map[corev1.ScopeSelectorOperator]selection.Operator{
			corev1.ScopeSelectorOpIn: selection.In, corev1.ScopeSelectorOpNotIn: selection.NotIn,
			corev1.ScopeSelectorOpExists: selection.Exists, corev1.ScopeSelectorOpDoesNotExist: selection.DoesNotExist,
		}
		r, err := labels.NewRequirement(string(corev1.ResourceQuotaScopePriorityClass), ops[op], values)
		return err == nil && labels.NewSelector().Add(*r).Matches(set)
	}
	return false
}

func bestEffort(pod *corev1.Pod) bool {
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
			return false
		}
	}
	return true
}
