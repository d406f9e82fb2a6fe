// Package set implements `kubectl sched set image` and `kubectl sched set
// env`: change the image or the environment of an app's services, as
// `kubectl set image` and `kubectl set env` do for a Deployment, and keep
// the rest of the app.
package set

import (
	"github.com/spf13/cobra"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
)

// NewCommand returns `kubectl sched set` and its subcommands.
func NewCommand(c kube.ClientOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set",
		Short: "Change the image or the environment of an app's services",
		Long: `Set changes one part of a UserDeployment's services, with server-side apply
as field manager kubectl-sched, and keeps the rest of the app. Change the app,
not its Deployments: the operator puts back what 'kubectl set' changes there.
A later 'kubectl sched deploy' of the app replaces what set changed with what
its template or command line says.`,
		Example: `  kubectl sched set image shop web=nginx:1.28 api=ghcr.io/example/shop-api:1.5.0
  kubectl sched set env hello LOG_LEVEL=debug OLD_FLAG-`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newImageCommand(c), newEnvCommand(c))
	return cmd
}
