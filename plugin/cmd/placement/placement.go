// Package placement implements `kubectl sched placement explain`: for each
// pod an app, task or workflow makes, the nodes it may use and, for the
// others, why not.
package placement

import (
	"github.com/spf13/cobra"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
)

// NewCommand returns `kubectl sched placement` and its subcommands.
func NewCommand(c kube.ClientOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "placement",
		Short: "See where the pods of an app, task or workflow may run, and why not elsewhere",
		Long: `An object's spec.placement (node pools, spot, workload type, zones, CPU
scheduler, tolerations) becomes its pods' node affinity and tolerations.
'placement explain' evaluates them against the cluster's nodes and the
namespace's quotas, before the object is created or after.`,
		Example: `  kubectl sched placement explain ud shop
  kubectl sched placement explain -f task.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newExplainCommand(c))
	return cmd
}
