package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StepCache lets a step reuse the outputs of a step that already ran with
// the same key in the same namespace, instead of running its task again.
type StepCache struct {
	// Key names what the step's outputs depend on, with the references a
	// step's task may hold (${params.NAME}, ${steps.NAME.output.KEY}, and
	// in a finally step ${workflow.phase}), resolved when the step would
	// start: at most 1024 characters, resolved or not. A step whose key
	// resolves to the key of a step task in the namespace that Succeeded
	// within maxAge takes that task's outputs and runs nothing (reason
	// CacheHit).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Key string `json:"key"`

	// MaxAge is how long ago the task found may have finished: 1s to
	// 8760h. Unset, any age: a result lasts as long as the task that made
	// it, which is deleted with its workflow (spec.ttlAfterFinished, the
	// tier's TTLs or the cluster's default).
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('8760h')",message="cache.maxAge must be between 1s and 8760h"
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// CachedFrom is the step task whose outputs a cache hit took.
type CachedFrom struct {
	// Task is the AgentTask, in the workflow's namespace.
	// +kubebuilder:validation:MaxLength=253
	Task string `json:"task"`
	// Workflow is the workflow that ran it, when it still controls it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Workflow string `json:"workflow,omitempty"`
	// CompletionTime is when that task Succeeded.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// MaxCacheKeyLength is the longest a step's cache key may be, written or
// resolved, in bytes.
const MaxCacheKeyLength = 1024

// LabelCacheKey is on the AgentTask of a step with a cache key: a hash of
// the resolved key (CacheKeyHash), which the operator's cache indexes.
// Only the operator sets it (config/policy/reserved_labels.yaml).
const LabelCacheKey = GroupName + "/cache-key"

// AnnotationCacheKey is beside LabelCacheKey: the resolved key whole, so
// two keys whose hashes collide are never taken for each other.
const AnnotationCacheKey = GroupName + "/cache-key"

// ReasonCacheHit is the reason of a step with a cache key that took the
// outputs of a step task that Succeeded with the same key, and ran
// nothing.
const ReasonCacheHit = "CacheHit"

// CacheKeyHash is LabelCacheKey's value for a resolved key: the first 40
// hex digits of its SHA-256 (a label value holds at most 63 characters).
func CacheKeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])[:40]
}
