// Package delete implements `kubectl sched delete`, with kubectl delete's
// output and flags.
package delete

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/waitfor"
)

const examples = `  # Delete a task (its Job and pods go with it)
  kubectl sched delete at hello

  # Delete two workflows and wait until they are gone
  kubectl sched delete wf nightly weekly --wait

  # Delete every task in the namespace with a label
  kubectl sched delete at -l team=web

  # See what would be deleted
  kubectl sched delete ud --all --dry-run=server`

// Options for `kubectl sched delete`.
type Options struct {
	kube.ClientOptions

	All            bool
	AllNamespaces  bool
	Selector       string
	Wait           bool
	Timeout        time.Duration
	DryRun         string
	Cascade        string
	IgnoreNotFound bool

	targets []kinds.Target
	meta    metadata.Interface
}

// NewCommand returns `kubectl sched delete`.
func NewCommand(c kube.ClientOptions) *cobra.Command {
	o := &Options{ClientOptions: c, Timeout: 5 * time.Minute, Cascade: "background"}
	cmd := &cobra.Command{
		Use:   "delete KIND (NAME... | --all | -l SELECTOR)",
		Short: "Delete UserDeployments, AgentTasks, Workflows, CronWorkflows or SchedExts",
		Long: `Delete kubectl-sched objects by name, by label or all of a kind. The objects the
operator created for them (Jobs, pods, Deployments, step tasks, DaemonSets) are
deleted with them by the garbage collector.`,
		Example:           examples,
		ValidArgsFunction: o.CompleteKindsAndNames(),
		RunE:              cmdutil.RunE(o),
	}
	f := cmd.Flags()
	f.BoolVar(&o.All, "all", false, "Delete every object of the kind in the namespace.")
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "With --all or -l, delete in every namespace.")
	f.StringVarP(&o.Selector, "selector", "l", "", "Delete the objects with these labels, e.g. -l key=value.")
	cmdutil.AddWaitFlags(cmd, &o.Wait, "Wait until the objects are gone.", &o.Timeout, "")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"client" prints what would be deleted; "server" also has the API server check it.`)
	f.StringVar(&o.Cascade, "cascade", o.Cascade, `"background", "foreground" (wait for dependents first) or "orphan" (keep them).`)
	f.BoolVar(&o.IgnoreNotFound, "ignore-not-found", false, "Succeed when a named object does not exist.")
	return cmd
}

// Complete parses the arguments and builds the clients.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	var err error
	if o.targets, err = kinds.ParseArgs(args, false); err != nil {
		return err
	}
	if err = o.ClientOptions.Complete(cmd, args); err != nil {
		return err
	}
	o.meta = o.Clients.Metadata
	return nil
}

// Validate checks that the objects are named one way only.
func (o *Options) Validate() error {
	if err := cmdutil.ValidateDryRun(o.DryRun); err != nil {
		return err
	}
	switch o.Cascade {
	case "background", "foreground", "orphan":
	default:
		return cmdutil.Usage("Use --cascade=background, foreground or orphan.", "bad --cascade %q", o.Cascade)
	}
	if o.Selector != "" {
		if _, err := labels.Parse(o.Selector); err != nil {
			return cmdutil.Usage("A selector looks like key=value,key2!=value2.", "bad --selector: %v", err)
		}
	}
	named := false
	for _, t := range o.targets {
		named = named || len(t.Names) > 0
	}
	switch {
	case named && (o.All || o.Selector != ""):
		return cmdutil.Usage("Give names, --all or -l, not several.", "names cannot be combined with --all or --selector")
	case !named && !o.All && o.Selector == "":
		return cmdutil.Usage("Name the objects, or use --all or -l to delete several.", "name what to delete")
	case o.AllNamespaces && named:
		return cmdutil.Usage("Use -n NAMESPACE to delete by name in another namespace.", "--all-namespaces needs --all or -l")
	}
	return nil
}

// victim is one object to delete.
type victim struct {
	kind      kinds.Kind
	namespace string
	name      string
	uid       types.UID
}

// Run deletes each object and prints a line for it; not-found names are
// reported at the end (exit code 6) after the others are deleted.
func (o *Options) Run(ctx context.Context) error {
	var errs []error
	var deleted []victim
	for _, t := range o.targets {
		victims, err := o.victims(ctx, t)
		if err != nil {
			return err
		}
		if len(victims) == 0 && len(t.Names) == 0 {
			printing.NoResources(o.ErrOut, t.Kind.ListNamespace(o.Clients.Namespace, o.AllNamespaces))
		}
		for _, v := range victims {
			uid, err := o.delete(ctx, v)
			if err != nil {
				err = cmdutil.API(err, "delete", v.kind.What(v.namespace, v.name))
				if cmdutil.ExitCode(err) == cmdutil.ExitNotFound {
					if !o.IgnoreNotFound {
						errs = append(errs, err)
					}
					continue
				}
				return errors.Join(append(errs, err)...)
			}
			v.uid = uid
			fmt.Fprintf(o.Out, "%s %q deleted%s\n", v.kind.Qualified(), v.name, cmdutil.DryRunSuffix(o.DryRun))
			deleted = append(deleted, v)
		}
	}
	if o.Wait && o.DryRun == "" {
		for _, v := range deleted {
			if err := o.waitGone(ctx, v); err != nil {
				return err
			}
		}
	}
	return errors.Join(errs...)
}

// victims are the named objects, or the kind's objects that --all or -l select.
func (o *Options) victims(ctx context.Context, t kinds.Target) ([]victim, error) {
	ns := o.Clients.Namespace
	if !t.Kind.Namespaced {
		ns = ""
	}
	if len(t.Names) > 0 {
		out := make([]victim, 0, len(t.Names))
		for _, n := range t.Names {
			out = append(out, victim{kind: t.Kind, namespace: ns, name: n})
		}
		return out, nil
	}
	if o.AllNamespaces {
		ns = ""
	}
	list, err := o.meta.Resource(t.Kind.GVR()).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: o.Selector})
	if err != nil {
		return nil, cmdutil.API(err, "list", t.Kind.What(ns, ""))
	}
	out := make([]victim, 0, len(list.Items))
	for _, item := range list.Items {
		out = append(out, victim{kind: t.Kind, namespace: item.Namespace, name: item.Name, uid: item.UID})
	}
	return out, nil
}

// delete deletes v (or, for --dry-run=client, checks that it exists) and
// returns the UID of what was deleted, for --wait.
func (o *Options) delete(ctx context.Context, v victim) (types.UID, error) {
	res := o.meta.Resource(v.kind.GVR()).Namespace(v.namespace)
	if o.DryRun == "client" {
		m, err := res.Get(ctx, v.name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return m.UID, nil
	}
	policy := map[string]metav1.DeletionPropagation{
		"background": metav1.DeletePropagationBackground,
		"foreground": metav1.DeletePropagationForeground,
		"orphan":     metav1.DeletePropagationOrphan,
	}[o.Cascade]
	opts := metav1.DeleteOptions{PropagationPolicy: &policy}
	if v.uid != "" {
		// Selected by a list: delete that object, not a newer one of the same name.
		opts.Preconditions = &metav1.Preconditions{UID: &v.uid}
	}
	if o.DryRun == "server" {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if err := res.Delete(ctx, v.name, opts); err != nil {
		return "", err
	}
	if v.uid != "" {
		return v.uid, nil
	}
	// Delete returns no object; a Get tells which UID to wait for.
	// Already gone (or unreadable): --wait then only checks the name.
	if m, err := res.Get(ctx, v.name, metav1.GetOptions{}); err == nil {
		return m.UID, nil
	}
	return "", nil
}

// waitGone waits until v's object (by UID) no longer exists, from watch
// events as the other waits do.
func (o *Options) waitGone(ctx context.Context, v victim) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	obj := v.kind.New()
	obj.SetNamespace(v.namespace)
	obj.SetName(v.name)
	err := waitfor.Object(ctx, o.Clients.Client, obj, v.kind.NewList(), func(cur client.Object) (bool, error) {
		// Another object of the same name: ours is gone.
		return v.uid != "" && cur.GetUID() != v.uid, nil
	})
	switch {
	case err == nil, errors.Is(err, waitfor.ErrDeleted), apierrors.IsNotFound(err):
		return nil
	case ctx.Err() != nil:
		return o.timedOut(v)
	}
	return cmdutil.API(err, "watch", v.kind.What(v.namespace, v.name))
}

func (o *Options) timedOut(v victim) error {
	return cmdutil.Errorf(cmdutil.ExitWatchTimeout,
		fmt.Sprintf("Its finalizers may be waiting for the operator; 'kubectl sched describe %s %s' shows it.", v.kind.Short, v.name),
		"timed out after %s waiting for %s to be deleted", o.Timeout, v.kind.What(v.namespace, v.name))
}
