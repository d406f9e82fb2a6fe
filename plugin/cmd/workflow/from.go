package workflow

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/api/wftemplate"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
)

// fromUsage is --from's help, shared by run and schedule.
const fromUsage = "Run a WorkflowTemplate of the namespace (wft/NAME) or a ClusterWorkflowTemplate (cwft/NAME) by reference: the operator copies it in when the run starts; -p sets its params."

// addFromFlag registers --from, completing wft/NAME and cwft/NAME from
// the cluster's templates.
func (o *RunOptions) addFromFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.From, "from", "", fromUsage)
	_ = cmd.RegisterFlagCompletionFunc("from", func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, k := range []kinds.Kind{kinds.WorkflowTemplate, kinds.ClusterWorkflowTemplate} {
			for _, n := range o.ListNames(k) {
				if ref := k.Short + "/" + n; strings.HasPrefix(ref, toComplete) {
					out = append(out, ref)
				}
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
}

// validateSource checks that exactly one of -f, --template and --from
// gives the workflow. cmdLine is how the command starts, for the hint.
func (o *RunOptions) validateSource(cmdLine string) error {
	if o.From == "" {
		return o.ValidateFile(cmdLine)
	}
	if o.File != "" || o.Template != "" {
		return cmdutil.Usage("Use one of -f FILE, --template T and --from KIND/NAME.", "--from cannot be used with -f or --template")
	}
	if len(o.Values.Set)+len(o.Values.ValuesFiles)+len(o.Values.Secret)+len(o.Values.SecretFile) > 0 {
		return cmdutil.Usage("Set a template's params with -p NAME=VALUE.", "--set, --values, --secret and --secret-file are for --template; --from takes -p")
	}
	return nil
}

// templateRef parses --from: wft/NAME or workflowtemplate/NAME, cwft/NAME
// or clusterworkflowtemplate/NAME.
func templateRef(from string) (*schedv1.WorkflowTemplateRef, error) {
	kind, name, ok := strings.Cut(from, "/")
	if k, found := kinds.Lookup(kind); ok && found && name != "" {
		switch k.Kind {
		case schedv1.KindWorkflowTemplate, schedv1.KindClusterWorkflowTemplate:
			return &schedv1.WorkflowTemplateRef{Kind: k.Kind, Name: name}, nil
		}
	}
	return nil, cmdutil.Usage("Name a WorkflowTemplate as wft/NAME or a ClusterWorkflowTemplate as cwft/NAME; 'kubectl sched template list' lists them.",
		"--from %q names no workflow template", from)
}

// fromTemplate reads the template --from names and makes the run: a
// Workflow naming it, named --name or after the template. The template's
// spec is kept to check the params and steps before anything is sent.
func (o *RunOptions) fromTemplate(ctx context.Context) (*schedv1.Workflow, error) {
	ref, err := templateRef(o.From)
	if err != nil {
		return nil, err
	}
	o.source = ref.String()
	var obj client.Object
	key := client.ObjectKey{Name: ref.Name}
	if ref.Kind == schedv1.KindWorkflowTemplate {
		t := &schedv1.WorkflowTemplate{}
		obj, o.tmpl, key.Namespace = t, &t.Spec, o.Clients.Namespace
	} else {
		t := &schedv1.ClusterWorkflowTemplate{}
		obj, o.tmpl = t, &t.Spec
	}
	if err := o.Clients.Client.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			where := ""
			if key.Namespace != "" {
				where = " in namespace " + key.Namespace
			}
			return nil, cmdutil.Errorf(cmdutil.ExitNotFound, "'kubectl sched template list' lists the templates; a WorkflowTemplate is read from the run's namespace (-n).",
				"%s %s not found%s", ref.Kind, ref.Name, where)
		}
		return nil, cmdutil.API(err, "get", fmt.Sprintf("%s %q", ref.Kind, ref.Name))
	}
	name := o.Name
	if name == "" {
		name = ref.Name
	}
	if o.generate {
		name = generatedName(name)
	}
	return &schedv1.Workflow{
		TypeMeta:   metav1.TypeMeta{APIVersion: schedv1.GroupVersion.String(), Kind: workflowKind.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       schedv1.WorkflowSpec{WorkflowTemplateRef: ref},
	}, nil
}

// effective is the workflow as the operator will run it: a run from a
// template with the template copied in (api/wftemplate.Merge), for the
// checks made before it is sent.
func (o *RunOptions) effective(wf *schedv1.Workflow) (*schedv1.Workflow, error) {
	if o.tmpl == nil {
		return wf, nil
	}
	out := wf.DeepCopy()
	spec, err := wftemplate.Merge(o.tmpl, &wf.Spec, wf.Spec.WorkflowTemplateRef.String(), "", "")
	if err != nil {
		return nil, cmdutil.Errorf(cmdutil.ExitInvalid, "", "%v", err)
	}
	out.Spec = spec
	return out, nil
}
