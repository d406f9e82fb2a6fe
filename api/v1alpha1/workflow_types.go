package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkflowSpec is the steps a Workflow runs, with its params and limits.
// References in step strings (${steps.N.output.KEY}, ${params.NAME}) are
// checked when a Workflow is created by the ValidatingAdmissionPolicy in
// config/policy, not by CRD rules: CRD rules run on every write, status
// writes included, and these scan every string of every step.
// api/substitution checks the same in the plugin and the operator.
// A Workflow's spec is immutable but for cancel, suspend and approvals
// (added to only): the rules that say so are
// on Workflow.Spec, not here, because a CronWorkflow's workflowSpec is a
// WorkflowSpec its owner may edit. Add a rule there for each new field.
// +kubebuilder:validation:XValidation:rule="!has(self.finally) || self.finally.all(f, !self.steps.exists(s, s.name == f.name))",message="a finally step cannot have the name of a step in spec.steps: step names must differ across steps and finally",fieldPath=".finally"
// +kubebuilder:validation:XValidation:rule="!has(self.finally) || self.finally.all(f, !has(f.approval))",message="a finally step cannot be an approval: finally steps run tasks, whatever happened before them",fieldPath=".finally"
// +kubebuilder:validation:XValidation:rule="!has(self.approvals) || (has(self.steps) && self.approvals.all(a, self.steps.exists(s, s.name == a.step && has(s.approval))))",message="spec.approvals may only name steps that have an approval; 'kubectl sched workflow approve NAME STEP' records one",fieldPath=".approvals"
// +kubebuilder:validation:XValidation:rule="!has(self.steps) || self.steps.all(s, !has(s.task) || !has(s.task.workspaces) || s.task.workspaces.all(m, has(m.claimName) || (has(self.workspaces) && self.workspaces.exists(w, w.name == m.name))))",message="a step mounts a workspace of spec.workspaces by its name (or an existing claim, with claimName): declare the workspace in spec.workspaces",fieldPath=".steps"
// +kubebuilder:validation:XValidation:rule="!has(self.finally) || self.finally.all(s, !has(s.task) || !has(s.task.workspaces) || s.task.workspaces.all(m, has(m.claimName) || (has(self.workspaces) && self.workspaces.exists(w, w.name == m.name))))",message="a finally step mounts a workspace of spec.workspaces by its name (or an existing claim, with claimName): declare the workspace in spec.workspaces",fieldPath=".finally"
// +kubebuilder:validation:XValidation:rule="has(self.steps) || has(self.workflowTemplateRef)",message="a workflow runs steps: set spec.steps, or spec.workflowTemplateRef to take them from a WorkflowTemplate or ClusterWorkflowTemplate"
// +kubebuilder:validation:XValidation:rule="!has(self.workflowTemplateRef) || has(self.workflowTemplateRef.uid) == has(self.steps)",message="a workflow from a template takes its steps from it when it starts: leave out spec.steps (set only params, timeout, ttlAfterFinished, failFast and what a run has)",fieldPath=".steps"
// +kubebuilder:validation:XValidation:rule="!has(self.workflowTemplateRef) || has(self.workflowTemplateRef.uid) || (!has(self.finally) && !has(self.workspaces))",message="a workflow from a template takes its finally steps and workspaces from it: leave out spec.finally and spec.workspaces"
type WorkflowSpec struct {
	// WorkflowTemplateRef takes the steps from a template: a
	// WorkflowTemplate of this namespace or a ClusterWorkflowTemplate.
	// When the run starts the operator copies the template's steps,
	// finally steps, workspaces and params (those this spec sets override
	// the template's defaults; a param the template does not declare is an
	// error), its timeout and ttlAfterFinished where this spec sets none,
	// and its failFast when true, into this spec, and records the template's uid and
	// resourceVersion here: editing or deleting the template later changes
	// no run that started, and a retry reuses what its original copied.
	// A CronWorkflow's runs each copy the template as it is when they start.
	// +optional
	WorkflowTemplateRef *WorkflowTemplateRef `json:"workflowTemplateRef,omitempty"`

	// Params are named values steps can use as ${params.NAME}.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Params []WorkflowParam `json:"params,omitempty"`

	// Steps run one after another (a step starts when the one before it
	// Succeeded) unless a step sets dependsOn: then each step starts as soon
	// as the steps it names Succeeded, side by side with others, and a step
	// without dependsOn starts at once. Each runs as an AgentTask named
	// <workflow>-<index>-<step> (shortened with a hash when over 63 characters).
	// Unset only in a workflow from a template, until the operator copies
	// the template's in.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Steps []WorkflowStep `json:"steps,omitempty"`

	// Timeout is the longest the whole workflow may run. Past it the running
	// step is stopped and the workflow ends in phase Timeout.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('720h')",message="timeout must be between 1s and 720h"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// TTLAfterFinished deletes the finished workflow, and with it its
	// AgentTasks, this long after it ended.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('8760h')",message="ttlAfterFinished must be between 0s and 8760h"
	TTLAfterFinished *metav1.Duration `json:"ttlAfterFinished,omitempty"`

	// FailFast stops the whole workflow at the first failed step: the other
	// running steps are cancelled. It also fails a forEach step at its
	// first failed item, its running items cancelled. Without it (the
	// default) a failed step skips only the steps that depend on it, and
	// independent branches run to the end, so one run reports every failure
	// and keeps every output it could produce. Steps that run one after
	// another behave the same either way.
	// +optional
	FailFast bool `json:"failFast,omitempty"`

	// RetryOf makes this workflow a new attempt of a finished one in the
	// same namespace: every step that Succeeded there is not run again but
	// takes the outputs it had, except fromStep and the steps that depend
	// on it (in a sequence, every step after it), which run again, as do
	// the steps that did not succeed. An approval step that Succeeded is
	// reused only when what its approval let run is unchanged: the steps
	// that depend on it, the steps those read from, the params and the
	// finally steps are as in the earlier attempt (and, where the cluster
	// forbids approving one's own run, the approver is not this run's
	// requestedBy); otherwise it waits for a new decision, and the steps
	// after it run again. `kubectl sched workflow retry` sets it.
	// +optional
	RetryOf *WorkflowRetry `json:"retryOf,omitempty"`

	// Cancel stops the workflow without deleting it: the running steps'
	// tasks, and forEach steps' running items, are cancelled (their pods
	// stopped), steps not started are skipped,
	// and the workflow ends in phase Cancelled, keeping its record and the
	// outputs so far. It cannot be undone. `kubectl sched workflow stop`
	// sets it.
	// +optional
	Cancel bool `json:"cancel,omitempty"`

	// Finally are steps that run once every step of spec.steps has
	// finished, whatever happened: succeeded, failed, skipped, cancelled
	// (by failFast, spec.cancel or 'workflow stop') or timed out. They run
	// side by side unless they name each other in dependsOn (only finally
	// steps listed before them). They may use ${workflow.phase} (the phase
	// the workflow has without them: Succeeded, Failed, Timeout or
	// Cancelled), the outputs of any step of spec.steps that produced them,
	// and, in when, workflow.phase. They do not change the workflow's
	// phase, except that a finally step that fails makes a Succeeded
	// workflow Failed. spec.cancel does not stop them; after spec.timeout
	// they still get a grace of 5 minutes. Each runs as an AgentTask named
	// <workflow>-finally<index>-<step> (shortened with a hash when over 63
	// characters).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	Finally []WorkflowStep `json:"finally,omitempty"`

	// Suspend holds the start of new steps while true: the steps running
	// go on, no other step starts (nor waits for an approval, nor has its
	// when evaluated), nor any new item of a forEach step, until it is
	// false again. spec.timeout keeps counting.
	// 'kubectl sched workflow suspend' and 'resume' set it.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Approvals are the decisions on the steps that wait for one, added
	// by 'kubectl sched workflow approve' and 'deny'. The
	// kubectl-sched-workflow-approvals admission policy refuses an entry
	// whose user is not the user making the request, so the user recorded
	// is the one the API server authenticated, and one by a user its step's
	// approval.approvers does not name. An entry, once added, cannot change
	// or be removed.
	// +optional
	// +listType=map
	// +listMapKey=step
	// +kubebuilder:validation:MaxItems=32
	Approvals []StepDecision `json:"approvals,omitempty"`

	// Workspaces are volumes the steps share, such as a checkout one step
	// makes and the next builds: each is one PersistentVolumeClaim per
	// run, <workflow>-ws-<name>, made before the first step that mounts
	// it (task.workspaces names it) and deleted with the workflow unless
	// it sets keep. At most 4; their claims count against the namespace's
	// quota.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=4
	Workspaces []Workspace `json:"workspaces,omitempty"`

	// RequestedBy is the user who asked for this run, as the API server
	// authenticated them (request.userInfo.username): 'kubectl sched
	// workflow run', 'retry' and 'trigger' set it for a workflow with an
	// approval step. The kubectl-sched-workflow-approvals admission policy
	// refuses a Workflow created naming anyone else (but a CronWorkflow's
	// scheduled run, which the operator creates with the CronWorkflow's),
	// and in a CronWorkflow's workflowSpec anyone but whoever writes the
	// workflowSpec; a Workflow's cannot change. Where the cluster forbids
	// approving one's own run (forbid-self-approval), a workflow with an
	// approval step must set it, and that user's approval does not count.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	RequestedBy string `json:"requestedBy,omitempty"`

	// NoCache runs every step, none taking a cached result: steps with a
	// cache key look nothing up (their tasks still record their key for
	// later runs). 'kubectl sched workflow run --no-cache' sets it.
	// +optional
	NoCache bool `json:"noCache,omitempty"`
}

// StepDecision is a person's decision on a step that waits for approval.
type StepDecision struct {
	// Step is the name of the step decided on, a step with an approval.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	Step string `json:"step"`
	// Decision is Approved (the step Succeeds and the steps after it run)
	// or Denied (the step Fails with reason Denied).
	Decision Decision `json:"decision"`
	// User is who decided, as the API server authenticated them
	// (request.userInfo.username); the admission policy refuses any other.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	User string `json:"user"`
	// Reason the user gave.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
}

// Decision on a step waiting for approval.
// +kubebuilder:validation:Enum=Approved;Denied
type Decision string

// The decisions.
const (
	Approved Decision = "Approved"
	Denied   Decision = "Denied"
)

// StepApproval makes a step wait for a person's decision instead of
// running a task.
type StepApproval struct {
	// Message says what is to be approved; it is shown while the step waits.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// Approvers are who may decide on the step (approve or deny it). Unset,
	// anyone who may update the workflow may. The
	// kubectl-sched-workflow-approvals admission policy refuses a decision
	// by anyone else.
	// +optional
	Approvers *Approvers `json:"approvers,omitempty"`
}

// Approvers names who may decide on an approval step: a user listed in
// users, or a member of a group listed in groups, as the API server
// authenticates them (kubectl auth whoami shows both).
// +kubebuilder:validation:XValidation:rule="size(self.?users.orValue([])) + size(self.?groups.orValue([])) > 0",message="approvers names no one: list users or groups, or leave approvers out to let anyone who may update the workflow decide"
type Approvers struct {
	// Users who may decide, by user name.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	Users []string `json:"users,omitempty"`
	// Groups whose members may decide.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	Groups []string `json:"groups,omitempty"`
}

// WorkflowRetry names the attempt a workflow retries.
type WorkflowRetry struct {
	// Workflow is the earlier attempt, in the same namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Workflow string `json:"workflow"`
	// FromStep runs again, with the steps that depend on it; the other
	// steps that Succeeded reuse the earlier attempt's outputs.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	FromStep string `json:"fromStep"`
}

// WorkflowParam is a named value.
type WorkflowParam struct {
	// Name of the param, used as ${params.NAME}.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][-A-Za-z0-9_]*$`
	Name string `json:"name"`

	// Value of the param.
	// +kubebuilder:validation:MaxLength=4096
	Value string `json:"value"`

	// Description says what the param is for.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Description string `json:"description,omitempty"`
}

// WorkflowStep is one step: a name and the AgentTask it runs, or the
// approval it waits for.
// +kubebuilder:validation:XValidation:rule="has(self.task) != has(self.approval)",message="a step runs a task or waits for an approval: set exactly one of task and approval"
// +kubebuilder:validation:XValidation:rule="!has(self.forEach) || !has(self.approval)",message="a forEach step runs its task once per item; it cannot be an approval: put the approval in a step of its own before it",fieldPath=".forEach"
// +kubebuilder:validation:XValidation:rule="!has(self.cache) || (!has(self.forEach) && !has(self.approval))",message="cache is for a step that runs one task: a forEach step or an approval step cannot have one",fieldPath=".cache"
type WorkflowStep struct {
	// Name of the step, a DNS label, used as ${steps.NAME.output.KEY}.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// DependsOn names the steps this one waits for: it starts once they all
	// Succeeded, and may use their outputs and those of the steps they
	// depend on. Only steps listed before it may be named, which rules out
	// cycles (checked by the kubectl-sched-workflow-references policy).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=40
	DependsOn []string `json:"dependsOn,omitempty"`

	// When is a CEL expression that must be true for the step to run,
	// evaluated when the step would start, over steps.NAME.outputs.KEY and
	// steps.NAME.phase (of the steps it depends on, directly or through
	// others; steps['NAME'] for a name with '-') and params.NAME, all
	// strings, and for a finally step workflow.phase. False skips the step
	// (and the steps that depend on it); an error (such as a missing key)
	// fails it. Example: steps.test.outputs.result == 'passed'. It is
	// compiled and type-checked by 'kubectl sched workflow run' and by the
	// operator before any step runs (api/celexpr), and its cost is bounded.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.contains('${')",message="when is a CEL expression, not a string with ${...} references: write steps.NAME.outputs.KEY, params.NAME or workflow.phase"
	When string `json:"when,omitempty"`

	// Approval makes the step run no task: it waits, in phase
	// WaitingForApproval, until someone runs 'kubectl sched workflow
	// approve' (it Succeeds) or 'deny' (it Fails with reason Denied).
	// +optional
	Approval *StepApproval `json:"approval,omitempty"`

	// Task is the AgentTask spec the step runs, after substitution. Every
	// step but an approval has one.
	// +optional
	Task AgentTaskSpec `json:"task,omitzero"`

	// ForEach runs the step's task once per item of a list, each as an
	// AgentTask of its own, with ${item} in the task's strings replaced by
	// the item. The list is literal (items) or an output or param holding a
	// JSON array of strings (from). Once every item has ended, a later step
	// reads ${steps.NAME.output.KEY} of this step as a JSON array of each
	// item's value of KEY, in item order (null for an item that did not
	// write KEY). An item that fails starts no more items; those running
	// finish and the step fails. The step's when is decided once, before
	// any item starts.
	// +optional
	ForEach *ForEach `json:"forEach,omitempty"`

	// Cache reuses the outputs of a step task in the namespace that
	// Succeeded with the same key, within cache.maxAge, instead of running
	// the task (reason CacheHit). Not for forEach or approval steps.
	// +optional
	Cache *StepCache `json:"cache,omitempty"`
}

// RunsTask reports whether the step runs a task (it is not an approval).
func (s *WorkflowStep) RunsTask() bool { return s.Approval == nil }

// MaxItems is the most items a forEach step runs over.
const MaxItems = 100

// MaxItemLength is the longest item of forEach.items, in bytes.
const MaxItemLength = 1024

// MaxLoopOutputBytes bounds the outputs of a forEach step once its items'
// values are gathered into JSON arrays: keys and values together. Past it
// the step fails with reason TooLarge.
const MaxLoopOutputBytes = 32768

// ForEach is the list a step runs its task over.
// +kubebuilder:validation:XValidation:rule="has(self.items) != has(self.from)",message="forEach takes a list: set exactly one of items (the items written out) and from (a reference to an output or param holding a JSON array of strings)"
type ForEach struct {
	// Items are the items, written out: 1 to 100 strings of at most 1024
	// characters each. The step runs its task once per item, in this order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=1024
	Items []string `json:"items,omitempty"`

	// From is one reference, and nothing else, to an output of a step this
	// one depends on (directly or through others; in a sequence, a step
	// before it), as ${steps.NAME.output.KEY} or ${steps.N.output.KEY}, or
	// to a param, ${params.NAME}, whose value is a JSON array of strings,
	// such as ["eu","us"]. It is read when the step starts: a value that is
	// not such an array, or holds more than 100 items, fails the step with
	// reason InvalidItems; an empty array makes the step succeed at once,
	// with no items, each of its outputs reading as [].
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	From string `json:"from,omitempty"`

	// MaxParallel is how many items may run at once, 1 to 100; items start
	// in order as earlier ones end. Unset, every item starts at once.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	MaxParallel int32 `json:"maxParallel,omitempty"`
}

// WorkflowPhase is where a workflow is in its life.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed;Timeout;Cancelled
// +kubebuilder:validation:MaxLength=16
type WorkflowPhase string

// The workflow phases.
const (
	WorkflowPending   WorkflowPhase = "Pending"
	WorkflowRunning   WorkflowPhase = "Running"
	WorkflowSucceeded WorkflowPhase = "Succeeded"
	WorkflowFailed    WorkflowPhase = "Failed"
	WorkflowTimeout   WorkflowPhase = "Timeout"
	// WorkflowCancelled means spec.cancel stopped it (see TaskCancelled).
	WorkflowCancelled WorkflowPhase = "Cancelled"
)

// Finished reports whether the phase is final.
func (p WorkflowPhase) Finished() bool {
	return p == WorkflowSucceeded || p == WorkflowFailed || p == WorkflowTimeout || p == WorkflowCancelled
}

// StepPhase is where a step is: the AgentTask phases plus Waiting (not
// started), WaitingForApproval (an approval step, until someone decides)
// and Skipped (a step it depends on did not succeed, or its when was false).
// +kubebuilder:validation:Enum=Waiting;WaitingForApproval;Pending;Running;Succeeded;Failed;Timeout;Skipped;Cancelled
// +kubebuilder:validation:MaxLength=24
type StepPhase string

// The step phases.
const (
	StepWaiting StepPhase = "Waiting"
	// StepWaitingForApproval is an approval step waiting for 'kubectl
	// sched workflow approve' or 'deny'.
	StepWaitingForApproval StepPhase = "WaitingForApproval"
	StepPending            StepPhase = "Pending"
	StepRunning            StepPhase = "Running"
	StepSucceeded          StepPhase = "Succeeded"
	StepFailed             StepPhase = "Failed"
	StepTimeout            StepPhase = "Timeout"
	StepSkipped            StepPhase = "Skipped"
	// StepCancelled means the step's task was cancelled, by the workflow's
	// spec.cancel or on its own.
	StepCancelled StepPhase = "Cancelled"
)

// Finished reports whether the step will not change again.
func (p StepPhase) Finished() bool {
	return p == StepSucceeded || p == StepFailed || p == StepTimeout || p == StepSkipped || p == StepCancelled
}

// StepStatus reports one step.
// +kubebuilder:validation:XValidation:rule="!has(self.outputs) || self.outputs.all(k, size(k) <= 63 && size(self.outputs[k]) <= (has(self.forEach) ? 32768 : 4096))",message="output keys may have at most 63 characters and values 4096 (32768 for a forEach step's)",fieldPath=".outputs"
type StepStatus struct {
	// Name of the step.
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// TaskName is the step's AgentTask, once created.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	TaskName string `json:"taskName,omitempty"`
	// Phase of the step.
	Phase StepPhase `json:"phase"`
	// StartTime is when the step's AgentTask was created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the step finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Outputs of the step, as its AgentTask reported them. Those of a
	// forEach step are JSON arrays with each item's value (null for an
	// item that did not write the key), filled in as items succeed.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Outputs map[string]string `json:"outputs,omitempty"`
	// Message explains a failure or skip.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Message string `json:"message,omitempty"`
	// Reason is a CamelCase word for why the step is in its phase, when
	// the phase alone does not say: WhenFalse, WhenError,
	// WaitingForApproval, Approved, Denied, InvalidItems, TooLarge,
	// CacheHit (Succeeded with the outputs of cachedFrom), or
	// BackingOff (Running: its task's attempt failed and the next waits for
	// spec.retry.backoff).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason,omitempty"`
	// ForEach reports the items of a forEach step, once it has started.
	// +optional
	ForEach *ForEachStatus `json:"forEach,omitempty"`
	// CachedFrom is the step task whose outputs the step took (reason
	// CacheHit) instead of running a task of its own.
	// +optional
	CachedFrom *CachedFrom `json:"cachedFrom,omitempty"`
}

// ForEachStatus is the progress of a forEach step's items.
type ForEachStatus struct {
	// Total is how many items the step runs over.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Total int32 `json:"total"`
	// Succeeded counts the items that succeeded.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Succeeded int32 `json:"succeeded,omitempty"`
	// Failed counts the items that failed, timed out or were cancelled.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Failed int32 `json:"failed,omitempty"`
	// Running counts the items started and not ended (Pending or Running).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Running int32 `json:"running,omitempty"`
	// Items are the items started, by index (each runs as the AgentTask
	// <workflow>-<step index>-<step>-<item index>). Item values are not
	// repeated here: they are in spec.steps[].forEach.items, or in the
	// output or param forEach.from names.
	// +optional
	// +listType=map
	// +listMapKey=index
	// +kubebuilder:validation:MaxItems=100
	Items []ItemStatus `json:"items,omitempty"`
}

// ItemStatus reports one item of a forEach step.
type ItemStatus struct {
	// Index of the item in the list, from 0.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=99
	Index int32 `json:"index"`
	// Phase of the item's AgentTask: Pending, Running, Succeeded, Failed,
	// Timeout or Cancelled.
	Phase StepPhase `json:"phase"`
	// StartTime is when the item's AgentTask was created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the item ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Message explains an item that did not succeed, cut to 512 bytes.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Message string `json:"message,omitempty"`
}

// WorkflowOutcome is how the main steps (spec.steps) of a workflow with
// finally steps ended.
type WorkflowOutcome struct {
	// Phase the workflow has without its finally steps: ${workflow.phase}.
	Phase WorkflowPhase `json:"phase"`
	// Reason is a CamelCase word for why.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`
	// Message explains it for a person.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Message string `json:"message,omitempty"`
	// Time the main steps ended.
	Time metav1.Time `json:"time"`
}

// WorkflowStatus is the observed state of a workflow.
type WorkflowStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase: Pending, Running, Succeeded, Failed or Timeout.
	// +optional
	Phase WorkflowPhase `json:"phase,omitempty"`

	// CurrentStep is the index of the step running, or of the last one that ran.
	// +optional
	CurrentStep int32 `json:"currentStep,omitempty"`

	// Progress is "<succeeded steps>/<steps>", for display.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	Progress string `json:"progress,omitempty"`

	// StartTime is when the first step started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the workflow ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Reason is a CamelCase word for why the workflow is in its phase.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`

	// Message explains the phase for a person.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Message string `json:"message,omitempty"`

	// Steps reports every step, in order.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Steps []StepStatus `json:"steps,omitempty"`

	// Finally reports every finally step, in order.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	Finally []StepStatus `json:"finally,omitempty"`

	// Main is how the main steps ended, set on a workflow with finally
	// steps once they all have; the finally steps run after it.
	// +optional
	Main *WorkflowOutcome `json:"main,omitempty"`

	// Expiry is when the operator deletes the workflow, and its step
	// tasks with it, once it has finished: by spec.ttlAfterFinished, in a
	// namespace of a tier by the tier's TTLs, else by the cluster's
	// default (kubectl sched install --default-ttl). Unset while nothing
	// will.
	// +optional
	Expiry *Expiry `json:"expiry,omitempty"`

	// Workspaces reports the claims of spec.workspaces made so far, and
	// the node a ReadWriteOnce one is on.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=4
	Workspaces []WorkspaceStatus `json:"workspaces,omitempty"`

	// Conditions: Ready and Succeeded, and Suspended once spec.suspend
	// was set (True while it is).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wf,categories=sched
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Workflow runs AgentTasks in sequence and passes each step's outputs to
// the steps after it.
type Workflow struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the workflow to run. It cannot change once created, as its
	// steps may already have run, but for cancel, which may only be set,
	// suspend, which may be switched, and approvals, which may only be
	// added to (the kubectl-sched-workflow-spec admission policy).
	// +required
	Spec WorkflowSpec `json:"spec"`

	// Status is the workflow's observed state.
	// +optional
	Status WorkflowStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// WorkflowList is a list of Workflows.
type WorkflowList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Workflow `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Workflow{}, &WorkflowList{})
}
