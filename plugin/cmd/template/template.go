// Package template implements `kubectl sched template list|show|render`:
// the templates kubectl sched can render, where they come from, what
// parameters they take, and what they make.
package template

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/templates"
)

// NewCommand returns `kubectl sched template` and its subcommands.
func NewCommand(c kube.ClientOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "template",
		Aliases: []string{"templates", "tpl"},
		Short:   "List, show and render the templates deploy and workflow run use",
		Long: `Templates are parameterised kubectl-sched objects. A name is looked up in
folders given with --template-dir, then in ConfigMaps labelled
kubectl-sched.dev/template=true in kubectl-sched-system (the cluster's
shared templates), then in the catalog built into the plugin, and last in
such ConfigMaps in the current namespace. A namespace's template never takes
a name the cluster or the catalog has: it is ignored with a warning. Every
render, deploy and workflow run says on stderr where its template came from.`,
		Example: `  # What templates are there?
  kubectl sched template list

  # What does web-app take and make?
  kubectl sched template show web-app

  # Render a template of any kind and apply it with kubectl
  kubectl sched template render scx-lavd lavd --set nodes=node.kubectl-sched.dev/pool=batch | kubectl apply --server-side -f -`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	cmd.AddCommand(newListCommand(c), newShowCommand(c), newRenderCommand(c))
	return cmd
}

// common is what every subcommand needs to find templates.
type common struct {
	kube.ClientOptions
	Dirs []string

	source    *templates.Source
	namespace string
}

func (o *common) addFlags(cmd *cobra.Command) {
	templates.AddTemplateDirFlag(cmd.Flags(), &o.Dirs)
}

// Complete reads no arguments and builds no clients: Run opens the
// template source, after Validate, so that a usage error does not follow
// a warning about the cluster.
func (o *common) Complete(*cobra.Command, []string) error { return nil }

// open builds the template source. The cluster is optional here: these
// commands still show local and built-in templates without one, with a
// warning saying what was skipped.
func (o *common) open() {
	o.source = &templates.Source{Dirs: o.Dirs, TolerateUnreachable: true, Warn: o.warn}
	o.namespace = "default"
	c, err := o.NewClients(o.Flags)
	if err != nil {
		o.warn(fmt.Sprintf("not searching templates in the cluster: %v", err))
		return
	}
	o.source.Client, o.source.Namespace, o.namespace = c.Client, c.Namespace, c.Namespace
}

func (o *common) warn(msg string) {
	fmt.Fprintf(o.ErrOut, "warning: %s\n", printing.Line(msg))
}

func (o *common) get(ctx context.Context, ref string) (*templates.Template, error) {
	t, err := o.source.Get(ctx, ref)
	return t, templates.CommandError(err)
}
