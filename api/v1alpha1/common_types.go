package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels the operator and the plugin put on the objects they create, so they
// can be found with a selector and cached by label.
const (
	// LabelManagedBy marks every object the operator owns.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the LabelManagedBy value for objects created by the operator.
	ManagedByValue = "kubectl-sched"

	LabelUserDeployment = GroupName + "/userdeployment"
	LabelService        = GroupName + "/service"
	LabelAgentTask      = GroupName + "/agenttask"
	LabelWorkflow       = GroupName + "/workflow"
	LabelWorkflowStep   = GroupName + "/step"
	// LabelWorkflowItem is on the AgentTask (and its Job and pods) of one
	// item of a forEach step: the item's index, from 0, beside
	// LabelWorkflowStep.
	LabelWorkflowItem = GroupName + "/item"
	LabelSchedExt     = GroupName + "/schedext"
	// LabelCPUScheduler is on a SchedExt's loader pods: the scheduler
	// name (SchedulerSource.CPUScheduler) whose ops the pod's attach check
	// looks for. While the pod is Ready its node carries
	// NodeLabelCPUScheduler with this value; a pod without it (an image
	// with no opsName) labels no node.
	LabelCPUScheduler = GroupName + "/cpu-scheduler"

	// LabelRevisionHash is on the ControllerRevisions that record an app's
	// revisions: a hash of the revision's data (api/revision). Only the
	// operator sets it (config/policy/reserved_labels.yaml), and its caches
	// select revisions by it, so the ControllerRevisions the StatefulSet
	// controller makes, which copy the pods' labels, are not taken for
	// them.
	LabelRevisionHash = GroupName + "/revision-hash"
)

// AnnotationChangedBy on a revision's ControllerRevision is the field
// manager of the change that made it, from the app's managed fields: the
// tool, such as kubectl-sched or kubectl-edit, not the user (objects do
// not record users).
const AnnotationChangedBy = GroupName + "/changed-by"

// FinalizerOutputs is on every AgentTask pod until the operator has recorded
// the pod's outputs in the task's status, so that nothing deletes a pod
// before its termination message is read.
const FinalizerOutputs = GroupName + "/outputs"

// ReleaseOutputsPatch is the strategic merge patch that removes
// FinalizerOutputs from a pod and nothing else: a merge patch of the whole
// list could undo a concurrent change to another finalizer, such as the Job
// controller's.
const ReleaseOutputsPatch = `{"metadata":{"$deleteFromPrimitiveList/finalizers":["` + FinalizerOutputs + `"]}}`

// Node labels that placement translates to. Clusters label their nodes with
// these keys (the local simulated cluster does).
const (
	NodeLabelPool = "node.kubectl-sched.dev/pool"
	NodeLabelSpot = "node.kubectl-sched.dev/spot"
	NodeLabelGPU  = "node.kubectl-sched.dev/gpu"
	NodeLabelZone = "topology.kubernetes.io/zone"

	// NodeLabelCPUScheduler is set by the SchedExt controller, never by
	// hand: the sched_ext scheduler (for example scx_lavd) the kernel of
	// the node reports attached, as SchedulerSource.CPUScheduler names it.
	// It is removed when the scheduler detaches, the node leaves the
	// SchedExt's selection or goes to an older SchedExt, or the SchedExt
	// is deleted; a value nobody's loader attached is removed too.
	// placement.cpuScheduler requires it.
	NodeLabelCPUScheduler = "node.kubectl-sched.dev/cpu-scheduler"

	TaintSpot = "node.kubectl-sched.dev/spot"
	TaintGPU  = "nvidia.com/gpu"
	// TaintPool reserves a pool's nodes (value: the pool): only workloads
	// that name the pool in nodePools tolerate it.
	TaintPool = NodeLabelPool
)

// AnnotationPreviousStepFinished is set by the Workflow controller on a
// step's task: when it saw the previous step finish (RFC 3339, nanoseconds).
// The AgentTask controller's hand-off metric runs from it to the task's Job
// being created; pod and Job timestamps only have whole seconds.
const AnnotationPreviousStepFinished = GroupName + "/previous-step-finished-at"

// AnnotationWorkflowUID on a workspace's PersistentVolumeClaim is the UID
// of the run it was made for: a kept claim has no owner, and this tells
// the operator, after a restart, that the claim holding the name is that
// run's own.
const AnnotationWorkflowUID = GroupName + "/workflow-uid"

// AnnotationSecretHash on a UserDeployment is a digest of the values of the
// Secret `kubectl sched deploy` writes for it. The operator copies it to the
// pod templates of the services that receive secrets, so a changed value
// rolls their pods: they read secrets as environment variables at start.
// The operator cannot compute it itself, as it never reads Secrets. It is
// keyed with the Secret's UID, so it tells nothing about the values to those
// who may read the app but not the Secret.
const AnnotationSecretHash = GroupName + "/secret-hash"

// AnnotationAllowedHosts on a Namespace lists, comma-separated, the hosts
// outside the ingress domain that its apps may route: exact hosts
// (shop.example.org) or *.suffix patterns (*.example.org: any host under
// example.org, not example.org itself). Only whoever may update Namespaces
// (cluster admins, not edit or admin) can set it.
const AnnotationAllowedHosts = GroupName + "/allowed-hosts"

// Namespaces the manifests in config/ install into, and the operator's
// defaults; an install may choose others.
const (
	// DefaultOperatorNamespace runs the operator and holds templates shared
	// with the whole cluster.
	DefaultOperatorNamespace = "kubectl-sched-system"
	// DefaultSchedulerNamespace holds the SchedExt DaemonSets.
	DefaultSchedulerNamespace = "kubectl-sched-schedulers"
	// OperatorServiceAccount is the operator's service account in config/rbac.
	OperatorServiceAccount = "kubectl-sched-operator"
	// OperatorPodLogsRole names the ClusterRole that lets the operator read
	// pods' logs (config/rbac/pod_logs_role.yaml), bound nowhere by the
	// install, and the RoleBinding of the operator to it that the operator
	// keeps in each namespace where it reads a task's pod's log.
	OperatorPodLogsRole = "kubectl-sched-operator-pod-logs"
)

// WellKnownSchedulers are the scx schedulers a SchedExt may name instead of
// an image; the operator resolves each to an image.
var WellKnownSchedulers = []string{"scx_rusty", "scx_lavd", "scx_bpfland", "scx_rustland", "scx_layered", "scx_p2dq", "scx_flash", "scx_cosmos"}

// GroupName is the API group of every kind in this package.
const GroupName = "sched.kubectl-sched.dev"

// WorkloadType says what a workload mostly needs, which decides the nodes it prefers.
// +kubebuilder:validation:Enum=Compute;Memory;Storage;GPU
// +kubebuilder:validation:MaxLength=16
type WorkloadType string

// The workload types.
const (
	WorkloadCompute WorkloadType = "Compute"
	WorkloadMemory  WorkloadType = "Memory"
	WorkloadStorage WorkloadType = "Storage"
	WorkloadGPU     WorkloadType = "GPU"
)

// Priority maps to a PriorityClass the operator is configured with.
// +kubebuilder:validation:Enum=Critical;High;Medium;Low
// +kubebuilder:validation:MaxLength=16
type Priority string

// The priorities, highest first.
const (
	PriorityCritical Priority = "Critical"
	PriorityHigh     Priority = "High"
	PriorityMedium   Priority = "Medium"
	PriorityLow      Priority = "Low"
)

// Priorities lists the placement priorities, highest first.
var Priorities = []Priority{PriorityCritical, PriorityHigh, PriorityMedium, PriorityLow}

// SpotPolicy says whether a workload may run on spot (preemptible, cheaper) nodes.
// +kubebuilder:validation:Enum=Never;Allowed;Preferred;Required
// +kubebuilder:validation:MaxLength=16
type SpotPolicy string

// The spot policies.
const (
	SpotNever     SpotPolicy = "Never"
	SpotAllowed   SpotPolicy = "Allowed"
	SpotPreferred SpotPolicy = "Preferred"
	SpotRequired  SpotPolicy = "Required"
)

// Placement says where a workload's pods may and should run. The operator
// translates it into node affinity, tolerations, topology spread and a
// priority class; UserDeployment and AgentTask share it.
// +kubebuilder:validation:XValidation:rule="!has(self.spot) || self.spot != 'Required' || !has(self.workloadType) || self.workloadType != 'GPU'",message="spot: Required cannot be combined with workloadType: GPU; the cluster's spot pool has no GPUs"
type Placement struct {
	// WorkloadType is what the workload mostly needs. GPU adds the GPU
	// toleration and requires a GPU node.
	// +optional
	WorkloadType WorkloadType `json:"workloadType,omitempty"`

	// Priority maps to the PriorityClass configured in the operator for that level.
	// +optional
	Priority Priority `json:"priority,omitempty"`

	// NodePools lists node pools (values of the node label
	// node.kubectl-sched.dev/pool) in order of preference. Pods run only in
	// these pools, and prefer the earlier ones. They tolerate the taint
	// node.kubectl-sched.dev/pool=POOL:NoSchedule that reserves a pool.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self.all(p, self.exists_one(q, q == p))",message="nodePools must not repeat a pool"
	NodePools []string `json:"nodePools,omitempty"`

	// Spot says whether the workload may run on spot nodes: Never (the
	// default), Allowed, Preferred (cheapest first) or Required.
	// +optional
	Spot SpotPolicy `json:"spot,omitempty"`

	// MultiZone spreads pods evenly across topology.kubernetes.io/zone.
	// +optional
	MultiZone bool `json:"multiZone,omitempty"`

	// Tolerations are added to the pods as given, after the ones placement
	// derives: at most 16, each key at most 317 characters, value 63,
	// operator and effect 16.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(t, (!has(t.key) || size(t.key) <= 317) && (!has(t.value) || size(t.value) <= 63) && (!has(t.operator) || size(t.operator) <= 16) && (!has(t.effect) || size(t.effect) <= 16))",message="each toleration's key may have at most 317 characters, its value 63, its operator and effect 16"
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// CPUScheduler is the sched_ext scheduler (for example scx_lavd) the
	// pods need: they run only on nodes where a SchedExt reports it
	// attached (the node label node.kubectl-sched.dev/cpu-scheduler, which
	// only the operator sets; a SchedExt's scheduler.name is the value, or
	// scx_ followed by its opsName). With no such node they stay Pending,
	// with reason CPUSchedulerUnavailable naming the scheduler and the
	// SchedExts that load it. When the scheduler detaches from a node, an
	// app's pods there are evicted one at a time, each while the service
	// runs all its replicas Ready and a node it may run on has the
	// scheduler, and come back where it runs; a task's running pod
	// finishes where it is. At most 63 characters, scx_[a-z0-9_]+.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^scx_[a-z0-9_]+$`
	CPUScheduler string `json:"cpuScheduler,omitempty"`
}

// EnvVar is an environment variable with a literal value or a reference.
// It mirrors core/v1 EnvVar, with bounds so the API server can validate
// step references cheaply.
// +kubebuilder:validation:XValidation:rule="!(has(self.value) && has(self.valueFrom))",message="set value or valueFrom, not both"
type EnvVar struct {
	// Name of the variable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z][-._a-zA-Z0-9]*$`
	Name string `json:"name"`

	// Value of the variable. In a Workflow step it may hold
	// ${steps.N.output.KEY}, ${steps.NAME.output.KEY} and ${params.NAME}.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Value string `json:"value,omitempty"`

	// ValueFrom takes the value from a Secret, ConfigMap or field of the
	// pod. Names may have at most 253 characters, keys 253, a fieldPath
	// 512, a resource 317, a path 4096.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.fieldRef) || (size(self.fieldRef.fieldPath) <= 512 && (!has(self.fieldRef.apiVersion) || size(self.fieldRef.apiVersion) <= 64))",message="fieldRef.fieldPath may have at most 512 characters, fieldRef.apiVersion 64",fieldPath=".fieldRef"
	// +kubebuilder:validation:XValidation:rule="!has(self.resourceFieldRef) || (size(self.resourceFieldRef.resource) <= 317 && (!has(self.resourceFieldRef.containerName) || size(self.resourceFieldRef.containerName) <= 63) && (!has(self.resourceFieldRef.divisor) || type(self.resourceFieldRef.divisor) in [int] || size(self.resourceFieldRef.divisor) <= 64))",message="resourceFieldRef.resource may have at most 317 characters, containerName 63, divisor 64",fieldPath=".resourceFieldRef"
	// +kubebuilder:validation:XValidation:rule="!has(self.configMapKeyRef) || (size(self.configMapKeyRef.key) <= 253 && (!has(self.configMapKeyRef.name) || size(self.configMapKeyRef.name) <= 253))",message="configMapKeyRef.name and key may have at most 253 characters each",fieldPath=".configMapKeyRef"
	// +kubebuilder:validation:XValidation:rule="!has(self.secretKeyRef) || (size(self.secretKeyRef.key) <= 253 && (!has(self.secretKeyRef.name) || size(self.secretKeyRef.name) <= 253))",message="secretKeyRef.name and key may have at most 253 characters each",fieldPath=".secretKeyRef"
	// +kubebuilder:validation:XValidation:rule="!has(self.fileKeyRef) || (size(self.fileKeyRef.volumeName) <= 63 && size(self.fileKeyRef.path) <= 4096 && size(self.fileKeyRef.key) <= 253)",message="fileKeyRef.volumeName may have at most 63 characters, path 4096, key 253",fieldPath=".fileKeyRef"
	ValueFrom *corev1.EnvVarSource `json:"valueFrom,omitempty"`
}

// PodMetadata is passed through to the pods the operator creates.
type PodMetadata struct {
	// Labels added to the pod: at most 32, keys of at most 317 characters
	// (a 253-character prefix, '/', and a 63-character name), values of at
	// most 63. The operator's own labels, app.kubernetes.io/managed-by and
	// every key under sched.kubectl-sched.dev/, are refused: the operator
	// finds its pods by them.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && size(self[k]) <= 63)",message="label keys may have at most 317 characters and values 63"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'app.kubernetes.io/managed-by' && !k.startsWith('sched.kubectl-sched.dev/'))",message="app.kubernetes.io/managed-by and keys under sched.kubectl-sched.dev/ are the operator's own labels and cannot be set here; pick another key"
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations added to the pod: at most 32, keys of at most 317
	// characters, values of at most 8192 (32 of them fill the 256 KiB the
	// API server allows a pod's annotations in all).
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && size(self[k]) <= 8192)",message="annotation keys may have at most 317 characters and values 8192"
	Annotations map[string]string `json:"annotations,omitempty"`
}

// LabelAllowPrivilegedPods set to "true" on a Namespace opts it out of the
// restricted-pods admission policy: its tasks, workflow steps and apps may
// ask for what Pod Security "restricted" refuses. Only who may update
// Namespaces (cluster admins) can set it. The operator checks it again on
// every write, so removing it takes the privilege back from what exists.
const LabelAllowPrivilegedPods = GroupName + "/allow-privileged-pods"

// Tenancy tiers: `kubectl sched tenant create NAME --tier T` labels the
// namespace with its tier, and the operator keeps the namespace's
// ResourceQuota and LimitRange (both named TierObjectName) as the tier in
// the ConfigMap TiersConfigMap of the operator's namespace defines them.
// Only whoever may update Namespaces (cluster admins) can set the label.
const (
	LabelTier      = GroupName + "/tier"
	TiersConfigMap = "kubectl-sched-tiers"
	TierObjectName = "kubectl-sched-tier"
	// TierPriorityQuotaName is the ResourceQuota that allows no pods of a
	// PriorityClass above the tier's highest priority.
	TierPriorityQuotaName = "kubectl-sched-tier-priority"
	// TenantNetworkPolicyName is the NetworkPolicy that keeps other
	// tenants' traffic out of a tenant namespace (operator/netpol).
	TenantNetworkPolicyName = "kubectl-sched-tenant-isolation"
	// TenantMemberRole is the ClusterRole a tenant's members are bound to
	// in its namespace, by a RoleBinding of the same name: what every
	// command of the plugin needs there (config/rbac/user_roles.yaml).
	TenantMemberRole = "kubectl-sched-tenant"

	// The tier's placement limits, as annotations on its ResourceQuota
	// TierObjectName, where the admission policy
	// kubectl-sched-tier-placement reads them (namespace users may read
	// ResourceQuotas, not write them). Lists are comma-separated; "*"
	// allows any.
	AnnotationTierMaxPriority = GroupName + "/max-priority"
	AnnotationTierNodePools   = GroupName + "/node-pools"
	AnnotationTierTolerations = GroupName + "/tolerations"
	// AnnotationTierMaxTolerationSeconds bounds the tolerationSeconds of
	// a toleration of node.kubernetes.io/not-ready or unreachable
	// (NoExecute), the only node-condition taints a tier lets its
	// workloads tolerate without listing them; 300 when missing.
	AnnotationTierMaxTolerationSeconds = GroupName + "/max-toleration-seconds"
	// AnnotationTierDefaultPriorityClass names the PriorityClass the
	// operator gives the tier's pods that name none, when the cluster's
	// default class (globalDefault) is above the tier and its priority
	// quota would refuse them; empty when none is needed.
	AnnotationTierDefaultPriorityClass = GroupName + "/default-priority-class"
	// AnnotationTierMaxRevisions bounds how many revisions the operator
	// keeps of an app (spec.revisionHistoryLimit); empty: no bound.
	AnnotationTierMaxRevisions = GroupName + "/max-revisions"
	// AnnotationTierFileOutputBytes bounds the bytes of a task's file
	// outputs (spec.outputs.fromDir); empty: MaxFileOutputBytes.
	AnnotationTierFileOutputBytes = GroupName + "/file-output-bytes"

	// The tier's TTLs after finishing, as Go durations ("15m", "24h") on
	// the same ResourceQuota: the default the operator applies to tasks
	// and workflows whose spec has no ttlAfterFinished, and the most a
	// spec may ask (the admission policy kubectl-sched-tier-ttl). Empty
	// or missing: none.
	AnnotationTierTTLDefault = GroupName + "/ttl-default"
	AnnotationTierTTLMax     = GroupName + "/ttl-max"

	// QuotaRecountResource is a resource name the operator adds to a tier's
	// ResourceQuota spec.hard for a moment, and then removes: a change of
	// spec.hard is what makes the cluster's quota controller recount a
	// quota at once (see operator/tenant). No evaluator counts it.
	QuotaRecountResource = GroupName + "/recount"
)

// ExpirySource says what set when a finished object is deleted.
// +kubebuilder:validation:Enum=Spec;TierDefault;TierMaximum;InstallDefault
// +kubebuilder:validation:MaxLength=16
type ExpirySource string

const (
	// ExpiryFromSpec means the object's own spec.ttlAfterFinished.
	ExpiryFromSpec ExpirySource = "Spec"
	// ExpiryFromTierDefault means the spec has no ttlAfterFinished, and the
	// namespace's tier has a default.
	ExpiryFromTierDefault ExpirySource = "TierDefault"
	// ExpiryFromTierMaximum means the tier's maximum, because the spec asks
	// for longer (made before the tier was tightened) or, for a task whose
	// cleanup is Job, to bound how long the task's record is kept.
	ExpiryFromTierMaximum ExpirySource = "TierMaximum"
	// ExpiryFromInstallDefault means neither the spec nor the namespace's
	// tier says, and the cluster's install sets a default
	// (--default-ttl); for a task whose cleanup is Job, it bounds how long
	// the task's record is kept, never below its spec.ttlAfterFinished.
	ExpiryFromInstallDefault ExpirySource = "InstallDefault"
)

// Expiry says when the operator deletes a finished AgentTask or Workflow
// (a workflow's step tasks go with it).
type Expiry struct {
	// TTLAfterFinished is how long after it finished it is deleted.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	TTLAfterFinished metav1.Duration `json:"ttlAfterFinished"`

	// Source is what set it: Spec, TierDefault, TierMaximum or
	// InstallDefault (the cluster's default, where the spec and the
	// namespace's tier say nothing).
	Source ExpirySource `json:"source"`

	// Tier is the namespace's tier, when the tier set it.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Tier string `json:"tier,omitempty"`

	// DeleteTime is when it is deleted: its completion time plus the TTL.
	// Set once it has finished.
	// +optional
	DeleteTime *metav1.Time `json:"deleteTime,omitempty"`
}
