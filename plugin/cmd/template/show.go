package template

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/templates"
)

// ShowOptions for `kubectl sched template show`.
type ShowOptions struct {
	common
	Ref    string
	Output string
}

func newShowCommand(c kube.ClientOptions) *cobra.Command {
	o := &ShowOptions{common: common{ClientOptions: c}}
	cmd := &cobra.Command{
		Use:     "show (NAME | PATH)",
		Aliases: []string{"describe"},
		Short:   "Show a template's parameters (description, default, required, secret) and the object it makes",
		Example: `  kubectl sched template show web-app
  kubectl sched template show ./my-template.yaml
  # The template as written, to copy and change
  kubectl sched template show api-postgres -o yaml > my-api.yaml`,
		Args: cmdutil.NameArg("template"),
		RunE: cmdutil.RunE(o),
	}
	o.addFlags(cmd)
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: yaml (the template as written) or json.")
	return cmd
}

// Complete reads the template's name or path.
func (o *ShowOptions) Complete(_ *cobra.Command, args []string) error {
	o.Ref = args[0]
	return nil
}

// Validate checks the flags.
func (o *ShowOptions) Validate() error {
	switch o.Output {
	case "", "yaml", "json":
		return nil
	}
	return cmdutil.Usage("Use -o yaml or -o json.", "--output must be yaml or json, got %q", o.Output)
}

// Run prints the template. A template shared in a namespace is anyone's
// text: what is printed is made safe for the terminal (printing.Text).
func (o *ShowOptions) Run(ctx context.Context) error {
	o.open()
	t, err := o.get(ctx, o.Ref)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	switch o.Output {
	case "yaml":
		b.Write(t.Raw)
	case "json":
		j, err := yaml.YAMLToJSON(t.Raw)
		if err != nil {
			return err
		}
		if err := json.Indent(&b, j, "", "    "); err != nil {
			return err
		}
		b.WriteByte('\n')
	default:
		if err := Describe(&b, t, o.Ref); err != nil {
			return err
		}
	}
	_, err = io.WriteString(o.Out, printing.Text(b.String()))
	return err
}

// Describe writes a template the way kubectl describe writes objects. ref
// is how the user named it, for the usage line.
func Describe(w io.Writer, t *templates.Template, ref string) error {
	fmt.Fprintf(w, "Name:         %s\n", t.Name())
	fmt.Fprintf(w, "Kind:         %s\n", t.ObjectKind())
	fmt.Fprintf(w, "Source:       %s\n", t.Origin())
	fmt.Fprintf(w, "Description:  %s\n", t.Description)
	fmt.Fprintln(w)
	if len(t.Parameters) == 0 {
		fmt.Fprintln(w, "Parameters:   <none>")
	} else {
		fmt.Fprintln(w, "Parameters:")
		tw := printing.NewTableWriter(w, printing.TableStyle{Gap: 2, Indent: 2})
		tw.Header("NAME", "TYPE", "REQUIRED", "DEFAULT", "SECRET", "DESCRIPTION")
		for _, p := range t.Parameters {
			def := "-"
			if p.Default != nil {
				def = string(*p.Default)
				if def == "" {
					def = `""`
				}
			}
			tw.Row(p.Name, p.TypeName(), yesNo(p.Required), def, yesNo(p.Secret), p.Description)
		}
		if err := tw.Render(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Object:")
	skeleton, err := objectSkeleton(t.Raw)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimRight(skeleton, "\n"), "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Use it:")
	fmt.Fprintf(w, "  %s\n", usage(t, ref))
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// objectSkeleton is the object as written, comments and key order kept.
func objectSkeleton(raw []byte) (string, error) {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(raw, &doc); err != nil {
		return "", err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yamlv3.MappingNode {
		return "", fmt.Errorf("template is not a YAML map")
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != "object" {
			continue
		}
		var b bytes.Buffer
		enc := yamlv3.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(m.Content[i+1]); err != nil {
			return "", err
		}
		return b.String(), enc.Close()
	}
	return "", fmt.Errorf("template has no object")
}

// usage is the command that uses the template, with its required values.
func usage(t *templates.Template, ref string) string {
	var values []string
	for _, p := range t.Parameters {
		switch {
		case p.Required && p.Secret:
			values = append(values, fmt.Sprintf("--secret %s=VALUE", p.Name))
		case p.Required:
			values = append(values, fmt.Sprintf("--set %s=VALUE", p.Name))
		}
	}
	args := strings.Join(append([]string{"--template", ref}, values...), " ")
	switch t.ObjectKind() {
	case kinds.UserDeployment.Kind:
		return "kubectl sched deploy NAME " + args
	case kinds.Workflow.Kind:
		return "kubectl sched workflow run " + args
	}
	return strings.TrimSpace("kubectl sched template render "+ref+" NAME "+strings.Join(values, " ")) + " | kubectl apply --server-side -f -"
}
