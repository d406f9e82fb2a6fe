// Package tenant keeps each tenant namespace's ResourceQuota and LimitRange
// in line with its tier: a namespace labelled sched.kubectl-sched.dev/tier
// gets the quota and limits the tiers ConfigMap defines for that tier, and
// edits to them are repaired.
package tenant

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// Tier is one entry of the tiers ConfigMap: a key per tier whose value is
// this, as YAML.
type Tier struct {
	// Quota is the namespace's ResourceQuota hard limits.
	Quota corev1.ResourceList `json:"quota"`
	// Limits are the per-container defaults and bounds of its LimitRange.
	Limits *ContainerLimits `json:"limits,omitempty"`
	// Placement bounds what the tier's workloads may ask for. Left out,
	// the tier allows the least: priority Low, no pools, no tolerations.
	Placement PlacementLimits `json:"placement,omitempty"`
	// TTL is how long finished tasks and workflows are kept: they count
	// against the quota's count/ resources until they are deleted.
	TTL TTLLimits `json:"ttl,omitempty"`
	// Apps bounds what the operator keeps for each app.
	Apps AppLimits `json:"apps,omitempty"`
	// Outputs bounds what a task hands over as outputs.
	Outputs OutputLimits `json:"outputs,omitempty"`
}

// OutputLimits are a tier's bounds on a task's outputs.
type OutputLimits struct {
	// MaxFileBytes is the most bytes a task's file outputs
	// (spec.outputs.fromDir) hold in all, kept in the task's status. Left
	// out: the API's own bound, 1Mi.
	MaxFileBytes *resource.Quantity `json:"maxFileBytes,omitempty"`
}

// AppLimits are a tier's bounds on what the operator keeps for an app.
type AppLimits struct {
	// MaxRevisions is the most revisions (ControllerRevisions, each up to
	// 1.5 MiB) the operator keeps of one app, whatever its
	// spec.revisionHistoryLimit asks (admission refuses more, naming the
	// tier; the default 10 is lowered to it). Left out: the API's own
	// bound, 100.
	MaxRevisions *int32 `json:"maxRevisions,omitempty"`
}

// TTLLimits are a tier's bounds on ttlAfterFinished, for AgentTasks and
// Workflows alike.
type TTLLimits struct {
	// Default is what the operator applies to a task or workflow whose
	// spec has no ttlAfterFinished (a task: the task and its Job). Left
	// out: none, they are kept until deleted.
	Default *metav1.Duration `json:"default,omitempty"`
	// Max is the longest ttlAfterFinished a spec may ask (admission
	// refuses more, naming the tier), and how long a task whose cleanup is
	// Job is kept. Left out: no bound.
	Max *metav1.Duration `json:"max,omitempty"`
}

// maxTTL is the CRDs' own bound on ttlAfterFinished.
const maxTTL = 8760 * time.Hour

// maxRevisions is the CRD's own bound on spec.revisionHistoryLimit.
const maxRevisions = 100

// ContainerLimits is the Container item of a LimitRange.
type ContainerLimits struct {
	Default        corev1.ResourceList `json:"default,omitempty"`
	DefaultRequest corev1.ResourceList `json:"defaultRequest,omitempty"`
	Max            corev1.ResourceList `json:"max,omitempty"`
}

// PlacementLimits is what a tier's AgentTasks, Workflow steps, apps and
// pods may ask of the scheduler. Admission enforces them (the policy
// kubectl-sched-tier-placement reads them from the tier's ResourceQuota).
type PlacementLimits struct {
	// MaxPriority is the highest placement.priority: Low (the default),
	// Medium, High or Critical. Pods of a higher PriorityClass are held by
	// a ResourceQuota.
	MaxPriority schedv1.Priority `json:"maxPriority,omitempty"`
	// NodePools are the pools placement.nodePools may name, which also
	// tolerates their pool taint; "*" allows any. None by default.
	NodePools []string `json:"nodePools,omitempty"`
	// Tolerations are the taint keys a workload may tolerate, by
	// placement.tolerations, spot (node.kubectl-sched.dev/spot) or
	// workloadType GPU (nvidia.com/gpu); "*" allows any. None by default.
	// Of Kubernetes' own node taints (node.kubernetes.io/...) only what
	// it adds to every pod is allowed without being listed: not-ready and
	// unreachable as NoExecute, for at most MaxTolerationSeconds. A
	// toleration without a key never is, unless "*".
	Tolerations []string `json:"tolerations,omitempty"`
	// MaxTolerationSeconds bounds how long a workload may stay bound to a
	// node that is not ready or unreachable: the tolerationSeconds of
	// those two tolerations. Left out: DefaultMaxTolerationSeconds, what
	// the API server gives every pod (--default-not-ready-toleration-seconds,
	// --default-unreachable-toleration-seconds); a cluster that raised
	// those raises this too.
	MaxTolerationSeconds *int64 `json:"maxTolerationSeconds,omitempty"`
}

// DefaultMaxTolerationSeconds is PlacementLimits.MaxTolerationSeconds when
// it is left out: the API server's default tolerationSeconds for
// not-ready and unreachable.
const DefaultMaxTolerationSeconds = 300

// maxTolerationSeconds bounds MaxTolerationSeconds: a day.
const maxTolerationSeconds = 86400

// Any in NodePools or Tolerations allows every pool or taint.
const Any = "*"

// maxListed bounds NodePools and Tolerations: they end up in annotations
// an admission policy splits on every request.
const maxListed = 32

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
		if err := t.validate(); err != nil {
			bad[name] = err
			continue
		}
		tiers[name] = t
	}
	return tiers, bad
}

func (t Tier) validate() error {
	if len(t.Quota) == 0 {
		return fmt.Errorf("no quota")
	}
	p := t.Placement
	if p.MaxPriority != "" && !slices.Contains(schedv1.Priorities, p.MaxPriority) {
		return fmt.Errorf("placement.maxPriority %q is not one of %v", p.MaxPriority, schedv1.Priorities)
	}
	if len(p.NodePools) > maxListed || len(p.Tolerations) > maxListed {
		return fmt.Errorf("placement lists more than %d node pools or tolerations", maxListed)
	}
	for _, pool := range p.NodePools {
		if errs := validation.IsDNS1123Label(pool); pool != Any && len(errs) > 0 {
			return fmt.Errorf("placement.nodePools: %q is not a pool name (a label value): %v", pool, errs)
		}
	}
	for _, key := range p.Tolerations {
		if errs := validation.IsQualifiedName(key); key != Any && len(errs) > 0 {
			return fmt.Errorf("placement.tolerations: %q is not a taint key: %v", key, errs)
		}
	}
	if s := p.MaxTolerationSeconds; s != nil && (*s < 0 || *s > maxTolerationSeconds) {
		return fmt.Errorf("placement.maxTolerationSeconds %d is not between 0 and %d", *s, maxTolerationSeconds)
	}
	for _, f := range []struct {
		name string
		d    *metav1.Duration
	}{{"ttl.default", t.TTL.Default}, {"ttl.max", t.TTL.Max}} {
		if f.d != nil && (f.d.Duration <= 0 || f.d.Duration > maxTTL) {
			return fmt.Errorf("%s %s is not between 0s (excluded) and %s", f.name, f.d.Duration, maxTTL)
		}
	}
	if m := t.Apps.MaxRevisions; m != nil && (*m < 1 || *m > maxRevisions) {
		return fmt.Errorf("apps.maxRevisions %d is not between 1 and %d", *m, maxRevisions)
	}
	if q := t.Outputs.MaxFileBytes; q != nil && (q.Sign() <= 0 || q.Value() > schedv1.MaxFileOutputBytes) {
		return fmt.Errorf("outputs.maxFileBytes %s is not between 0 (excluded) and 1Mi", q)
	}
	if d, m := t.TTL.Default, t.TTL.Max; d != nil && m != nil && d.Duration > m.Duration {
		return fmt.Errorf("ttl.default %s is above ttl.max %s", tiers.FormatDuration(d.Duration), tiers.FormatDuration(m.Duration))
	}
	return nil
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
