// Package workflow implements `kubectl sched workflow run`, `watch`,
// `stop`, `retry`, `approve`, `deny`, `suspend`, `resume`, `schedule` and
// `trigger`: submit a Workflow, checked for bad step references and when
// expressions first, follow it live until it ends, stop it, run it again,
// decide on a step that waits for approval, hold and release the start of
// its steps, put it on a cron schedule (a CronWorkflow) or start a
// scheduled one now.
package workflow

import (
	"fmt"

	"github.com/spf13/cobra"

	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cancel"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
)

// NewCommand returns `kubectl sched workflow` with its subcommands.
func NewCommand(c kube.ClientOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "workflow",
		Aliases: []string{"workflows", "wf"},
		Short:   "Run Workflows (AgentTasks in sequence or side by side, passing outputs), on a schedule too, and watch them live",
		Example: `  # Submit a workflow and watch it to the end
  kubectl sched workflow run -f pipeline.yaml --watch

  # Watch one that runs, with the running step's logs
  kubectl sched workflow watch nightly --logs

  # Stop it, keeping its record
  kubectl sched workflow stop nightly

  # Let a step that waits for approval go on
  kubectl sched workflow approve nightly deploy

  # Hold the start of new steps, then release it
  kubectl sched workflow suspend nightly
  kubectl sched workflow resume nightly

  # Run it every night at 02:00 Berlin time, and once now
  kubectl sched workflow schedule nightly --cron "0 2 * * *" --time-zone Europe/Berlin -f pipeline.yaml
  kubectl sched workflow trigger nightly --watch`,
	}
	cmd.AddCommand(newRunCommand(c), newWatchCommand(c), newStopCommand(c), newRetryCommand(c),
		newApproveCommand(c), newDenyCommand(c), newSuspendCommand(c), newResumeCommand(c),
		newScheduleCommand(c), newTriggerCommand(c))
	return cmd
}

func newStopCommand(c kube.ClientOptions) *cobra.Command {
	return cancel.NewCommand(cancel.Target{
		Kind: workflowKind, Verb: "stop", Done: "stopped",
		Phase: func(o client.Object) (string, bool) {
			st := o.(*schedv1.Workflow).Status
			if m := st.Main; m != nil && !st.Phase.Finished() {
				// spec.cancel stops the steps, not the finally steps.
				return fmt.Sprintf("its steps ended %s; its finally steps run to their end", m.Phase), true
			}
			return string(st.Phase), st.Phase.Finished()
		},
	}, "Stop a Workflow without deleting it: its running step's pod stops, later steps are skipped",
		`Stop a running workflow and keep its record. The operator cancels the running
step's AgentTask (its pod is stopped), skips the steps not started, and ends the
workflow in phase Cancelled (the same phase 'task cancel' ends a task in), with
the outputs of the steps that finished. Its finally steps still run. It
cannot be resumed: run it again under another name. A workflow that has
already ended, or runs its finally steps, is left as it is (cancel a finally
step's task with 'kubectl sched task cancel' to stop it).`,
		`  # Stop the nightly workflow
  kubectl sched workflow stop nightly

  # Check first that it may be stopped
  kubectl sched workflow stop nightly --dry-run=server`, c)
}

// what names a workflow in errors the way kubectl names objects.
func what(name string) string {
	return fmt.Sprintf("workflows.%s %q", schedv1.GroupName, name)
}
