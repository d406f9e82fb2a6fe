package template

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/templates"
)

// AnnotationSource is added to templates printed by `template list -o
// json|yaml`, to say where each was found.
const AnnotationSource = "templates.kubectl-sched.dev/source"

// ListOptions for `kubectl sched template list`.
type ListOptions struct {
	common
	Print *printing.Flags
}

func newListCommand(c kube.ClientOptions) *cobra.Command {
	o := &ListOptions{common: common{ClientOptions: c}, Print: printing.NewFlags()}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the templates: name, kind made, where each comes from; then the WorkflowTemplates and ClusterWorkflowTemplates",
		Example: `  kubectl sched template list
  kubectl sched template list --template-dir ./templates -o wide
  kubectl sched template list -o name`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(o),
	}
	o.addFlags(cmd)
	o.Print.AddFlags(cmd, true)
	return cmd
}

// Validate checks the output format before anything is read.
func (o *ListOptions) Validate() error {
	return o.Print.Validate("Use -o json, yaml, name or wide.")
}

// Run lists the templates.
func (o *ListOptions) Run(ctx context.Context) error {
	o.open()
	ts, err := o.source.List(ctx)
	if err != nil {
		return err
	}
	if o.Print.IsTable() {
		return o.printTable(ts, o.listByRef(ctx))
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
	for _, t := range ts {
		u, err := asObject(t)
		if err != nil {
			return err
		}
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[AnnotationSource] = t.Source
		u.SetAnnotations(ann)
		list.Items = append(list.Items, *u)
	}
	return o.Print.Print(list, o.Out)
}

// asObject is the template as written, as an object cli-runtime printers
// accept.
func asObject(t *templates.Template) (*unstructured.Unstructured, error) {
	var m map[string]any
	if err := yaml.Unmarshal(t.Raw, &m); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// printTable prints the templates as kubectl get would, then the
// WorkflowTemplates and ClusterWorkflowTemplates (run with --from, not
// rendered); -o wide adds the parameters, the required ones marked with *.
func (o *ListOptions) printTable(ts []*templates.Template, refs []byRef) error {
	if len(ts)+len(refs) == 0 {
		return nil
	}
	wide := o.Print.IsWide()
	t := printing.NewTableWriter(o.Out, printing.GetStyle)
	if !o.Print.NoHeaders {
		header := []string{"NAME", "KIND", "SOURCE", "DESCRIPTION"}
		if wide {
			header = append(header, "PARAMETERS")
		}
		t.Header(header...)
	}
	for _, tmpl := range ts {
		row := []string{tmpl.Name(), tmpl.ObjectKind(), tmpl.Source, tmpl.Description}
		if wide {
			var params []string
			for _, p := range tmpl.Parameters {
				if p.Required {
					params = append(params, p.Name+"*")
				} else {
					params = append(params, p.Name)
				}
			}
			row = append(row, strings.Join(params, ","))
		}
		t.Row(row...)
	}
	for _, r := range refs {
		t.Row(r.row(wide)...)
	}
	return t.Render()
}
