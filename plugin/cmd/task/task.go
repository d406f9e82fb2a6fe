// Package task implements `kubectl sched task run`, `logs` and `cancel`:
// start an AgentTask, wait for it or follow its pod's logs, read those logs
// later, or cancel it.
package task

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cancel"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/waitfor"
)

// NewCommand returns `kubectl sched task` with its subcommands.
func NewCommand(c kube.ClientOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "task",
		Aliases: []string{"tasks", "agenttask", "at"},
		Short:   "Run an AgentTask (one container to completion) and read its logs",
		Example: `  # Run a command, wait for it and print its outputs as KEY=VALUE lines
  kubectl sched task run hello --image busybox --wait -- sh -c 'echo done'

  # Follow the logs of a task
  kubectl sched task logs hello -f

  # Cancel it, keeping its record
  kubectl sched task cancel hello`,
	}
	cmd.AddCommand(newRunCommand(c), newLogsCommand(c), newCancelCommand(c))
	return cmd
}

func newCancelCommand(c kube.ClientOptions) *cobra.Command {
	return cancel.NewCommand(cancel.Target{
		Kind: agentTaskKind, Verb: "cancel", Done: "cancelled",
		Phase: func(o client.Object) (string, bool) {
			p := o.(*schedv1.AgentTask).Status.Phase
			return string(p), p.Finished()
		},
	}, "Cancel an AgentTask without deleting it: its pod stops, its record stays",
		`Cancel a task and keep its record. The operator stops its pod (the Job is
suspended) and ends the task in phase Cancelled, with its logs and events
still there to read. It cannot be resumed. A task that has already ended is
left as it is. A task that is a workflow's step ends the workflow too.`,
		`  # Cancel task hello
  kubectl sched task cancel hello`, c)
}

// agentTaskKind is the kind for name completion.
var agentTaskKind = kinds.AgentTask

// what names a task in errors the way kubectl names objects.
func what(name string) string {
	return fmt.Sprintf("agenttasks.%s %q", schedv1.GroupName, name)
}

// outcome turns a finished task into the command's result: its outputs as
// KEY=VALUE lines on success, else an error with the documented exit code.
// The container wrote the outputs and the message: both are made safe.
func outcome(t *schedv1.AgentTask, print func(string)) error {
	st := t.Status
	st.Reason, st.Message = printing.Line(st.Reason), printing.OneLine(st.Message)
	switch st.Phase {
	case schedv1.TaskSucceeded:
		for _, k := range slices.Sorted(maps.Keys(st.Outputs)) {
			print(printing.Line(k) + "=" + printing.Line(st.Outputs[k]))
		}
		// File outputs may hold lines and a MiB: only the short one-line
		// ones as KEY=VALUE; the others are in the task's status
		// (status.fileOutputs; describe gives their sizes).
		for _, k := range slices.Sorted(maps.Keys(st.FileOutputs)) {
			if v := st.FileOutputs[k]; len(v) <= 64 && !strings.ContainsAny(v, "\r\n") {
				print(printing.Line(k) + "=" + printing.Line(v))
			}
		}
		return nil
	case schedv1.TaskTimeout:
		return cmdutil.Errorf(cmdutil.ExitTimedOut, logsHint(t),
			"agenttask %s timed out (%s): %s", t.Name, printing.OrDash(st.Reason), printing.OrDash(st.Message))
	case schedv1.TaskCancelled:
		return cmdutil.Errorf(cmdutil.ExitFailed, logsHint(t), "agenttask %s was cancelled: %s", t.Name, printing.OrDash(st.Message))
	}
	exit := "no exit code"
	if st.ExitCode != nil {
		exit = fmt.Sprintf("exit code %d", *st.ExitCode)
	}
	return cmdutil.Errorf(cmdutil.ExitFailed, logsHint(t),
		"agenttask %s failed (%s, %s): %s", t.Name, printing.OrDash(st.Reason), exit, printing.OrDash(st.Message))
}

func logsHint(t *schedv1.AgentTask) string {
	if t.Status.PodName == "" {
		return fmt.Sprintf("'kubectl sched describe agenttask %s' shows its events.", t.Name)
	}
	return fmt.Sprintf("See its logs: kubectl sched task logs %s -n %s", t.Name, t.Namespace)
}

// watchError explains why following a task stopped before it finished.
func watchError(err error, name string, timeout time.Duration, last *schedv1.AgentTask) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		phase := "not started"
		if last != nil && last.Status.Phase != "" {
			phase = string(last.Status.Phase)
		}
		return cmdutil.Errorf(cmdutil.ExitWatchTimeout,
			fmt.Sprintf("It goes on in the cluster: 'kubectl sched task logs %s -f' follows it, 'kubectl sched get agenttask %s' shows it.", name, name),
			"stopped waiting after %s: agenttask %s is %s", timeout, name, phase)
	case errors.Is(err, waitfor.ErrDeleted):
		return cmdutil.Errorf(cmdutil.ExitNotFound, "Someone or its TTL deleted it; 'kubectl sched get agenttasks' lists what exists.",
			"agenttask %s was deleted before it finished", name)
	}
	return cmdutil.API(err, "watch", what(name))
}
