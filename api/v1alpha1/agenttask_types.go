package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CleanupPolicy says what the TTL deletes once a task has finished.
// +kubebuilder:validation:Enum=Job;Task
// +kubebuilder:validation:MaxLength=16
type CleanupPolicy string

const (
	// CleanupJob deletes the Job and its pods and keeps the AgentTask with its outputs.
	CleanupJob CleanupPolicy = "Job"
	// CleanupTask deletes the AgentTask too.
	CleanupTask CleanupPolicy = "Task"
)

// AgentTaskSpec describes one container run to completion. A Workflow step
// holds the same spec; there, strings may hold ${steps.N.output.KEY},
// ${steps.NAME.output.KEY} and ${params.NAME}.
// +kubebuilder:validation:XValidation:rule="!has(self.cleanup) || has(self.ttlAfterFinished)",message="cleanup needs ttlAfterFinished",fieldPath=".cleanup"
// +kubebuilder:validation:XValidation:rule="!has(self.repos) || !has(self.workspaces) || self.repos.all(r, !self.workspaces.exists(w, has(w.readOnly) && w.readOnly && ((has(r.path) ? r.path : '/workspace/' + r.name) == w.mountPath || (has(r.path) ? r.path : '/workspace/' + r.name).startsWith(w.mountPath + '/'))))",message="a repository cannot be cloned into a read-only workspace: give it a path outside that workspace's mountPath, or mount the workspace read-write",fieldPath=".repos"
// +kubebuilder:validation:XValidation:rule="!has(self.retries) || !has(self.retry)",message="set retry or retries, not both: retries: N is short for retry: {limit: N}",fieldPath=".retries"
type AgentTaskSpec struct {
	// Image to run.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`

	// Command overrides the image's entrypoint.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=4096
	Command []string `json:"command,omitempty"`

	// Args to the command.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	Args []string `json:"args,omitempty"`

	// Env sets environment variables.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Env []EnvVar `json:"env,omitempty"`

	// Resources the container requests and is limited to (see
	// ResourceRequirements for the limits).
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`

	// Timeout is the longest the task may run, all retries included (the
	// Job's activeDeadlineSeconds). Past it the task ends in phase Timeout.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('168h')",message="timeout must be between 1s and 168h"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Retries after a failed attempt (the Job's backoffLimit). Defaults to
	// 0. Short for retry: {limit: N}, the Job controller's own wait between
	// attempts (10s, doubled each time, at most 10m) and every non-zero exit
	// retried; set retry instead for a longer backoff or to retry only some
	// exit codes. Not with retry.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	Retries *int32 `json:"retries,omitempty"`

	// Retry says how often a failed attempt is tried again, how long the
	// task waits before each retry and which exit codes are worth one. An
	// attempt cut short by a disruption (a node drain, a preemption, an
	// eviction) is started again at once and never counts. Not with
	// retries.
	// +optional
	Retry *RetryPolicy `json:"retry,omitempty"`

	// TTLAfterFinished deletes what Cleanup names this long after the task
	// finished. Outputs are already in the status by then.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('8760h')",message="ttlAfterFinished must be between 0s and 8760h"
	TTLAfterFinished *metav1.Duration `json:"ttlAfterFinished,omitempty"`

	// Cleanup is what the TTL deletes: Job (the default) or Task.
	// +optional
	Cleanup CleanupPolicy `json:"cleanup,omitempty"`

	// ServiceAccountName the pod runs as; the namespace's default when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// Placement says which nodes the pod runs on.
	// +optional
	Placement *Placement `json:"placement,omitempty"`

	// PodMetadata holds labels and annotations passed through to the pod.
	// +optional
	PodMetadata *PodMetadata `json:"podMetadata,omitempty"`

	// SecurityContext is merged field by field over the restricted default
	// (non-root, no privilege escalation, all capabilities dropped, seccomp
	// RuntimeDefault). Privileged containers, privilege escalation, added
	// capabilities other than NET_BIND_SERVICE and UID 0 are refused at
	// admission unless a cluster admin opts the namespace out.
	// +optional
	SecurityContext *SecurityContext `json:"securityContext,omitempty"`

	// Workspaces are PersistentVolumeClaims of the task's namespace its
	// container mounts: at most 4, each at its own path. In a workflow
	// step each names a workspace of the workflow's spec.workspaces.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:XValidation:rule="self.all(m, self.exists_one(n, n.mountPath == m.mountPath))",message="each workspace needs a mountPath of its own"
	Workspaces []WorkspaceMount `json:"workspaces,omitempty"`

	// Repos are git repositories cloned before the container starts: at
	// most 8, each at a path of its own, into a workspace when the path is
	// under one's mountPath. The commit each ended on is the output
	// repo.<name>.commit.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(r, self.exists_one(s, (has(s.path) ? s.path : '/workspace/' + s.name) == (has(r.path) ? r.path : '/workspace/' + r.name)))",message="each repository needs a path of its own"
	Repos []Repo `json:"repos,omitempty"`

	// Outputs reads the task's outputs from files besides its termination
	// message: each file directly in outputs.fromDir is one output, its
	// name the key (docs/users/tasks.md, "Outputs from files").
	// +optional
	Outputs *TaskOutputs `json:"outputs,omitempty"`

	// Cancel stops the task without deleting it: its pod is stopped and the
	// task ends in phase Cancelled, keeping its record. It cannot be undone.
	// `kubectl sched task cancel` sets it.
	// +optional
	Cancel bool `json:"cancel,omitempty"`
}

// TaskOutputs are a task's outputs written as files.
// +kubebuilder:validation:XValidation:rule="!self.fromDir.split('/').exists(p, p == '..' || p == '.')",message="fromDir may not hold . or .. parts",fieldPath=".fromDir"
type TaskOutputs struct {
	// FromDir is the directory the task writes its output files into, an
	// absolute path: an empty directory the operator mounts there. Each
	// regular file directly in it is one output, its name the key (a
	// letter or '_', then letters, digits, '_', '.' and '-'), its content
	// the value (UTF-8 text): at most 64 files and 1 MiB in all, or less
	// as the namespace's tier says (FileOutputBytes). A sidecar of the
	// operator's tools image hands them over when the task's container
	// ends; they are read with the termination message's outputs, into
	// status.fileOutputs.
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/[^:]*[^/:]$`
	FromDir string `json:"fromDir"`
}

// Bounds of a task's file outputs (spec.outputs.fromDir).
const (
	// MaxFileOutputs is the most files a task's output directory holds.
	MaxFileOutputs = 64
	// MaxFileOutputBytes is the most bytes they hold in all: a tier may
	// allow less.
	MaxFileOutputBytes = 1 << 20
)

// MaxPassedFileOutputBytes is the most a step's file outputs may hold in
// all for its workflow to pass them on to later steps (references, when,
// forEach.from) and keep them in its status: a termination message's
// size. Larger ones stay in the step's AgentTask.
const MaxPassedFileOutputBytes = 4096

// PassedFileOutputs reports whether file outputs are small enough for a
// workflow to pass on (MaxPassedFileOutputBytes), and that there are any.
func PassedFileOutputs(outs map[string]string) bool {
	if len(outs) == 0 {
		return false
	}
	n := 0
	for k, v := range outs {
		n += len(k) + len(v)
	}
	return n <= MaxPassedFileOutputBytes
}

// StepOutputs are the outputs a workflow passes on from a step's task:
// its termination message's and its file outputs when they are small
// enough (PassedFileOutputs).
func StepOutputs(st *AgentTaskStatus) map[string]string {
	if !PassedFileOutputs(st.FileOutputs) {
		return st.Outputs
	}
	out := make(map[string]string, len(st.Outputs)+len(st.FileOutputs))
	for k, v := range st.Outputs {
		out[k] = v
	}
	for k, v := range st.FileOutputs {
		out[k] = v
	}
	return out
}

// RetryPolicy says when and how soon a task's failed attempt is tried again.
type RetryPolicy struct {
	// Limit is how many times a failed attempt is tried again (0 to 10):
	// at most limit+1 attempts in all. It is the Job's backoffLimit.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	Limit int32 `json:"limit"`

	// Backoff is how long the task waits after failed attempt n before it
	// starts the next: backoff * 2^(n-1) from when that attempt ended, at
	// most 10m (30s waits 30s, then 1m, then 2m). Between 10s and 10m: the
	// Job controller itself waits 10s, doubled the same way, before it
	// replaces a failed pod, so a shorter backoff could not be kept.
	// Unset, the Job controller's own wait applies (the same as 10s). While
	// the task waits its phase stays Running, with reason BackingOff and
	// status.nextAttemptTime; spec.timeout counts the wait too. The
	// operator holds the next attempt by suspending the task's Job.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="backoff must be at least 10s: the Job controller already waits 10s (doubled after each failure) before it replaces a failed pod, so a shorter backoff could not be kept; leave backoff out for that wait"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('10m')",message="backoff must be at most 10m: every wait is capped at 10m"
	Backoff *metav1.Duration `json:"backoff,omitempty"`

	// OnExitCodes are the exit codes of the task's container (1 to 255, at
	// most 32) that are worth a retry: an attempt that exits with any
	// other non-zero code fails the task at once, and the status says it
	// was not retried. Unset, every failed attempt is retried. A container
	// killed for want of memory exits 137. (The Job's podFailurePolicy:
	// FailJob on the other codes.)
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=255
	OnExitCodes []int32 `json:"onExitCodes,omitempty"`
}

// RetryLimit is how many times a failed attempt is tried again: retry.limit,
// or retries, or 0.
func (s *AgentTaskSpec) RetryLimit() int32 {
	if s.Retry != nil {
		return s.Retry.Limit
	}
	if s.Retries != nil {
		return *s.Retries
	}
	return 0
}

// AgentTaskPhase is where a task is in its life.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed;Timeout;Cancelled
// +kubebuilder:validation:MaxLength=16
type AgentTaskPhase string

const (
	// TaskPending means the Job exists, its pod is not running yet. The Ready
	// condition says why when it cannot start.
	TaskPending AgentTaskPhase = "Pending"
	// TaskRunning means the container runs, or, with reason BackingOff,
	// that an attempt failed and the next starts at status.nextAttemptTime.
	TaskRunning AgentTaskPhase = "Running"
	// TaskSucceeded means the container exited 0.
	TaskSucceeded AgentTaskPhase = "Succeeded"
	// TaskFailed means the last attempt exited non-zero.
	TaskFailed AgentTaskPhase = "Failed"
	// TaskTimeout means the task ran past spec.timeout.
	TaskTimeout AgentTaskPhase = "Timeout"
	// TaskCancelled means spec.cancel stopped it. Tasks and Workflows share the
	// name: an ending someone chose, final, unlike an app's Stopped, which
	// Running undoes.
	TaskCancelled AgentTaskPhase = "Cancelled"
)

// Finished reports whether the phase is final.
func (p AgentTaskPhase) Finished() bool {
	return p == TaskSucceeded || p == TaskFailed || p == TaskTimeout || p == TaskCancelled
}

// AgentTaskStatus is the observed state of a task.
type AgentTaskStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase: Pending, Running, Succeeded, Failed or Timeout.
	// +optional
	Phase AgentTaskPhase `json:"phase,omitempty"`

	// JobName is the Job that runs the task.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	JobName string `json:"jobName,omitempty"`

	// PodName is the pod of the latest attempt.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PodName string `json:"podName,omitempty"`

	// StartTime is when the Job started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the task finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Attempts counts pods started for the task, except pods that were
	// disrupted (preempted, evicted, drained): the Job replaces those
	// without using a retry.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`

	// Disruptions counts the task's pods that were preempted, evicted
	// (a container over its ephemeral-storage limit too) or drained: the
	// Job replaces them without using a retry, up to MaxDisruptions; the
	// next one fails the task (reason TooManyDisruptions).
	// +optional
	Disruptions int32 `json:"disruptions,omitempty"`

	// ExitCode of the last finished attempt.
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`

	// NextAttemptTime is when the next attempt starts, while the task waits
	// after a failed attempt (reason BackingOff): when that attempt ended
	// plus spec.retry.backoff, doubled for each earlier retry, or the Job
	// controller's own wait when that is later. Unset otherwise.
	// +optional
	NextAttemptTime *metav1.Time `json:"nextAttemptTime,omitempty"`

	// Reason is a CamelCase word for why the task is in its phase.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`

	// Message explains the phase for a person.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Message string `json:"message,omitempty"`

	// Outputs parsed from the container's termination message: at most 64,
	// 4095 bytes in all (a termination message's limit), and
	// repo.<name>.commit for each of spec.repos.
	// +optional
	// +kubebuilder:validation:MaxProperties=72
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 63 && size(self[k]) <= 4096)",message="output keys may have at most 63 characters and values 4096"
	Outputs map[string]string `json:"outputs,omitempty"`

	// FileOutputs are the outputs read from the files of
	// spec.outputs.fromDir: at most 64, 1 MiB in all (MaxFileOutputBytes,
	// or the tier's bound). A key may not also be an output of the
	// termination message, and a task has at most 64 outputs in all. A
	// workflow passes them on to later steps when they hold at most
	// MaxPassedFileOutputBytes in all.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	FileOutputs map[string]string `json:"fileOutputs,omitempty"`

	// Pruned is what the operator deleted of the pods of the task's
	// earlier attempts: every pod but the latest one (the attempt that
	// runs, or ended the task) and the latest failed attempt before it
	// (whose log explains the failure before), once this status counts it. Attempts and
	// Disruptions go on counting them.
	// +optional
	Pruned *PrunedPods `json:"pruned,omitempty"`

	// Logs keeps the end of each of the task's pods' logs (their task
	// container's), read when the pod ended and written here before the
	// operator lets the pod go (pruned, deleted after
	// --succeeded-pod-retention, or with its Job), so that `kubectl sched
	// logs` shows it as long as the task exists: at most 500 lines and
	// 32 KiB per pod (KeptLogLines, KeptLogBytes), 128 KiB per task
	// (KeptLogTaskBytes; the oldest pods' given up first), bytes counted
	// as JSON stores them. In the order the pods were created.
	// +optional
	// +listType=map
	// +listMapKey=pod
	// +kubebuilder:validation:MaxItems=32
	Logs []KeptLog `json:"logs,omitempty"`

	// Expiry is when the operator deletes the task once it has finished:
	// by spec.ttlAfterFinished with cleanup Task, in a namespace of a tier
	// by the tier's TTLs, else by the cluster's default (kubectl sched
	// install --default-ttl). Unset while nothing will delete it (a
	// workflow's step task goes with its workflow).
	// +optional
	Expiry *Expiry `json:"expiry,omitempty"`

	// Conditions: Ready (the pod runs or the task succeeded), Succeeded,
	// and PodDeleted once the operator deleted a succeeded task's pods
	// after the cluster's --succeeded-pod-retention (the outputs and the
	// end of the log stay here).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PrunedPods are the pods of a task's earlier attempts the operator
// deleted, and what they counted.
type PrunedPods struct {
	// Pods names them: the ones still there are being deleted, and count
	// only here. At most the retry limit's 11 attempts and
	// MaxDisruptions+1 disruptions.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	Pods []string `json:"pods"`
	// Attempts counts the attempts among them (pods that ran and were
	// not disrupted).
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// Failed counts the attempts that failed on their own.
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// Disrupted counts the pods that were preempted, evicted or drained.
	// +optional
	Disrupted int32 `json:"disrupted,omitempty"`
}

// KeptLogReason says what a KeptLog holds.
// +kubebuilder:validation:Enum=Kept;Truncated;Unavailable;Dropped
// +kubebuilder:validation:MaxLength=16
type KeptLogReason string

const (
	// LogKept says Log is the pod's whole log.
	LogKept KeptLogReason = "Kept"
	// LogTruncated says Log is the end of a longer log, its last
	// KeptLogLines lines within KeptLogBytes.
	LogTruncated KeptLogReason = "Truncated"
	// LogUnavailable says no log could be read (its node served none, the
	// pod was gone); Message says why.
	LogUnavailable KeptLogReason = "Unavailable"
	// LogDropped says the log was given up to keep the task's kept logs
	// within KeptLogTaskBytes, for its later pods'.
	LogDropped KeptLogReason = "Dropped"
)

// The bounds of what a task keeps of its pods' logs (status.logs), in bytes
// as JSON stores them (a control character takes six). A task's largest
// spec, metadata and status leave more than KeptLogTaskBytes of an object's
// 1.5 MiB; the operator keeps less when a task's other fields leave less.
const (
	KeptLogLines     = 500
	KeptLogBytes     = 32 << 10
	KeptLogTaskBytes = 128 << 10
)

// KeptLog is what the operator kept of one pod's log when the pod ended.
type KeptLog struct {
	// Pod is the pod whose log this is, one of the task's Job's.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Pod string `json:"pod"`

	// CreationTime is when the pod was created: attempts are listed in
	// its order.
	// +optional
	CreationTime *metav1.Time `json:"creationTime,omitempty"`

	// ExitCode of the pod's task container.
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`

	// Reason says what Log holds: Kept (the whole log), Truncated (its
	// end), Unavailable (none could be read) or Dropped (given up for
	// later pods').
	// +required
	Reason KeptLogReason `json:"reason"`

	// Message says why, for Truncated, Unavailable and Dropped.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// Log is the end of the pod's log, bytes that are not UTF-8
	// replaced.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Log string `json:"log,omitempty"`
}

// KeptLogOf is the record of pod in logs, or nil.
func KeptLogOf(logs []KeptLog, pod string) *KeptLog {
	for i := range logs {
		if logs[i].Pod == pod {
			return &logs[i]
		}
	}
	return nil
}

// MaxDisruptions is how many of a task's pods may be disrupted (preempted,
// evicted, drained) and replaced without using a retry; one more fails the
// task. An eviction is not the task's failure, but a task whose container
// fills its ephemeral storage is evicted every time, and each replacement
// presses a node for everyone.
const MaxDisruptions = 3

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=at,categories=sched
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Exit",type=integer,JSONPath=`.status.exitCode`
// +kubebuilder:printcolumn:name="Attempts",type=integer,JSONPath=`.status.attempts`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`,priority=1
// +kubebuilder:printcolumn:name="Job",type=string,JSONPath=`.status.jobName`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// AgentTask runs one container to completion in a Job and captures its
// outputs from the container's termination message.
type AgentTask struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the task to run.
	// +required
	// +kubebuilder:validation:XValidation:rule="!has(self.workspaces) || self.workspaces.all(m, has(m.claimName))",message="a task's workspace names an existing claim of its namespace: set claimName (only a workflow's steps mount the workflow's workspaces by name)",fieldPath=".workspaces"
	Spec AgentTaskSpec `json:"spec"`

	// Status is the task's observed state.
	// +optional
	Status AgentTaskStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// AgentTaskList is a list of AgentTasks.
type AgentTaskList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AgentTask `json:"items"`
}

func init() {
	SchemeBuilder.Register(&AgentTask{}, &AgentTaskList{})
}
