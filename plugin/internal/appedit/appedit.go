// Package appedit changes part of an app's spec and keeps the rest: what
// `kubectl sched scale` and `kubectl sched set image|env` share. A change
// is applied with server-side apply as field manager kubectl-sched, the
// manager deploy applies the whole app as. An apply is the whole of what
// its manager wants, so the change is made to what kubectl-sched applied
// before (kube.Applied), never sent alone: alone it would remove every
// other field deploy set. The apply names the resourceVersion it started
// from, and starts again on a conflict, so a change made in between is
// not undone.
package appedit

import (
	"context"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/appwait"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

var udKind = kinds.UserDeployment

// Ref is how an app is named in what the commands print, as kubectl names
// objects: userdeployment.sched.kubectl-sched.dev/NAME.
func Ref(name string) string { return udKind.Qualified() + "/" + name }

// conflictRetries bounds how often a change starts again because the app
// changed between its read and its apply (the operator writes the status
// as the app rolls out).
const conflictRetries = 10

// Options are what every command that changes an app takes: the app's
// name, --dry-run, -o, --show-managed-fields, --wait and --timeout.
type Options struct {
	kube.ClientOptions
	Name        string
	DryRun      string
	Output      string
	ShowManaged bool
	Wait        bool
	Timeout     time.Duration

	print *genericclioptions.PrintFlags
}

// AddFlags registers the flags.
func (o *Options) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"client" prints the app as it would be and changes nothing; "server" has the API server check the change without making it.`)
	f.StringVarP(&o.Output, "output", "o", "", "Print the changed UserDeployment: json, yaml or name. Other messages then go to stderr.")
	f.BoolVar(&o.ShowManaged, "show-managed-fields", false, "Keep managedFields when printing with -o json or yaml.")
	o.Timeout = 5 * time.Minute
	cmdutil.AddWaitFlags(cmd, &o.Wait, "Follow the app until it is Running again (exit 0) or Degraded (exit 10).", &o.Timeout, "")
}

// Complete reads the app's name (the first argument) and builds the
// clients.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	o.Name = args[0]
	o.print = genericclioptions.NewPrintFlags("").WithTypeSetter(kube.Scheme)
	o.print.OutputFormat = &o.Output
	o.print.JSONYamlPrintFlags.ShowManagedFields = o.ShowManaged
	return o.ClientOptions.Complete(cmd, args)
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if err := cmdutil.ValidateDryRun(o.DryRun); err != nil {
		return err
	}
	if o.Output != "" {
		if _, err := o.print.ToPrinter(); err != nil {
			return cmdutil.Usage("Use -o json, -o yaml or -o name.", "%v", err)
		}
	}
	return cmdutil.ValidateWait(o.Wait, o.Timeout, o.DryRun)
}

// App is an app as read for a change.
type App struct {
	// UD is the app as the API server has it.
	UD *schedv1.UserDeployment

	live    *unstructured.Unstructured
	applied *unstructured.Unstructured
}

// ServiceNames are the app's services, in its order.
func (a *App) ServiceNames() []string {
	names := make([]string, 0, len(a.UD.Spec.Services))
	for _, s := range a.UD.Spec.Services {
		names = append(names, s.Name)
	}
	return names
}

// Service resolves a SERVICE argument: one of the app's services, or,
// when empty, its only one.
func (a *App) Service(name string) (string, error) {
	names := a.ServiceNames()
	switch {
	case name == "" && len(names) == 1:
		return names[0], nil
	case name == "":
		return "", cmdutil.Usage(fmt.Sprintf("Name one of its services: %s.", strings.Join(names, ", ")),
			"userdeployment %q has %d services: say which one", a.UD.Name, len(names))
	case !slices.Contains(names, name):
		return "", cmdutil.Errorf(cmdutil.ExitNotFound, fmt.Sprintf("Its services: %s.", strings.Join(names, ", ")),
			"userdeployment %q has no service %q", a.UD.Name, name)
	}
	return name, nil
}

// Managers are the field managers that set the field at path of service
// svc (see kube.Managers).
func (a *App) Managers(svc string, path ...kube.PathElement) []string {
	return kube.Managers(a.live, append([]kube.PathElement{kube.Field("spec"), kube.Field("services"), kube.Item("name", svc)}, path...)...)
}

// Edit changes one service, given as the API server has it (live) and as
// kubectl-sched applied it (applied: only its name when kubectl-sched set
// none of it). It makes the same change to both: live shows what the
// change does, applied is what is sent.
type Edit func(live, applied map[string]any) error

// Change reads the app, asks plan which services to change and how, and
// applies the change as kubectl-sched, as --dry-run says. It returns the
// app as it is after the change (as it would be, in a dry run), and
// whether the change changes anything: when not, nothing is sent. plan may
// run more than once, when the app changes under it.
func (o *Options) Change(ctx context.Context, plan func(*App) (map[string]Edit, error)) (*schedv1.UserDeployment, bool, error) {
	c, ns := o.Clients.Client, o.Clients.Namespace
	for attempt := 1; ; attempt++ {
		a, err := Get(ctx, c, ns, o.Name)
		if err != nil {
			return nil, false, err
		}
		edits, err := plan(a)
		if err != nil {
			return nil, false, err
		}
		after, send := a.live.DeepCopy(), a.applied.DeepCopy()
		for _, svc := range slices.Sorted(maps.Keys(edits)) {
			if err := edits[svc](service(after, svc, false), service(send, svc, true)); err != nil {
				return nil, false, err
			}
		}
		if reflect.DeepEqual(after.Object["spec"], a.live.Object["spec"]) {
			return a.UD, false, nil
		}
		if o.DryRun == "client" {
			ud, err := typed(after)
			return ud, true, err
		}
		// Only onto the app as read: a change made since would be undone.
		send.SetResourceVersion(a.live.GetResourceVersion())
		err = c.Patch(ctx, send, client.Apply, kube.PatchOptions(o.DryRun, client.ForceOwnership)...)
		if apierrors.IsConflict(err) && attempt < conflictRetries {
			continue
		}
		if err != nil {
			return nil, false, cmdutil.API(err, "patch", udKind.What(ns, o.Name))
		}
		ud, err := typed(send)
		return ud, true, err
	}
}

// Get reads app name in ns, with its managed fields. An app that does not
// exist is an error that lists those that do.
func Get(ctx context.Context, c client.Client, ns, name string) (*App, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(udKind.GVK())
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, live)
	if apierrors.IsNotFound(err) && !cmdutil.NotInstalled(err) {
		return nil, notFound(ctx, c, ns, name, err)
	}
	if err != nil {
		return nil, cmdutil.API(err, "get", udKind.What(ns, name))
	}
	ud, err := typed(live)
	if err != nil {
		return nil, err
	}
	applied, err := kube.Applied(live, kube.FieldManager)
	if err != nil {
		return nil, err
	}
	return &App{UD: ud, live: live, applied: applied}, nil
}

// notFound says which apps the namespace has, when it may list them.
func notFound(ctx context.Context, c client.Client, ns, name string, cause error) error {
	hint := "Check the name and the namespace (-n); 'kubectl sched get ud' lists the apps."
	list := &schedv1.UserDeploymentList{}
	if c.List(ctx, list, client.InNamespace(ns)) == nil {
		names := make([]string, 0, len(list.Items))
		for _, ud := range list.Items {
			names = append(names, ud.Name)
		}
		switch {
		case len(names) == 0:
			hint = fmt.Sprintf("Namespace %s has no apps; 'kubectl sched deploy NAME --image IMAGE' makes one, and -n picks another namespace.", ns)
		default:
			hint = fmt.Sprintf("Apps in namespace %s: %s.", ns, strings.Join(names, ", "))
		}
	}
	return &cmdutil.Error{Code: cmdutil.ExitNotFound, Err: cause, Hint: hint,
		Msg: fmt.Sprintf("userdeployment %q not found in namespace %q", name, ns)}
}

// service is the map of service name in obj's spec.services; with add, an
// item holding only its name is added when there is none.
func service(obj *unstructured.Unstructured, name string, add bool) map[string]any {
	spec, _ := obj.Object["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		obj.Object["spec"] = spec
	}
	list, _ := spec["services"].([]any)
	for _, item := range list {
		if m, ok := item.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	m := map[string]any{"name": name}
	if add {
		spec["services"] = append(list, m)
	}
	return m
}

func typed(u *unstructured.Unstructured) (*schedv1.UserDeployment, error) {
	ud := &schedv1.UserDeployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ud); err != nil {
		return nil, fmt.Errorf("userdeployment %s: %w", u.GetName(), err)
	}
	ud.SetGroupVersionKind(udKind.GVK())
	return ud, nil
}

// MsgOut is where messages go: stdout, unless stdout carries the object
// (-o).
func (o *Options) MsgOut() io.Writer {
	if o.Output != "" {
		return o.ErrOut
	}
	return o.Out
}

// Report prints the app with -o, as kubectl does, else lines, each with
// the dry run's suffix; then, with --wait, follows the app.
func (o *Options) Report(ctx context.Context, ud *schedv1.UserDeployment, lines ...string) error {
	if o.Output == "" {
		for _, l := range lines {
			fmt.Fprintf(o.Out, "%s%s\n", l, cmdutil.DryRunSuffix(o.DryRun))
		}
	} else {
		p, err := o.print.ToPrinter()
		if err != nil {
			return err
		}
		if err := printing.SafePrinter(p).PrintObj(ud, o.Out); err != nil {
			return err
		}
	}
	if !o.Wait {
		return nil
	}
	return appwait.Wait(ctx, o.Clients.Client, ud, o.Timeout, o.MsgOut(), o.NSFlag())
}

// NSFlag is " -n NS" when the user named the namespace, for hints.
func (o *Options) NSFlag() string {
	if o.Clients.ExplicitNamespace && o.Clients.Namespace != "" {
		return " -n " + o.Clients.Namespace
	}
	return ""
}
