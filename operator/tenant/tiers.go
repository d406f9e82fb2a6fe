// Package tenant keeps each tenant namespace's ResourceQuota and LimitRange
// in line with its tier: a namespace labelled sched.kubectl-sched.dev/tier
// gets the quota and limits the tiers ConfigMap defines for that tier, and
// edits to them are repaired.
package tenant

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Tier is one entry of the tiers ConfigMap: a key per tier whose value is
// this, as YAML.
type Tier struct {
	// Quota is the namespace's ResourceQuota hard limits.
	Quota corev1.ResourceList `json:"quota"`
	// Limits are the per-container defaults and bounds of its LimitRange.
	Limits *ContainerLimits `json:"limits,omitempty"`
}

// ContainerLimits is the Container item of a LimitRange.
type ContainerLimits struct {
	Default        corev1.ResourceList `json:"default,omitempty"`
	DefaultRequest corev1.ResourceList `json:"defaultRequest,omitempty"`
	Max            corev1.ResourceList `json:"max,omitempty"`
}

// ParseTiers reads every tier of the ConfigMap; a tier that does not parse
// is reported in bad and left out.
func ParseTiers(cm *corev1.ConfigMap) (tiers map[string]Tier, bad map[string]error) {
	tiers, bad = map[string]Tier{}, map[string]error{}
	for name, data := range cm.Data {
		var t Tier
		if err := yaml.UnmarshalStrict([]byte(data), &t); err != nil {
			bad[name] = err
			continue
		}
		if len(t.Quota) == 0 {
			bad[name] = fmt.Errorf("no quota")
			continue
		}
		tiers[name] = t
	}
	return tiers, bad
}

// Names lists the tiers, sorted.
func Names(tiers map[string]Tier) []string {
	names := make([]string, 0, len(tiers))
	for n := range tiers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
