// Package crashpoint lets the fault tests kill the operator at a named point
// between two writes, where a random SIGKILL lands only by luck: after a
// Job is created and before the task's status says so, and after a step's
// AgentTask is created and before the Workflow's status says so.
//
// It is inert unless the process starts with KUBECTL_SCHED_CRASHPOINT set to
// "NAME" (the first time the point is reached) or "NAME:N" (the Nth time);
// then the process sends itself SIGKILL there, as an OOM kill would.
package crashpoint

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// EnvVar names the crash point, for the fault tests only.
const EnvVar = "KUBECTL_SCHED_CRASHPOINT"

// The points.
const (
	// JobCreated: AgentTask controller, the Job created, the status not written.
	JobCreated = "agenttask-job-created"
	// StepTasksCreated: Workflow controller, step tasks created, the status
	// not written.
	StepTasksCreated = "workflow-step-tasks-created"
)

var (
	target string
	nth    int64
	hits   atomic.Int64
)

func init() { target, nth = parse(os.Getenv(EnvVar)) }

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

// Hit kills the process if name is the configured point and this is the
// configured hit.
func Hit(name string) {
	if target == "" || name != target {
		return
	}
	if hits.Add(1) == nth {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way: write nothing more
	}
}
