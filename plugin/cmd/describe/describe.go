// Package describe implements `kubectl sched describe`: one object's state
// in words, the objects the operator made for it and its recent events,
// laid out as kubectl describe lays them out.
package describe

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

const examples = `  # A task's phase, outputs, Job, pods and events
  kubectl sched describe at hello

  # A workflow's steps and their tasks
  kubectl sched describe workflow/nightly

  # A schedule: its last and next runs, and every run kept
  kubectl sched describe cwf nightly

  # Every app in the namespace with a label
  kubectl sched describe ud -l team=web`

// Options for `kubectl sched describe`.
type Options struct {
	kube.ClientOptions

	Selector           string
	AllNamespaces      bool
	ShowEvents         bool
	SchedulerNamespace string

	targets []kinds.Target
}

// NewCommand returns `kubectl sched describe`.
func NewCommand(c kube.ClientOptions) *cobra.Command {
	o := &Options{ClientOptions: c, ShowEvents: true, SchedulerNamespace: schedv1.DefaultSchedulerNamespace}
	cmd := &cobra.Command{
		Use:   "describe KIND [NAME...]",
		Short: "Show an object's status, conditions, the objects it owns and its events",
		Long: `Describe UserDeployments, AgentTasks, Workflows, CronWorkflows and SchedExts:
status in words, conditions, the Jobs, pods, Deployments, Services, Ingresses,
step tasks or runs the operator created for them, and their recent events
(oldest first). With no NAME,
every object of the kind (matching -l) is described. Secrets are shown as
references, never values.`,
		Example:           examples,
		ValidArgsFunction: o.CompleteKindsAndNames(),
		RunE:              cmdutil.RunE(o),
	}
	f := cmd.Flags()
	f.StringVarP(&o.Selector, "selector", "l", "", "Describe the objects with these labels, e.g. -l key=value.")
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "With no NAME, describe matching objects in every namespace.")
	f.BoolVar(&o.ShowEvents, "show-events", o.ShowEvents, "Show the object's events.")
	f.StringVar(&o.SchedulerNamespace, "scheduler-namespace", o.SchedulerNamespace, "Namespace of the SchedExt DaemonSets (the operator's --scheduler-namespace).")
	return cmd
}

// Complete parses the arguments and builds the clients.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	var err error
	if o.targets, err = kinds.ParseArgs(args, false); err != nil {
		return err
	}
	return o.ClientOptions.Complete(cmd, args)
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if o.Selector == "" {
		return nil
	}
	if _, err := labels.Parse(o.Selector); err != nil {
		return cmdutil.Usage("A selector looks like key=value,key2!=value2.", "bad --selector: %v", err)
	}
	for _, t := range o.targets {
		if len(t.Names) > 0 {
			return cmdutil.Usage("Drop the names or the selector.", "names cannot be given with --selector")
		}
	}
	return nil
}

// Run describes each object, separated by a blank line.
func (o *Options) Run(ctx context.Context) error {
	first := true
	var errs []error
	for _, t := range o.targets {
		keys, err := o.keys(ctx, t)
		if err != nil {
			return err
		}
		if len(keys) == 0 && len(t.Names) == 0 {
			printing.NoResources(o.ErrOut, t.Kind.ListNamespace(o.Clients.Namespace, o.AllNamespaces))
		}
		for _, key := range keys {
			var buf bytes.Buffer
			if err := o.describe(ctx, t.Kind, key, &buf); err != nil {
				// As kubectl: a missing name does not stop the others.
				if cmdutil.ExitCode(err) == cmdutil.ExitNotFound {
					errs = append(errs, err)
					continue
				}
				return err
			}
			if !first {
				fmt.Fprintln(o.Out)
			}
			first = false
			if _, err := buf.WriteTo(o.Out); err != nil {
				return err
			}
		}
	}
	return errors.Join(errs...)
}

// keys are the objects to describe: the names given, or every object of
// the kind that matches the selector.
func (o *Options) keys(ctx context.Context, t kinds.Target) ([]client.ObjectKey, error) {
	ns := o.Clients.Namespace
	if !t.Kind.Namespaced {
		ns = ""
	}
	if len(t.Names) > 0 {
		keys := make([]client.ObjectKey, 0, len(t.Names))
		for _, n := range t.Names {
			keys = append(keys, client.ObjectKey{Namespace: ns, Name: n})
		}
		return keys, nil
	}
	if o.AllNamespaces {
		ns = ""
	}
	list, err := o.Clients.Metadata.Resource(t.Kind.GVR()).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: o.Selector})
	if err != nil {
		return nil, cmdutil.API(err, "list", t.Kind.What(ns, ""))
	}
	keys := make([]client.ObjectKey, 0, len(list.Items))
	for _, item := range list.Items {
		keys = append(keys, client.ObjectKey{Namespace: item.Namespace, Name: item.Name})
	}
	return keys, nil
}

func (o *Options) describe(ctx context.Context, k kinds.Kind, key client.ObjectKey, buf *bytes.Buffer) error {
	obj := k.New()
	if err := o.Clients.Client.Get(ctx, key, obj); err != nil {
		return cmdutil.API(err, "get", k.What(key.Namespace, key.Name))
	}
	d := &describer{ctx: ctx, clients: o.Clients, kind: k, schedulerNamespace: o.SchedulerNamespace}
	w := printing.NewDescribeWriter(buf)
	switch obj := obj.(type) {
	case *schedv1.UserDeployment:
		d.userDeployment(w, obj)
	case *schedv1.AgentTask:
		d.agentTask(w, obj)
	case *schedv1.Workflow:
		d.workflow(w, obj)
	case *schedv1.CronWorkflow:
		d.cronWorkflow(w, obj)
	case *schedv1.WorkflowTemplate:
		d.workflowTemplate(w, obj, schedv1.KindWorkflowTemplate, &obj.Spec)
	case *schedv1.ClusterWorkflowTemplate:
		d.workflowTemplate(w, obj, schedv1.KindClusterWorkflowTemplate, &obj.Spec)
	case *schedv1.SchedExt:
		d.schedExt(w, obj)
	}
	if o.ShowEvents {
		d.events(w, obj)
	}
	return w.Flush()
}
