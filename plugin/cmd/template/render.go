package template

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/templates"
)

// RenderOptions for `kubectl sched template render`.
type RenderOptions struct {
	common
	Ref, Name string
	Values    templates.ValueFlags
	Output    string
}

func newRenderCommand(c kube.ClientOptions) *cobra.Command {
	o := &RenderOptions{common: common{ClientOptions: c}}
	cmd := &cobra.Command{
		Use:   "render (TEMPLATE | PATH) NAME [--set NAME=VALUE]...",
		Short: "Print the object a template makes, without applying it",
		Long: `Render prints the object a template makes, named NAME, in the namespace of
-n or the kubeconfig. It contacts the cluster only to look for shared
templates. Secret values are never printed: the Secret that 'deploy' would
apply is left out, and a note on stderr says so.`,
		Example: `  kubectl sched template render agent-task hello --set script='echo "greeting=hi" > /dev/termination-log'
  kubectl sched template render scx-lavd lavd --set nodes=node.kubectl-sched.dev/pool=batch | kubectl apply --server-side -f -`,
		Args: cobra.ExactArgs(2),
		RunE: cmdutil.RunE(o),
	}
	o.addFlags(cmd)
	o.Values.AddFlags(cmd.Flags(), "f")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "yaml", "Output format: yaml or json.")
	return cmd
}

// Complete reads the template and the object's name.
func (o *RenderOptions) Complete(_ *cobra.Command, args []string) error {
	o.Ref, o.Name = args[0], args[1]
	return nil
}

// Validate checks the flags and the name.
func (o *RenderOptions) Validate() error {
	if o.Output != "yaml" && o.Output != "json" {
		return cmdutil.Usage("Use -o yaml or -o json.", "--output must be yaml or json, got %q", o.Output)
	}
	if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 {
		return cmdutil.Usage("Names are lower-case letters, digits and '-'.", "invalid name %q: %s", o.Name, strings.Join(errs, ", "))
	}
	return nil
}

// Run renders and prints the object.
func (o *RenderOptions) Run(ctx context.Context) error {
	o.open()
	params, secrets, err := o.Values.Values()
	if err != nil {
		return err
	}
	t, err := o.get(ctx, o.Ref)
	if err != nil {
		return err
	}
	obj, secret, err := t.Render(templates.Input{Name: o.Name, Namespace: o.namespace, Params: params, Secrets: secrets})
	if err != nil {
		return templates.CommandError(err)
	}
	var p printers.ResourcePrinter = &printers.YAMLPrinter{}
	if o.Output == "json" {
		p = &printers.JSONPrinter{}
	}
	p = printing.SafePrinter(p)
	// Status is the operator's to write: leave it out of what may be applied.
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	delete(m, "status")
	// Where the template came from, on stderr and, in YAML, in what may be
	// saved or piped to kubectl apply.
	templates.Announce(o.ErrOut, t)
	if o.Output == "yaml" {
		fmt.Fprintf(o.Out, "# Source: %s (template %s)\n", t.Origin(), t.Name())
	}
	if err := p.PrintObj(&unstructured.Unstructured{Object: m}, o.Out); err != nil {
		return err
	}
	if secret != nil {
		fmt.Fprintf(o.ErrOut, "note: Secret %q (keys %s) is not printed, as it holds secret values; 'kubectl sched deploy' applies it, or create it with 'kubectl create secret generic %s --from-file=KEY=PATH'.\n",
			secret.Name, strings.Join(keys(secret.Data), ", "), secret.Name)
	}
	return nil
}

func keys(m map[string][]byte) []string {
	return slices.Sorted(maps.Keys(m))
}
