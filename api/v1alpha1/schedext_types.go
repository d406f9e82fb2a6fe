package v1alpha1

import (
	"regexp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SchedulerSource is the sched_ext scheduler to load: a well-known scx
// scheduler the operator resolves to an image, an image of your own, or a
// well-known scheduler from an image you name (a different scx release for
// this SchedExt than the operator's default).
// +kubebuilder:validation:XValidation:rule="has(self.name) || has(self.image)",message="set scheduler.name (a well-known scheduler such as scx_lavd), scheduler.image, or both (the named scheduler from your image)"
// +kubebuilder:validation:XValidation:rule="!has(self.opsName) || (has(self.image) && !has(self.name))",message="opsName is only needed with scheduler.image alone; a well-known name already says which ops attach",fieldPath=".opsName"
type SchedulerSource struct {
	// Name of a well-known scheduler (scx_rusty, scx_lavd, scx_bpfland,
	// scx_rustland, scx_layered, scx_p2dq, scx_flash, scx_cosmos), resolved
	// to an image by the operator's configuration. It is the value of the
	// node label node.kubectl-sched.dev/cpu-scheduler on the nodes where
	// the kernel reports it attached, which placement.cpuScheduler asks for.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^scx_[a-z0-9_]+$`
	Name string `json:"name,omitempty"`

	// Image of a sched_ext loader. Its entrypoint must keep running while the
	// scheduler is attached and exit cleanly on SIGTERM. With a name, the
	// image holds that scheduler (as the scx images do), which is run in
	// place of the one the operator's settings resolve the name to.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// OpsName is the prefix /sys/kernel/sched_ext/root/ops shows when the
	// image's scheduler is attached (for scx_rusty it is "rusty"). With an
	// image and no opsName, any attached scheduler counts as attached.
	// Workloads ask for an image's scheduler as scx_ followed by opsName
	// (placement.cpuScheduler: scx_rusty for opsName rusty), the value of
	// the node label node.kubectl-sched.dev/cpu-scheduler where it is
	// attached; an opsName with capitals, '.' or '-', or none at all,
	// labels no node, since which scheduler attached cannot be told.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.-]+$`
	OpsName string `json:"opsName,omitempty"`
}

// CPUScheduler is the name workloads ask for this scheduler by
// (placement.cpuScheduler) and the value of NodeLabelCPUScheduler where it
// is attached: the well-known name, else scx_ and the opsName; "" when
// neither says which scheduler attaches (an image without opsName, or an
// opsName that does not fit a label value of the form scx_[a-z0-9_]+).
func (s SchedulerSource) CPUScheduler() string {
	name := s.Name
	if name == "" && s.OpsName != "" {
		name = "scx_" + s.OpsName
	}
	if len(name) > 63 || !cpuSchedulerName.MatchString(name) {
		return ""
	}
	return name
}

// cpuSchedulerName is placement.cpuScheduler's pattern.
var cpuSchedulerName = regexp.MustCompile(`^scx_[a-z0-9_]+$`)

// SchedExtSpec selects nodes and the scheduler to load on them.
type SchedExtSpec struct {
	// Scheduler to load.
	Scheduler SchedulerSource `json:"scheduler"`

	// Args to the scheduler binary.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=1024
	Args []string `json:"args,omitempty"`

	// Env for the scheduler container.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Env []EnvVar `json:"env,omitempty"`

	// NodeSelector picks the nodes; every node when empty. A node already
	// taken by an older SchedExt stays with it (one scheduler per node): the
	// oldest by creationTimestamp, then by name, keeps it.
	// At most 16 labels, keys of at most 317 characters, values of at most 63.
	// Not node.kubectl-sched.dev/cpu-scheduler, which the operator sets
	// from what SchedExts attach.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && size(self[k]) <= 63)",message="node selector keys may have at most 317 characters and values 63"
	// +kubebuilder:validation:XValidation:rule="!('node.kubectl-sched.dev/cpu-scheduler' in self)",message="node.kubectl-sched.dev/cpu-scheduler is set by the operator from what SchedExts attach, so a SchedExt cannot select by it; select by the node pool or another label"
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations let the scheduler run on tainted nodes. A node with a
	// NoSchedule or NoExecute taint that is not tolerated is not selected,
	// so it does not count against younger SchedExts either. At most 16,
	// each key at most 317 characters, value 63, operator and effect 16.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(t, (!has(t.key) || size(t.key) <= 317) && (!has(t.value) || size(t.value) <= 63) && (!has(t.operator) || size(t.operator) <= 16) && (!has(t.effect) || size(t.effect) <= 16))",message="each toleration's key may have at most 317 characters, its value 63, its operator and effect 16"
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Resources for the scheduler container.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`

	// ImagePullSecrets in the operator's scheduler namespace: at most 8
	// names of at most 253 characters.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(r, size(r.?name.orValue('')) <= 253)",message="image pull secret names may have at most 253 characters"
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// PodMetadata holds labels and annotations passed through to the
	// scheduler pods (for example for log collection or cost allocation).
	// +optional
	PodMetadata *PodMetadata `json:"podMetadata,omitempty"`
}

// MaxStatusNodes is the most nodes a SchedExt's status lists as
// conflicting or unsupported; its conditions give the counts.
const MaxStatusNodes = 1000

// SchedExtStatus tells the truth about attach: a node counts as ready only
// while its kernel reports the expected scheduler attached.
type SchedExtStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ResolvedImage is the image the DaemonSet runs.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	ResolvedImage string `json:"resolvedImage,omitempty"`

	// DaemonSetName is the DaemonSet in the operator's scheduler namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DaemonSetName string `json:"daemonSetName,omitempty"`

	// DesiredNodes the scheduler should be loaded on, conflicts excluded.
	// +optional
	DesiredNodes int32 `json:"desiredNodes"`

	// ReadyNodes where the kernel reports the scheduler attached.
	// +optional
	ReadyNodes int32 `json:"readyNodes"`

	// AvailableNodes have been ready for the DaemonSet's minReadySeconds.
	// +optional
	AvailableNodes int32 `json:"availableNodes"`

	// UnavailableNodes should run the scheduler but do not have it attached.
	// +optional
	UnavailableNodes int32 `json:"unavailableNodes"`

	// ConflictingNodes match the selector but belong to an older SchedExt
	// (the first MaxStatusNodes, by name).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=253
	ConflictingNodes []string `json:"conflictingNodes,omitempty"`

	// UnsupportedNodes run a kernel without sched_ext (the first
	// MaxStatusNodes, by name).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=253
	UnsupportedNodes []string `json:"unsupportedNodes,omitempty"`

	// Conditions: Ready, Progressing, Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=scx,categories=sched
// +kubebuilder:printcolumn:name="Scheduler",type=string,JSONPath=`.spec.scheduler.name`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredNodes`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyNodes`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableNodes`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].reason`,priority=1
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.status.resolvedImage`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 50",message="metadata.name must be at most 50 characters (the DaemonSet is named scx-<name>)"

// SchedExt loads a sched_ext CPU scheduler on the selected nodes through a
// DaemonSet. It is cluster-scoped: a node runs one kernel scheduler.
type SchedExt struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the scheduler and the nodes.
	// +required
	Spec SchedExtSpec `json:"spec"`

	// Status is what the nodes report.
	// +optional
	Status SchedExtStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SchedExtList is a list of SchedExts.
type SchedExtList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SchedExt `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SchedExt{}, &SchedExtList{})
}
