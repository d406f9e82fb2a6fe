package schedext

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
)

// UnsetOptions for `kubectl sched schedext unset`.
type UnsetOptions struct {
	kube.ClientOptions

	DryRun string

	names []string
}

func newUnsetCommand(c kube.ClientOptions) *cobra.Command {
	o := &UnsetOptions{ClientOptions: c}
	cmd := &cobra.Command{
		Use:   "unset NAME...",
		Short: "Delete SchedExts: their schedulers detach and the nodes fall back to the kernel's default",
		Example: `  kubectl sched schedext unset lavd
  kubectl sched schedext unset lavd --dry-run=server`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: o.CompleteNames(kind, 0),
		RunE:              cmdutil.RunE(o),
	}
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"client" only checks it exists; "server" has the API server check the deletion.`)
	return cmd
}

// Complete reads the arguments and builds the clients.
func (o *UnsetOptions) Complete(cmd *cobra.Command, args []string) error {
	o.names = args
	return o.ClientOptions.Complete(cmd, args)
}

// Validate checks the flags.
func (o *UnsetOptions) Validate() error {
	return cmdutil.ValidateDryRun(o.DryRun)
}

// Run deletes each SchedExt; the operator's owner references take its
// DaemonSet with it.
func (o *UnsetOptions) Run(ctx context.Context) error {
	suffix := cmdutil.DryRunSuffix(o.DryRun)
	for _, name := range o.names {
		scx := &schedv1.SchedExt{ObjectMeta: metav1.ObjectMeta{Name: name}}
		var err error
		switch o.DryRun {
		case "client":
			err = o.Clients.Client.Get(ctx, client.ObjectKey{Name: name}, scx)
		case "server":
			err = o.Clients.Client.Delete(ctx, scx, client.DryRunAll)
		default:
			err = o.Clients.Client.Delete(ctx, scx)
		}
		if err != nil {
			return cmdutil.API(err, "delete", kind.What("", name))
		}
		fmt.Fprintf(o.Out, "%s %q deleted%s\n", kind.Qualified(), name, suffix)
	}
	return nil
}
