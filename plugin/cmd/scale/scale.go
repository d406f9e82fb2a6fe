// Package scale implements `kubectl sched scale`: set the replicas of one
// service of an app, as `kubectl scale` does for a Deployment.
package scale

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/appedit"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
)

const examples = `  # Run 3 replicas of app hello, which has one service
  kubectl sched scale hello --replicas 3

  # Run 5 replicas of the web service of app shop, and wait until they are ready
  kubectl sched scale shop web --replicas 5 --wait

  # See the app as it would be, without changing it
  kubectl sched scale shop api --replicas 0 --dry-run=client -o yaml`

// Options for `kubectl sched scale`.
type Options struct {
	appedit.Options
	Service  string
	Replicas int32
	// Force sets the replicas of a service an autoscaler scales.
	Force bool

	replicasGiven bool
}

// NewCommand returns `kubectl sched scale`.
func NewCommand(c kube.ClientOptions) *cobra.Command {
	o := &Options{Options: appedit.Options{ClientOptions: c}}
	cmd := &cobra.Command{
		Use:   "scale APP [SERVICE] --replicas N",
		Short: "Set the replicas of a service of an app",
		Long: `Scale sets spec.services[].replicas of the UserDeployment, the number of pods
its service runs while the app is Running, with server-side apply as field
manager kubectl-sched: the rest of the app is kept. SERVICE may be left out
when the app has one service.

The operator scales the service's Deployment to it. Scale the app, not its
Deployment: the operator puts back what 'kubectl scale deployment' changes.
A later 'kubectl sched deploy' of the app keeps the replicas, unless its
template sets them for that service.

A service whose Deployment (or StatefulSet) a HorizontalPodAutoscaler scales
runs as many pods as the autoscaler says: the operator leaves its replicas to
it. Scale refuses such a service, naming the autoscaler; --force sets
spec.services[].replicas anyway, which the service runs once no autoscaler
scales it.`,
		Example:           examples,
		Args:              cmdutil.ArgsTaking(1, 2, "APP [SERVICE]"),
		ValidArgsFunction: appedit.Complete(&o.ClientOptions, appedit.Completion{MaxServices: 1}),
		RunE:              cmdutil.RunE(o),
	}
	cmd.Flags().Int32Var(&o.Replicas, "replicas", 0, "The number of pods the service runs (required; 0 runs none and keeps the service).")
	cmd.Flags().BoolVar(&o.Force, "force", false, "Set the replicas of a service a HorizontalPodAutoscaler scales; they apply once no autoscaler scales it.")
	o.AddFlags(cmd)
	return cmd
}

// Complete reads the arguments and builds the clients.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	if len(args) > 1 {
		o.Service = args[1]
	}
	o.replicasGiven = cmd.Flags().Changed("replicas")
	return o.Options.Complete(cmd, args)
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if !o.replicasGiven {
		return cmdutil.Usage("Say how many, for example --replicas 3.", "--replicas is required")
	}
	if o.Replicas < 0 {
		return cmdutil.Usage("Give 0 or more; 0 runs no pods and keeps the service.", "--replicas must not be negative, got %d", o.Replicas)
	}
	return o.Options.Validate()
}

// Run scales the service.
func (o *Options) Run(ctx context.Context) error {
	var svc string
	var hpa *autoscalingv2.HorizontalPodAutoscaler
	ud, changed, err := o.Change(ctx, func(a *appedit.App) (map[string]appedit.Edit, error) {
		var err error
		if svc, err = a.Service(o.Service); err != nil {
			return nil, err
		}
		if hpa, err = o.autoscaler(ctx, svc); err != nil {
			return nil, err
		}
		n := int64(o.Replicas)
		return map[string]appedit.Edit{svc: func(live, applied map[string]any) error {
			live["replicas"], applied["replicas"] = n, n
			return nil
		}}, nil
	})
	if err != nil {
		return err
	}
	line := fmt.Sprintf("%s service %s scaled to %d", appedit.Ref(o.Name), svc, o.Replicas)
	if !changed {
		line = fmt.Sprintf("%s service %s already has %d replicas", appedit.Ref(o.Name), svc, o.Replicas)
	}
	if hpa != nil {
		fmt.Fprintf(o.ErrOut, "note: %s scales service %s: it runs %s pods until the autoscaler is removed.\n", hpaName(hpa), svc, hpaRange(hpa))
	}
	if ud.Spec.State == schedv1.StateStopped {
		fmt.Fprintf(o.ErrOut, "note: app %s is stopped: service %s runs its %d replicas once 'kubectl sched start %s%s' starts it.\n", o.Name, svc, o.Replicas, o.Name, o.NSFlag())
	}
	return o.Report(ctx, ud, line)
}

// autoscaler is the HorizontalPodAutoscaler that scales service svc's
// Deployment or StatefulSet, if any: an error, unless --force, as the
// operator leaves such a workload's replicas to the autoscaler and
// spec.services[].replicas would change nothing now. One who may not list
// autoscalers is not stopped: the operator reads them, not the user.
func (o *Options) autoscaler(ctx context.Context, svc string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	var list autoscalingv2.HorizontalPodAutoscalerList
	switch err := o.Clients.Client.List(ctx, &list, client.InNamespace(o.Clients.Namespace)); {
	case apierrors.IsForbidden(err):
		return nil, nil
	case err != nil:
		return nil, cmdutil.API(err, "list", "horizontalpodautoscalers in namespace "+o.Clients.Namespace)
	}
	workload := names.ServiceObject(o.Name, svc)
	for i := range list.Items {
		hpa := &list.Items[i]
		ref := hpa.Spec.ScaleTargetRef
		gv, _ := schema.ParseGroupVersion(ref.APIVersion)
		if gv.Group != appsv1.GroupName || (ref.Kind != "Deployment" && ref.Kind != "StatefulSet") || ref.Name != workload {
			continue
		}
		if o.Force {
			return hpa, nil
		}
		return nil, cmdutil.Errorf(cmdutil.ExitError,
			fmt.Sprintf("Change the autoscaler's minReplicas and maxReplicas (kubectl edit hpa %s%s), or delete it; --force sets the replicas anyway, which the service runs once no autoscaler scales it.", hpa.Name, o.NSFlag()),
			"service %s of app %s is scaled by %s (%s replicas), not by spec.services[].replicas", svc, o.Name, hpaName(hpa), hpaRange(hpa))
	}
	return nil, nil
}

func hpaName(hpa *autoscalingv2.HorizontalPodAutoscaler) string {
	return "HorizontalPodAutoscaler " + hpa.Name
}

// hpaRange is how many replicas an autoscaler keeps: min to max.
func hpaRange(hpa *autoscalingv2.HorizontalPodAutoscaler) string {
	return fmt.Sprintf("%d to %d", ptr.Deref(hpa.Spec.MinReplicas, 1), hpa.Spec.MaxReplicas)
}
