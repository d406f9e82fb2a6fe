package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConcurrencyPolicy says what a CronWorkflow does when a run is due while
// an earlier one is still running.
// +kubebuilder:validation:Enum=Allow;Forbid;Replace
// +kubebuilder:validation:MaxLength=16
type ConcurrencyPolicy string

// The concurrency policies, as a CronJob's.
const (
	// ConcurrencyAllow starts the new run beside the running ones.
	ConcurrencyAllow ConcurrencyPolicy = "Allow"
	// ConcurrencyForbid skips the new run while one runs.
	ConcurrencyForbid ConcurrencyPolicy = "Forbid"
	// ConcurrencyReplace stops (deletes) the running ones and starts the new run.
	ConcurrencyReplace ConcurrencyPolicy = "Replace"
)

// MaxCronWorkflowNameLength keeps the names of a CronWorkflow's runs,
// <name>-<unix time> and <name>-manual-<unix time>, within 63 characters.
const MaxCronWorkflowNameLength = 63 - len("-manual-") - 10

// Annotations on the runs of a CronWorkflow.
const (
	// AnnotationScheduledTime is on each run the operator starts: the
	// schedule time it is for (RFC 3339). Runs started by
	// `kubectl sched workflow trigger` have AnnotationManualRun instead.
	AnnotationScheduledTime = GroupName + "/scheduled-time"
	// AnnotationManualRun is "true" on a run `kubectl sched workflow
	// trigger` made, which is not for any schedule time.
	AnnotationManualRun = GroupName + "/manual"
)

// CronWorkflowSpec is when to run a Workflow, and the Workflow.
// Schedule checks: five fields of numbers, names (JAN, MON), ranges,
// steps and lists, each within its range, or a descriptor. The operator
// parses it again (as Kubernetes' CronJob controller does, with
// github.com/robfig/cron) and reports what these rules cannot see, such as
// a range whose start is past its end, in its Ready condition.
type CronWorkflowSpec struct {
	// Schedule is when runs start, in cron syntax: five fields, minute
	// (0-59), hour (0-23), day of month (1-31), month (1-12 or JAN-DEC) and
	// day of week (0-6 or SUN-SAT, 0 is Sunday), each *, a value, a range
	// a-b, a step */n or a-b/n, or a list of these separated by commas;
	// or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight
	// and @hourly. "0 2 * * *" is every day at 02:00 in timeZone.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.startsWith('@') ? self in ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'] : self.matches('^[[:space:]]*[^[:space:]]+([[:space:]]+[^[:space:]]+){4}[[:space:]]*$')",message="schedule must be five fields separated by spaces (minute hour day-of-month month day-of-week), such as \"0 2 * * *\", or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight and @hourly (@every and TZ= are not supported: use spec.timeZone)"
	// +kubebuilder:validation:XValidation:rule="self.startsWith('@') || !self.matches('^[[:space:]]*[^[:space:]]+([[:space:]]+[^[:space:]]+){4}[[:space:]]*$') || self.matches('^[[:space:]]*([*]|[0-5]?[0-9](-[0-5]?[0-9])?)(/[1-9][0-9]?)?(,([*]|[0-5]?[0-9](-[0-5]?[0-9])?)(/[1-9][0-9]?)?)*[[:space:]]')",message="schedule: the minute (first field) must be *, a number from 0 to 59, a range a-b, a step */n or a-b/n, or a list of these separated by commas"
	// +kubebuilder:validation:XValidation:rule="self.startsWith('@') || !self.matches('^[[:space:]]*[^[:space:]]+([[:space:]]+[^[:space:]]+){4}[[:space:]]*$') || self.matches('^[[:space:]]*[^[:space:]]+[[:space:]]+([*]|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/[1-9][0-9]?)?(,([*]|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/[1-9][0-9]?)?)*[[:space:]]')",message="schedule: the hour (second field) must be *, a number from 0 to 23, a range a-b, a step */n or a-b/n, or a list of these separated by commas"
	// +kubebuilder:validation:XValidation:rule="self.startsWith('@') || !self.matches('^[[:space:]]*[^[:space:]]+([[:space:]]+[^[:space:]]+){4}[[:space:]]*$') || self.matches('^[[:space:]]*[^[:space:]]+[[:space:]]+[^[:space:]]+[[:space:]]+([*?]|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/[1-9][0-9]?)?(,([*?]|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/[1-9][0-9]?)?)*[[:space:]]')",message="schedule: the day of month (third field) must be * or ?, a number from 1 to 31, a range a-b, a step */n or a-b/n, or a list of these separated by commas"
	// +kubebuilder:validation:XValidation:rule="self.startsWith('@') || !self.matches('^[[:space:]]*[^[:space:]]+([[:space:]]+[^[:space:]]+){4}[[:space:]]*$') || self.matches('^[[:space:]]*[^[:space:]]+[[:space:]]+[^[:space:]]+[[:space:]]+[^[:space:]]+[[:space:]]+([*]|(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))(-(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)))?)(/[1-9][0-9]?)?(,([*]|(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))(-(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)))?)(/[1-9][0-9]?)?)*[[:space:]]')",message="schedule: the month (fourth field) must be *, a number from 1 to 12 or a name JAN to DEC, a range a-b, a step */n or a-b/n, or a list of these separated by commas"
	// +kubebuilder:validation:XValidation:rule="self.startsWith('@') || !self.matches('^[[:space:]]*[^[:space:]]+([[:space:]]+[^[:space:]]+){4}[[:space:]]*$') || self.matches('^[[:space:]]*[^[:space:]]+[[:space:]]+[^[:space:]]+[[:space:]]+[^[:space:]]+[[:space:]]+[^[:space:]]+[[:space:]]+([*?]|(0?[0-6]|(?i:sun|mon|tue|wed|thu|fri|sat))(-(0?[0-6]|(?i:sun|mon|tue|wed|thu|fri|sat)))?)(/[1-9][0-9]?)?(,([*?]|(0?[0-6]|(?i:sun|mon|tue|wed|thu|fri|sat))(-(0?[0-6]|(?i:sun|mon|tue|wed|thu|fri|sat)))?)(/[1-9][0-9]?)?)*[[:space:]]*$')",message="schedule: the day of week (fifth field) must be * or ?, a number from 0 to 6 (0 is Sunday) or a name SUN to SAT, a range a-b, a step */n or a-b/n, or a list of these separated by commas"
	Schedule string `json:"schedule"`

	// TimeZone is the IANA time zone the schedule is read in, such as
	// Europe/Berlin or America/New_York; UTC when unset. Daylight saving
	// time is followed: a time that does not exist that day is skipped,
	// one that happens twice runs once.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z][-A-Za-z0-9_+]*(/[-A-Za-z0-9_+]+)*$')",message="timeZone must be an IANA time zone name such as Europe/Berlin, America/New_York or UTC"
	// +kubebuilder:validation:XValidation:rule="self.lowerAscii() != 'local'",message="timeZone must name a time zone such as Europe/Berlin or UTC; Local (the operator's own zone) is not allowed"
	TimeZone string `json:"timeZone,omitempty"`

	// ConcurrencyPolicy is what happens when a run is due while an earlier
	// one still runs: Allow (the default) starts it beside, Forbid skips it
	// (it starts when the earlier one ends, if still within
	// startingDeadlineSeconds), Replace deletes the running ones first.
	// Runs made by `kubectl sched workflow trigger` count as running too.
	// +optional
	// +kubebuilder:default=Allow
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`

	// StartingDeadlineSeconds is how late a run may still start, when the
	// operator was down or the schedule suspended at its time. Of the runs
	// missed, only the latest starts, and only within this deadline;
	// unset, the latest missed since the last run (or since creation)
	// starts, however late. Between 1 and 2678400 (31 days).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2678400
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`

	// SuccessfulRunsHistoryLimit is how many succeeded runs are kept; older
	// ones are deleted, with their step tasks. 3 when unset, at most 100.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	SuccessfulRunsHistoryLimit *int32 `json:"successfulRunsHistoryLimit,omitempty"`

	// FailedRunsHistoryLimit is how many runs that ended otherwise (Failed,
	// Timeout, Cancelled) are kept. 1 when unset, at most 100.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	FailedRunsHistoryLimit *int32 `json:"failedRunsHistoryLimit,omitempty"`

	// Suspend stops new runs while true; running ones go on. Times missed
	// meanwhile count as missed (see startingDeadlineSeconds).
	// +optional
	// +kubebuilder:default=false
	Suspend bool `json:"suspend,omitempty"`

	// WorkflowSpec is the Workflow each run is: the same fields, checked by
	// the same rules, as a Workflow's spec. It may change; runs already
	// started keep the spec they started with. cancel, retryOf and approvals
	// belong to a run and cannot be set here.
	// +kubebuilder:validation:XValidation:rule="!self.?cancel.orValue(false)",message="spec.workflowSpec.cancel cannot be set: set spec.suspend to stop new runs, or stop a run with kubectl sched workflow stop",fieldPath=".cancel"
	// +kubebuilder:validation:XValidation:rule="!has(self.retryOf)",message="spec.workflowSpec.retryOf cannot be set: each run is a new workflow; retry a run with kubectl sched workflow retry",fieldPath=".retryOf"
	// +kubebuilder:validation:XValidation:rule="!has(self.approvals)",message="spec.workflowSpec.approvals cannot be set: a decision is made on one run, with kubectl sched workflow approve RUN STEP",fieldPath=".approvals"
	WorkflowSpec WorkflowSpec `json:"workflowSpec"`
}

// CronWorkflowRun names a run that has not finished.
type CronWorkflowRun struct {
	// Name of the Workflow.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// ScheduledTime is the schedule time it is for; unset for a run made
	// by `kubectl sched workflow trigger`.
	// +optional
	ScheduledTime *metav1.Time `json:"scheduledTime,omitempty"`
}

// MaxActiveRunsListed bounds status.active.
const MaxActiveRunsListed = 16

// CronWorkflowStatus is the observed state of a CronWorkflow.
type CronWorkflowStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Active lists the runs that have not finished, newest first: at most
	// 16 (activeCount counts them all).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Active []CronWorkflowRun `json:"active,omitempty"`

	// ActiveCount is how many runs have not finished.
	// +optional
	ActiveCount int32 `json:"activeCount"`

	// LastScheduleTime is the schedule time of the latest run the
	// operator started.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// LastSuccessfulTime is when the latest run that Succeeded finished.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`

	// NextScheduleTime is the next schedule time; unset while suspended or
	// when the schedule is invalid.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// Conditions: Ready, True while runs start on schedule; False with
	// the reason when the schedule is invalid, suspended, or a run could
	// not be created.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cwf,categories=sched
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Time Zone",type=string,JSONPath=`.spec.timeZone`,priority=1
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Active",type=integer,JSONPath=`.status.activeCount`
// +kubebuilder:printcolumn:name="Last run",type=date,JSONPath=`.status.lastScheduleTime`
// +kubebuilder:printcolumn:name="Next run",type=string,JSONPath=`.status.nextScheduleTime`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 45",message="metadata.name may have at most 45 characters: runs are named <name>-<unix time> and <name>-manual-<unix time>, within 63"

// CronWorkflow runs a Workflow on a schedule, as a CronJob runs a Job. Each
// run is a Workflow it owns, named <name>-<schedule time as unix seconds>.
type CronWorkflow struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the schedule and the workflow.
	// +required
	Spec CronWorkflowSpec `json:"spec"`

	// Status is the observed state.
	// +optional
	Status CronWorkflowStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CronWorkflowList is a list of CronWorkflows.
type CronWorkflowList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CronWorkflow `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CronWorkflow{}, &CronWorkflowList{})
}
