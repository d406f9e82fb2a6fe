package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The kinds a workflowTemplateRef may name.
const (
	KindWorkflowTemplate        = "WorkflowTemplate"
	KindClusterWorkflowTemplate = "ClusterWorkflowTemplate"
)

// WorkflowTemplateRef names the template a Workflow takes its steps from.
// The kind is always written, so a namespace's WorkflowTemplate never
// stands in for a ClusterWorkflowTemplate of the same name.
type WorkflowTemplateRef struct {
	// Kind is WorkflowTemplate (one in the Workflow's namespace) or
	// ClusterWorkflowTemplate (one an admin wrote for the whole cluster).
	// +kubebuilder:validation:Enum=WorkflowTemplate;ClusterWorkflowTemplate
	Kind string `json:"kind"`

	// Name of the template.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// UID of the template the operator copied the steps from, set by it
	// with the steps when the run starts: the record of what ran. Editing
	// or deleting the template later changes nothing in this run.
	// +optional
	// +kubebuilder:validation:MaxLength=36
	// +kubebuilder:validation:Type=string
	UID types.UID `json:"uid,omitempty"`

	// ResourceVersion of the template the steps were copied from, set
	// with uid.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// String is Kind/name, as messages name a template.
func (r *WorkflowTemplateRef) String() string { return r.Kind + "/" + r.Name }

// Resolved reports whether the operator has copied the template in.
func (r *WorkflowTemplateRef) Resolved() bool { return r.UID != "" }

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=wft,categories=sched
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// WorkflowTemplate is a workflow to run again and again, in its
// namespace: a Workflow or CronWorkflow names it in
// spec.workflowTemplateRef, with params, and the operator copies its
// steps into the run when the run starts.
type WorkflowTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the workflow: its params (the runs' defaults), steps,
	// finally steps, workspaces, timeout, ttlAfterFinished and failFast.
	// What only a run has (workflowTemplateRef, retryOf, cancel, suspend,
	// approvals, requestedBy, noCache) is refused here.
	// +required
	// +kubebuilder:validation:XValidation:rule="has(self.steps) && !has(self.workflowTemplateRef) && !has(self.retryOf) && !has(self.cancel) && !has(self.suspend) && !has(self.approvals) && !has(self.requestedBy) && !has(self.noCache)",message="a template holds steps and what they need (params, finally, workspaces, timeout, ttlAfterFinished, failFast); leave out workflowTemplateRef, retryOf, cancel, suspend, approvals, requestedBy and noCache, which belong to a run"
	Spec WorkflowSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// WorkflowTemplateList is a list of WorkflowTemplates.
type WorkflowTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkflowTemplate `json:"items"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cwft,categories=sched
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterWorkflowTemplate is a WorkflowTemplate for every namespace,
// written by cluster admins; members read it. A run names it with kind
// ClusterWorkflowTemplate.
type ClusterWorkflowTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the workflow, as a WorkflowTemplate's.
	// +required
	// +kubebuilder:validation:XValidation:rule="has(self.steps) && !has(self.workflowTemplateRef) && !has(self.retryOf) && !has(self.cancel) && !has(self.suspend) && !has(self.approvals) && !has(self.requestedBy) && !has(self.noCache)",message="a template holds steps and what they need (params, finally, workspaces, timeout, ttlAfterFinished, failFast); leave out workflowTemplateRef, retryOf, cancel, suspend, approvals, requestedBy and noCache, which belong to a run"
	Spec WorkflowSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// ClusterWorkflowTemplateList is a list of ClusterWorkflowTemplates.
type ClusterWorkflowTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterWorkflowTemplate `json:"items"`
}

func init() {
	SchemeBuilder.Register(&WorkflowTemplate{}, &WorkflowTemplateList{}, &ClusterWorkflowTemplate{}, &ClusterWorkflowTemplateList{})
}
