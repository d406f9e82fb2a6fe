// Package workflow implements `kubectl sched workflow run` and `kubectl
// sched workflow watch`: submit a Workflow, checked for bad step references
// first, and follow it live until it ends.
package workflow

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// NewCommand returns `kubectl sched workflow` with its subcommands.
func NewCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "workflow",
		Aliases: []string{"workflows", "wf"},
		Short:   "Run Workflows (AgentTasks in sequence, passing outputs) and watch them live",
		Example: `  # Submit a workflow and watch it to the end
  kubectl sched workflow run -f pipeline.yaml --watch

  # Watch one that runs, with the running step's logs
  kubectl sched workflow watch nightly --logs`,
	}
	cmd.AddCommand(newRunCommand(flags, streams), newWatchCommand(flags, streams))
	return cmd
}

// what names a workflow in errors the way kubectl names objects.
func what(name string) string {
	return fmt.Sprintf("workflows.%s %q", schedv1.GroupName, name)
}
