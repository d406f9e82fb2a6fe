package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// Bounds of workspaces (docs/admins/security.md lists them).
const (
	// MaxWorkspaces is the most workspaces a Workflow declares.
	MaxWorkspaces = 4
	// MaxWorkspaceMounts is the most workspaces one task (or step) mounts.
	MaxWorkspaceMounts = 4
	// MaxWorkspaceSize is the largest workspace the API takes; a tier's
	// quota (requests.storage) usually holds it lower.
	MaxWorkspaceSize = "1Ti"
)

// WorkspaceAccessMode is how many nodes may mount a workspace at once.
// +kubebuilder:validation:Enum=ReadWriteOnce;ReadWriteMany
// +kubebuilder:validation:MaxLength=16
type WorkspaceAccessMode string

// The access modes.
const (
	// ReadWriteOnce: one node mounts the claim; every pod of the run that
	// mounts it is placed on the node of the first that did.
	ReadWriteOnce WorkspaceAccessMode = "ReadWriteOnce"
	// ReadWriteMany: pods on any node may mount it (the storage class
	// must support it).
	ReadWriteMany WorkspaceAccessMode = "ReadWriteMany"
)

// Workspace is a volume a Workflow's steps share: one
// PersistentVolumeClaim per run, <workflow>-ws-<name> (shortened with a
// hash past 63 characters), in the workflow's namespace and counted by its
// quota (persistentvolumeclaims, requests.storage). The operator makes it
// before the first step that mounts it starts, and it goes with the
// workflow unless keep is set.
type Workspace struct {
	// Name of the workspace, a DNS label; steps mount it by this name
	// (task.workspaces[].name).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Size of the claim, for example 1Gi: at most 1Ti, and at most what
	// the namespace's tier lets its claims hold (requests.storage).
	// +kubebuilder:validation:XValidation:rule="type(self) in [int] || size(self) <= 64",message="size may have at most 64 characters"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="size must be more than 0, for example 1Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('1Ti')) <= 0",message="size may be at most 1Ti"
	Size resource.Quantity `json:"size"`

	// AccessMode is ReadWriteOnce (the default: the steps that mount it
	// all run on the node of the first that did) or ReadWriteMany (the
	// storage class must offer it).
	// +optional
	AccessMode WorkspaceAccessMode `json:"accessMode,omitempty"`

	// StorageClass of the claim; the cluster's default when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	StorageClass string `json:"storageClass,omitempty"`

	// Keep leaves the claim when the workflow is deleted (its TTL
	// included): it then counts against the namespace's quota until
	// someone deletes it. Unset, the claim goes with the workflow.
	// +optional
	Keep bool `json:"keep,omitempty"`
}

// Mode is the workspace's access mode, ReadWriteOnce when unset.
func (w *Workspace) Mode() WorkspaceAccessMode {
	if w.AccessMode == "" {
		return ReadWriteOnce
	}
	return w.AccessMode
}

// WorkspaceMount mounts a PersistentVolumeClaim of the task's namespace
// into its container. In a Workflow step it names one of the workflow's
// spec.workspaces and leaves claimName out: the operator sets it.
type WorkspaceMount struct {
	// Name of the mount: in a workflow step, the workspace's name; in a
	// task, any DNS label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// MountPath in the container, an absolute path.
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/[^:]*$`
	MountPath string `json:"mountPath"`

	// ReadOnly mounts it read-only.
	// +optional
	ReadOnly bool `json:"readOnly,omitempty"`

	// ClaimName is an existing PersistentVolumeClaim in the task's own
	// namespace (a pod can mount no other). In a workflow step, leave it
	// out to mount the workspace of that name.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ClaimName string `json:"claimName,omitempty"`

	// Node is where the claim's volume is (a ReadWriteOnce claim that a
	// pod on that node already mounted): the task's pod runs only there.
	// The operator sets it on a workflow's steps once the first pod that
	// mounted the workspace was placed (status.workspaces[].node).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node,omitempty"`
}

// WorkspaceStatus is one workspace of a run.
type WorkspaceStatus struct {
	// Name of the workspace.
	// +kubebuilder:validation:MaxLength=40
	Name string `json:"name"`
	// ClaimName is its PersistentVolumeClaim, once made.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	ClaimName string `json:"claimName,omitempty"`
	// Node is where the first pod that mounted a ReadWriteOnce workspace
	// ran; the run's other pods that mount it run there too.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node,omitempty"`
}
