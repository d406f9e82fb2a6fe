// Package lifecycle implements the commands that change one field of an
// app's spec with a merge patch: `kubectl sched stop`, `start` and
// `restart` (spec.state, or spec.restartedAt for the services to roll),
// which with --wait follow the app as `deploy --wait` does.
package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/appwait"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
)

var udKind = kinds.UserDeployment

// verb is what differs between the three commands.
type verb struct {
	name, done string
	// maxArgs: restart also takes a service.
	maxArgs              int
	short, long, example string
}

var (
	stop = verb{name: "stop", done: "stopped", maxArgs: 1,
		short: "Stop an app: scale every service to zero, keeping everything else",
		long: `Stop sets spec.state to Stopped: the operator scales every service of the
UserDeployment to zero and keeps its config, Secrets, volumes and routes, so
'kubectl sched start' brings it back as it was. With --wait it follows the
app until it is Stopped (exit 0), Degraded (exit 10), or --timeout passes
(exit 12).`,
		example: `  # Stop app shop and wait until its pods are gone
  kubectl sched stop shop --wait`}
	start = verb{name: "start", done: "started", maxArgs: 1,
		short: "Start a stopped app again",
		long: `Start sets spec.state to Running: the operator scales every service back to
its replicas. With --wait it follows the app until it is Running (exit 0),
Degraded (exit 10), or --timeout passes (exit 12).`,
		example: `  # Start app shop and wait until it serves
  kubectl sched start shop --wait`}
	restart = verb{name: "restart", done: "restarted", maxArgs: 2,
		short: "Roll the pods of an app, or of one of its services",
		long: `Restart replaces the pods of every service of the UserDeployment (or of
SERVICE only) with new ones, a rolling restart as 'kubectl rollout restart'
does: it records the time in spec.restartedAt, which the operator puts on
the pod template. With --wait it follows the app until it is Running again
(exit 0), Degraded (exit 10), or --timeout passes (exit 12).`,
		example: `  # Roll every service of app shop
  kubectl sched restart shop

  # Roll only its api service and wait for the rollout
  kubectl sched restart shop api --wait`}
)

// NewStopCommand returns `kubectl sched stop`.
func NewStopCommand(c kube.ClientOptions) *cobra.Command {
	return newCommand(stop, c)
}

// NewStartCommand returns `kubectl sched start`.
func NewStartCommand(c kube.ClientOptions) *cobra.Command {
	return newCommand(start, c)
}

// NewRestartCommand returns `kubectl sched restart`.
func NewRestartCommand(c kube.ClientOptions) *cobra.Command {
	return newCommand(restart, c)
}

// Options for the commands.
type Options struct {
	kube.ClientOptions

	verb    verb
	Name    string
	Service string
	DryRun  string
	Wait    bool
	Timeout time.Duration

	// Now is the restart time; tests may fix it.
	Now func() time.Time
}

func newCommand(v verb, c kube.ClientOptions) *cobra.Command {
	o := &Options{ClientOptions: c, verb: v, Now: time.Now, Timeout: 5 * time.Minute}
	use, args := v.name+" NAME", cmdutil.NameArg(udKind.Singular)
	if v.maxArgs == 2 {
		use, args = use+" [SERVICE]", cmdutil.ArgsTaking(1, 2, "NAME [SERVICE]")
	}
	cmd := &cobra.Command{
		Use:               use,
		Short:             v.short,
		Long:              v.long,
		Example:           v.example,
		Args:              args,
		ValidArgsFunction: o.CompleteNames(udKind, 1),
		RunE:              cmdutil.RunE(o),
	}
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"server" has the API server check the change without making it; "client" only reads the app.`)
	cmdutil.AddWaitFlags(cmd, &o.Wait, "Follow the app until it is "+target(v)+" (exit 0) or Degraded (exit 10).", &o.Timeout, "")
	return cmd
}

func target(v verb) string {
	if v.name == "stop" {
		return string(schedv1.UserDeploymentStopped)
	}
	return string(schedv1.UserDeploymentRunning)
}

// Complete reads the arguments and builds the clients.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	o.Name = args[0]
	if len(args) > 1 {
		o.Service = args[1]
	}
	return o.ClientOptions.Complete(cmd, args)
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if err := cmdutil.ValidateDryRun(o.DryRun); err != nil {
		return err
	}
	return cmdutil.ValidateWait(o.Wait, o.Timeout, o.DryRun)
}

// Run patches the app and, with --wait, follows it.
func (o *Options) Run(ctx context.Context) error {
	c, ns := o.Clients.Client, o.Clients.Namespace
	ud := &schedv1.UserDeployment{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: o.Name}, ud); err != nil {
		return cmdutil.API(err, "get", udKind.What(ns, o.Name))
	}
	ref := udKind.Qualified() + "/" + o.Name
	patch, err := o.patch(ud)
	if err != nil {
		return err
	}
	if patch == nil {
		fmt.Fprintf(o.Out, "%s is already %s: nothing to do\n", ref, strings.ToLower(target(o.verb)))
	} else {
		if err := o.Clients.MergePatch(ctx, ud, patch, o.DryRun); err != nil {
			return cmdutil.API(err, "patch", udKind.What(ns, o.Name))
		}
		what := ref
		if o.Service != "" {
			what += " service " + o.Service
		}
		fmt.Fprintf(o.Out, "%s %s%s\n", what, o.verb.done, cmdutil.DryRunSuffix(o.DryRun))
	}
	if !o.Wait {
		return nil
	}
	return appwait.Wait(ctx, c, ud, o.Timeout, o.Out, o.nsFlag())
}

// patch is the merge patch for the verb, nil when the app already is as asked.
func (o *Options) patch(ud *schedv1.UserDeployment) ([]byte, error) {
	switch o.verb.name {
	case "stop", "start":
		want := schedv1.StateStopped
		if o.verb.name == "start" {
			want = schedv1.StateRunning
		}
		current := ud.Spec.State
		if current == "" {
			current = schedv1.StateRunning
		}
		if current == want {
			return nil, nil
		}
		return json.Marshal(map[string]any{"spec": map[string]any{"state": want}})
	}
	var services []string
	for _, s := range ud.Spec.Services {
		services = append(services, s.Name)
	}
	roll := services
	if o.Service != "" {
		if !slices.Contains(services, o.Service) {
			return nil, cmdutil.Errorf(cmdutil.ExitNotFound, fmt.Sprintf("Its services: %s.", strings.Join(services, ", ")),
				"userdeployment %q has no service %q", o.Name, o.Service)
		}
		roll = []string{o.Service}
	}
	at := o.Now().UTC().Format(time.RFC3339)
	restarted := map[string]string{}
	for _, s := range roll {
		restarted[s] = at
	}
	return json.Marshal(map[string]any{"spec": map[string]any{"restartedAt": restarted}})
}

func (o *Options) nsFlag() string {
	if o.Clients.ExplicitNamespace && o.Clients.Namespace != "" {
		return " -n " + o.Clients.Namespace
	}
	return ""
}
