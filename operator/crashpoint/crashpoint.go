// Package crashpoint lets the fault tests kill the operator at a named point
// between two writes, where a random SIGKILL lands only by luck: after a
// Job is created and before the task's status says so, after a step's
// AgentTask is created and before its Job is, after a step's AgentTask is
// created and before the Workflow's status says so, after a
// CronWorkflow's run is created and before its status says so, after a
// step's cache hit is decided and before the Workflow's status says so,
// after an
// app's revision is recorded and before the app's status says so, and
// after a task's Job is held for a backoff, or resumed, and before the
// task's status says so, and after a task's status keeps its ended pods'
// logs and before the pods may go.
//
// The points exist only in a binary built with -tags crashpoint, as
// hack/test/chaos builds the operator. Everywhere else, the release binary
// included, Hit is an empty function and the environment is never read.
// In a crashpoint build the process starts inert unless
// KUBECTL_SCHED_CRASHPOINT is set to "NAME" (the first time the point is
// reached) or "NAME:N" (the Nth time); then it sends itself SIGKILL there,
// as an OOM kill would.
package crashpoint

import (
	"strconv"
	"strings"
)

// EnvVar names the crash point, for the fault tests only.
const EnvVar = "KUBECTL_SCHED_CRASHPOINT"

// The points.
const (
	// JobCreated: a task's Job created (by the AgentTask controller, or by
	// the Workflow controller for its step), the task's status not written.
	JobCreated = "agenttask-job-created"
	// StepTasksCreated: Workflow controller, step tasks (and their Jobs)
	// created, the status not written.
	StepTasksCreated = "workflow-step-tasks-created"
	// StepTaskCreated: Workflow controller, a step's task created, its
	// Job not yet (taskjob.Starter.CreateWithJob).
	StepTaskCreated = "workflow-step-task-created"
	// StepCacheHit: Workflow controller, a step's cache hit decided (it
	// takes a cached result's outputs), the status not written.
	StepCacheHit = "workflow-step-cache-hit"
	// CronRunCreated: CronWorkflow controller, a run created, the status
	// not written.
	CronRunCreated = "cronworkflow-run-created"
	// RevisionCreated: UserDeployment controller, an app's revision
	// (ControllerRevision) created, the status not written.
	RevisionCreated = "userdeployment-revision-created"
	// JobHeld: AgentTask controller, the Job suspended for a backoff, the
	// status not written.
	JobHeld = "agenttask-job-held"
	// JobResumed: AgentTask controller, the Job resumed after its
	// backoff, the status not written.
	JobResumed = "agenttask-job-resumed"
	// LogsKept: AgentTask controller, the status that keeps ended pods'
	// logs written, the pods not yet released, pruned or deleted.
	LogsKept = "agenttask-logs-kept"
	// FileOutputsRead: AgentTask controller, a succeeded task's file
	// outputs read from its pod's sidecar, the status not written.
	FileOutputsRead = "agenttask-file-outputs-read"
)

// Tag is the build tag that arms the points.
const Tag = "crashpoint"

func parse(v string) (string, int64) {
	name, count, found := strings.Cut(v, ":")
	if !found {
		return name, 1
	}
	n, err := strconv.ParseInt(count, 10, 64)
	if err != nil || n < 1 {
		return name, 1
	}
	return name, n
}
