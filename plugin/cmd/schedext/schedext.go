// Package schedext implements `kubectl sched schedext set|status|unset`:
// load a sched_ext CPU scheduler on nodes, see where it is attached, and
// remove it.
package schedext

import (
	"github.com/spf13/cobra"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
)

var kind = kinds.SchedExt

// NewCommand returns `kubectl sched schedext` and its subcommands.
func NewCommand(c kube.ClientOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "schedext",
		Aliases: []string{"scx"},
		Short:   "Load sched_ext CPU schedulers on nodes and see where they are attached",
		Long: `A SchedExt loads a sched_ext CPU scheduler (scx_lavd, scx_rusty, ... or an image
of your own) on the nodes its selector picks, through a DaemonSet the operator
runs. A node runs one scheduler: a node an older SchedExt already has is a
conflict, and a kernel without sched_ext is unsupported.`,
		Example: `  kubectl sched schedext set lavd --sched scx_lavd --nodes pool=batch
  kubectl sched schedext status
  kubectl sched schedext unset lavd`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newSetCommand(c), newStatusCommand(c), newUnsetCommand(c))
	return cmd
}
