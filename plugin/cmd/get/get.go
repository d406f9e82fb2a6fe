// Package get implements `kubectl sched get`: the kinds listed as
// kubectl lists them, with tables the API server builds from the CRDs'
// printer columns. KIND arguments are resolved by plugin/internal/kinds.
package get

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

const examples = `  # Everything kubectl sched manages in the current namespace
  kubectl sched get

  # Agent tasks in every namespace, with the image and Job columns
  kubectl sched get at -A -o wide

  # One workflow as YAML
  kubectl sched get workflow nightly -o yaml

  # Apps with a label, names only
  kubectl sched get ud -l team=web -o name

  # Follow tasks as they change (Ctrl-C stops)
  kubectl sched get agenttasks -w`

// Options for `kubectl sched get`.
type Options struct {
	kube.ClientOptions
	Print *printing.Flags

	AllNamespaces     bool
	Selector          string
	Watch             bool
	WatchOnly         bool
	OutputWatchEvents bool
	ShowKind          bool
	ShowLabels        bool
	LabelColumns      []string
	IgnoreNotFound    bool

	targets   []kinds.Target
	namespace string
	// watchFor bounds a watch (--request-timeout); 0 is until Ctrl-C.
	watchFor time.Duration
	// everyKind is a listing of all kinds (no KIND, or "all").
	everyKind bool
}

// NewCommand returns `kubectl sched get`.
func NewCommand(c kube.ClientOptions) *cobra.Command {
	o := &Options{ClientOptions: c, Print: printing.NewFlags()}
	cmd := &cobra.Command{
		Use:   "get [KIND [NAME...]]",
		Short: "List UserDeployments, AgentTasks, Workflows, CronWorkflows, workflow templates and SchedExts",
		Long: `List kubectl-sched objects as kubectl get does. KIND is a kind, its plural or
its short name: userdeployment (ud), agenttask (at), workflow (wf),
cronworkflow (cwf), workflowtemplate (wft), clusterworkflowtemplate (cwft),
schedext (scx), several separated by commas, or "all". With no KIND every
kind is listed, each name prefixed with its kind. ClusterWorkflowTemplates
and SchedExts are cluster-scoped: -n and -A do not apply.`,
		Example:           examples,
		ValidArgsFunction: o.CompleteKindsAndNames(),
		RunE:              cmdutil.RunE(o),
	}
	f := cmd.Flags()
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List across all namespaces.")
	f.StringVarP(&o.Selector, "selector", "l", "", "Label selector to filter on, e.g. -l key=value,key2!=value2.")
	f.BoolVarP(&o.Watch, "watch", "w", false, "After listing, print a row each time an object changes. Ctrl-C (or --request-timeout) stops.")
	f.BoolVar(&o.WatchOnly, "watch-only", false, "Print only changes, not the current list.")
	f.BoolVar(&o.OutputWatchEvents, "output-watch-events", false, "With --watch, add an EVENT column (ADDED, MODIFIED, DELETED).")
	f.BoolVar(&o.ShowKind, "show-kind", false, "Prefix names with their kind even for one kind.")
	f.BoolVar(&o.ShowLabels, "show-labels", false, "Add a LABELS column.")
	f.StringSliceVarP(&o.LabelColumns, "label-columns", "L", nil, "Add a column for each of these label keys.")
	f.BoolVar(&o.IgnoreNotFound, "ignore-not-found", false, "Print nothing, and succeed, when a named object does not exist.")
	o.Print.AddFlags(cmd, true)
	return cmd
}

// Complete parses the arguments and builds the clients.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	var err error
	if o.targets, err = kinds.ParseArgs(args, true); err != nil {
		return err
	}
	o.everyKind = len(args) == 0 || len(args) == 1 && strings.EqualFold(args[0], "all")
	if err = o.ClientOptions.Complete(cmd, args); err != nil {
		return err
	}
	o.namespace = o.Clients.Namespace
	if o.AllNamespaces {
		o.namespace = ""
	}
	if t := o.Flags.Timeout; t != nil && *t != "" && *t != "0" {
		if o.watchFor, err = time.ParseDuration(*t); err != nil {
			return cmdutil.Usage("Use a duration such as 30s.", "--request-timeout %q is not a duration", *t)
		}
	}
	return nil
}

// Validate checks the flags against each other.
func (o *Options) Validate() error {
	if err := o.Print.Validate("Use -o wide, json, yaml, name, jsonpath=..., go-template=...."); err != nil {
		return err
	}
	if o.Selector != "" {
		if _, err := labels.Parse(o.Selector); err != nil {
			return cmdutil.Usage("A selector looks like key=value,key2!=value2.", "bad --selector: %v", err)
		}
		for _, t := range o.targets {
			if len(t.Names) > 0 {
				return cmdutil.Usage("Drop the names or the selector.", "names cannot be given with --selector")
			}
		}
	}
	if o.Watch || o.WatchOnly {
		if len(o.targets) != 1 {
			return cmdutil.Usage("Name one KIND to watch, e.g. kubectl sched get at -w.", "--watch needs a single kind")
		}
		if len(o.targets[0].Names) > 1 {
			return cmdutil.Usage("Watch one name, or all with no name.", "--watch takes at most one name")
		}
	}
	return nil
}

// Run prints the objects, then follows them with --watch.
func (o *Options) Run(ctx context.Context) error {
	if o.Watch || o.WatchOnly {
		return o.watch(ctx)
	}
	multi := len(o.targets) > 1
	var (
		errs    []error
		objects []runtime.Object
		// single is one named object: -o json prints it, not a List.
		single   = len(o.targets) == 1 && len(o.targets[0].Names) == 1
		anyTable bool
		// skipped is the first kind the user may not list, when listing
		// all; nSkipped counts those of the namespaced kinds.
		skipped  error
		nSkipped int
	)
	for _, t := range o.targets {
		table, err := o.tableFor(ctx, t, &errs)
		if err != nil && o.everyKind && cmdutil.ExitCode(err) == cmdutil.ExitForbidden {
			// A user with rights in one namespace may not list the
			// cluster-scoped SchedExts: show what they may see.
			fmt.Fprintf(o.ErrOut, "Warning: %s; skipped.\n", printing.Line(strings.SplitN(err.Error(), "\n", 2)[0]))
			if skipped == nil {
				skipped = err
			}
			if t.Kind.Namespaced {
				nSkipped++
			}
			continue
		}
		if err != nil {
			return err
		}
		if table == nil || len(table.Rows) == 0 {
			continue
		}
		if !o.Print.IsTable() {
			for _, u := range rowObjects(table) {
				objects = append(objects, u)
			}
			continue
		}
		// A blank line between kinds, as kubectl get all prints them.
		if anyTable && !o.Print.NoHeaders {
			fmt.Fprintln(o.Out)
		}
		if err := o.tablePrinter(t.Kind, multi).PrintObj(table, o.Out); err != nil {
			return err
		}
		anyTable = true
	}
	switch {
	case nSkipped > 0 && nSkipped == namespaced(o.targets):
		// None of the namespace's kinds: a user of another namespace is
		// refused, though every user may read ClusterWorkflowTemplates.
		return skipped
	case !o.Print.IsTable() && o.named() && len(objects) == 0:
		// Named objects that do not exist print nothing, as in kubectl.
	case !o.Print.IsTable():
		if err := o.printObjects(objects, single && len(errs) == 0); err != nil {
			return err
		}
	case !anyTable && len(errs) == 0 && !o.named():
		printing.NoResources(o.ErrOut, o.noResourcesNamespace())
	}
	return errors.Join(errs...)
}

// tableFor lists t, or gets each of its names and merges them into one
// table. Not-found names go to errs so the others still print.
func (o *Options) tableFor(ctx context.Context, t kinds.Target, errs *[]error) (*metav1.Table, error) {
	if len(t.Names) == 0 {
		table, err := fetchTable(ctx, o.Clients.Config, t.Kind, o.namespace, "", o.Selector)
		if err != nil {
			return nil, cmdutil.API(err, "list", t.Kind.What(o.namespace, ""))
		}
		return table, nil
	}
	var merged *metav1.Table
	for _, name := range t.Names {
		table, err := fetchTable(ctx, o.Clients.Config, t.Kind, o.Clients.Namespace, name, "")
		if err != nil {
			err = cmdutil.API(err, "get", t.Kind.What(o.Clients.Namespace, name))
			if cmdutil.ExitCode(err) != cmdutil.ExitNotFound {
				return nil, err
			}
			if !o.IgnoreNotFound {
				*errs = append(*errs, err)
			}
			continue
		}
		if merged == nil {
			merged = table
		} else {
			merged.Rows = append(merged.Rows, table.Rows...)
		}
	}
	return merged, nil
}

func (o *Options) named() bool {
	for _, t := range o.targets {
		if len(t.Names) > 0 {
			return true
		}
	}
	return false
}

// noResourcesNamespace is the namespace kubectl names in "No resources
// found in NS namespace.": none across namespaces or for SchedExts alone.
func (o *Options) noResourcesNamespace() string {
	for _, t := range o.targets {
		if t.Kind.Namespaced {
			return o.namespace
		}
	}
	return ""
}

func (o *Options) tablePrinter(k kinds.Kind, multi bool) printers.ResourcePrinter {
	return printers.NewTablePrinter(printers.PrintOptions{
		Wide:          *o.Print.OutputFormat == "wide",
		NoHeaders:     o.Print.NoHeaders,
		WithNamespace: o.AllNamespaces && k.Namespaced,
		WithKind:      multi || o.ShowKind,
		Kind:          k.GroupKind(),
		ShowLabels:    o.ShowLabels,
		ColumnLabels:  o.LabelColumns,
	})
}

// printObjects prints for -o json|yaml|name|jsonpath|go-template: one
// named object as itself, anything else as a v1 List, as kubectl does.
func (o *Options) printObjects(objects []runtime.Object, single bool) error {
	if single && len(objects) == 1 {
		return o.Print.Print(objects[0], o.Out)
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{
		"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""},
	}}
	for _, obj := range objects {
		list.Items = append(list.Items, *obj.(*unstructured.Unstructured))
	}
	return o.Print.Print(list, o.Out)
}

// watch prints the current objects (unless --watch-only) and then a row
// per change, like kubectl get -w. It ends without error when ctx ends,
// --request-timeout passes or the server closes the watch.
func (o *Options) watch(ctx context.Context) error {
	t := o.targets[0]
	name := ""
	ns := o.namespace
	if len(t.Names) == 1 {
		name, ns = t.Names[0], o.Clients.Namespace
	}
	if o.watchFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.watchFor)
		defer cancel()
	}
	table, err := fetchTable(ctx, o.Clients.Config, t.Kind, ns, name, o.Selector)
	if err != nil {
		verb := "list"
		if name != "" {
			verb = "get"
		}
		return cmdutil.API(err, verb, t.Kind.What(ns, name))
	}
	rv := table.ResourceVersion
	if name != "" && len(table.Rows) == 1 {
		if u, ok := table.Rows[0].Object.Object.(*unstructured.Unstructured); ok {
			rv = u.GetResourceVersion()
		}
	}
	// One tabwriter that remembers widths keeps later rows under the header.
	w := printers.GetNewTabWriter(o.Out)
	defer w.Flush()
	printer := o.tablePrinter(t.Kind, o.ShowKind)
	print := func(eventType watch.EventType, table *metav1.Table) error {
		if !o.Print.IsTable() {
			for _, u := range rowObjects(table) {
				if err := o.Print.Print(u, o.Out); err != nil {
					return err
				}
			}
			return nil
		}
		var obj runtime.Object = table
		if o.OutputWatchEvents && eventType != "" {
			obj = &metav1.WatchEvent{Type: string(eventType), Object: runtime.RawExtension{Object: table}}
		}
		if err := printer.PrintObj(obj, w); err != nil {
			return err
		}
		return w.Flush()
	}
	if !o.WatchOnly {
		if len(table.Rows) == 0 && o.Print.IsTable() {
			printing.NoResources(o.ErrOut, t.Kind.ListNamespace(o.namespace, o.AllNamespaces))
		} else {
			eventType := watch.EventType("")
			if o.OutputWatchEvents {
				eventType = watch.Added
			}
			if err := print(eventType, table); err != nil {
				return err
			}
		}
	}
	err = watchTables(ctx, o.Clients.Config, t.Kind, ns, name, o.Selector, rv, o.watchFor, func(ev tableEvent) error {
		return print(ev.Type, ev.Table)
	})
	if err != nil && ctx.Err() == nil {
		return cmdutil.API(err, "watch", t.Kind.What(ns, name))
	}
	return nil
}

// namespaced counts the targets of namespaced kinds.
func namespaced(targets []kinds.Target) int {
	n := 0
	for _, t := range targets {
		if t.Kind.Namespaced {
			n++
		}
	}
	return n
}
