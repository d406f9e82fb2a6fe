package workflow

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-sched/kubectl-sched/api/celexpr"
	"github.com/kubectl-sched/kubectl-sched/api/substitution"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/quota"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/templates"
)

const runLong = `Submit a Workflow read from a file (-f FILE, or -f - for stdin) or rendered
from a template (--template T --set k=v ...), with server-side apply; or a
run of a WorkflowTemplate (--from wft/NAME) or ClusterWorkflowTemplate
(--from cwft/NAME) by reference, with its params set by -p: the run names
the template, and the operator copies it in when the run starts, so a later
change of the template changes no run that started.

Before anything is sent, the step references are checked: each
${steps.N.output.KEY} or ${steps.NAME.output.KEY} must name a step before the
one using it, each ${params.NAME} a param in spec.params, only finally
steps may use ${workflow.phase} and only a forEach step's task ${item}; a
forEach needs one of items and from, and its from one reference to an
output or param the step may use; a cache.key holds the references the
step's task may, at most 1,024 characters with its params. Each step's when
is compiled and type-checked as CEL, and may only read the steps it depends
on. Every problem
found is listed at once and nothing is submitted (exit 7, the code for an
invalid object, as when the API server refuses one).

A workflow that already exists is not changed (its spec cannot change once it
ran): pick another --name, or delete it. --generate-name adds a random suffix
to the name (<name>-x7k2q), so the same file runs again under a new name; a
template run without --name always gets one, after the template, and so does
a file that sets metadata.generateName instead of a name. With --watch the
command goes on as 'kubectl sched workflow watch' and exits with the
workflow's outcome. --no-cache runs every step, steps with a cache key
included (spec.noCache).`

const runExamples = `  # Submit a workflow and watch it to the end (exit 0, 10, 11 or 12)
  kubectl sched workflow run -f pipeline.yaml --watch

  # From stdin, under another name, with the running step's logs
  cat pipeline.yaml | kubectl sched workflow run -f - --name pipeline-2 --watch --logs

  # Run the same file again, as pipeline-<random suffix>
  kubectl sched workflow run -f pipeline.yaml --generate-name

  # Run every step, even those whose cache key has a result
  kubectl sched workflow run -f pipeline.yaml --generate-name --no-cache

  # Render the three-step template and only print it
  kubectl sched workflow run --template pipeline --set image=alpine --dry-run=client -o yaml

  # Run the namespace's WorkflowTemplate release by reference, with a param
  kubectl sched workflow run --from wft/release -p commit=abc123 --watch

  # Run a ClusterWorkflowTemplate an admin shared
  kubectl sched workflow run --from cwft/nightly-backup

  # Have the API server check it without creating it
  kubectl sched workflow run -f pipeline.yaml --dry-run=server`

// RunOptions for `kubectl sched workflow run`.
type RunOptions struct {
	kube.ClientOptions
	Print *printing.Flags

	// -f FILE, or --template with its values.
	templates.SourceFlags
	// Params and ParamFiles set declared workflow params for this run.
	Params       []string
	ParamFiles   []string
	Name         string
	GenerateName bool
	// NoCache sets spec.noCache: every step runs, none taking a cached
	// result.
	NoCache bool
	// From is --from KIND/NAME: a run of a WorkflowTemplate or
	// ClusterWorkflowTemplate by reference.
	From string
	watchFlags
	DryRun string

	// generate: the name gets a random suffix.
	generate bool
	wf       *schedv1.Workflow
	secret   *corev1.Secret
	source   string
	// tmpl is the spec of the template --from names.
	tmpl *schedv1.WorkflowSpec
}

func newRunCommand(c kube.ClientOptions) *cobra.Command {
	o := &RunOptions{ClientOptions: c, Print: printing.NewFlags()}
	cmd := &cobra.Command{
		Use:     "run (-f FILE | --template T [--set k=v]... | --from wft/NAME [-p k=v]...) [--name NAME] [--watch [--logs]]",
		Short:   "Submit a Workflow from a file or a template, after checking its step references",
		Long:    runLong,
		Example: runExamples,
		Args:    cobra.NoArgs,
		RunE:    cmdutil.RunE(o),
	}
	f := cmd.Flags()
	o.AddFlags(cmd, workflowKind.Kind, "The Workflow's YAML or JSON file; - reads stdin.")
	o.addFromFlag(cmd)
	f.StringArrayVarP(&o.Params, "param", "p", nil, "Set a declared workflow param for this run: -p NAME=VALUE (repeatable; wins over --param-file).")
	f.StringArrayVar(&o.ParamFiles, "param-file", nil, "YAML file mapping declared workflow params to values for this run (repeatable; later files win).")
	f.StringVar(&o.Name, "name", "", "The Workflow's name, in place of the one in the file or template.")
	f.BoolVar(&o.GenerateName, "generate-name", false, "Add a random suffix to the name, so the same file can run again (always done for --template without --name).")
	f.BoolVar(&o.NoCache, "no-cache", false, "Run every step: steps with a cache key take no cached result (spec.noCache); their tasks still record their key for later runs.")
	o.addFlags(f, "After submitting, watch the workflow until it ends and exit with its outcome.")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"client" prints the Workflow without sending it; "server" has the API server check it without persisting it.`)
	// Only -o: the other printing flags include --template, which here
	// names a workflow template (-o go-template=... still works).
	f.StringVarP(o.Print.OutputFormat, "output", "o", "", "Output format: json, yaml, name, jsonpath=..., go-template=... (default: a line saying what was done).")
	return cmd
}

// Complete reads the workflow and builds the clients.
func (o *RunOptions) Complete(cmd *cobra.Command, args []string) error {
	ctx := cmd.Context()
	if err := o.validateSource("kubectl sched workflow run"); err != nil {
		return err
	}
	if err := o.ClientOptions.Complete(cmd, args); err != nil {
		return err
	}
	return o.load(ctx)
}

// load reads the workflow from -f or renders --template, names it, sets
// the -p params and its namespace. `workflow schedule` reads its
// workflow the same way.
func (o *RunOptions) load(ctx context.Context) error {
	var err error
	o.generate = o.GenerateName || ((o.Template != "" || o.From != "") && o.Name == "")
	switch {
	case o.From != "":
		o.wf, err = o.fromTemplate(ctx)
	case o.File != "":
		o.wf, err = o.readFile()
	default:
		o.wf, err = o.render(ctx)
	}
	if err != nil {
		return err
	}
	if o.File != "" {
		switch {
		case o.Name != "":
			o.wf.Name = o.Name
		case o.wf.Name == "" && o.wf.GenerateName != "":
			o.wf.Name, o.generate = o.wf.GenerateName, true
		}
		o.wf.GenerateName = ""
		if o.generate && o.wf.Name != "" {
			o.wf.Name = generatedName(o.wf.Name)
		}
	}
	if err := o.setParams(); err != nil {
		return err
	}
	if o.NoCache {
		o.wf.Spec.NoCache = true
	}
	switch ns := o.wf.Namespace; {
	case ns == "":
		o.wf.Namespace = o.Clients.Namespace
	case o.Clients.ExplicitNamespace && ns != o.Clients.Namespace:
		return cmdutil.Usage(fmt.Sprintf("Drop metadata.namespace from %s, or run with -n %s.", o.source, ns),
			"%s is for namespace %q, not %q", o.source, ns, o.Clients.Namespace)
	}
	return nil
}

// Validate checks the flags.
func (o *RunOptions) Validate() error {
	if err := cmdutil.ValidateDryRun(o.DryRun); err != nil {
		return err
	}
	return o.validate(o.DryRun)
}

// Run checks the workflow, submits it and, with --watch, follows it.
func (o *RunOptions) Run(ctx context.Context) error {
	wf := o.wf
	checked, err := o.effective(wf)
	if err != nil {
		return err
	}
	if probs := problems(checked); len(probs) > 0 {
		name := wf.Name
		if name == "" {
			name = "(no name)"
		}
		return cmdutil.Errorf(cmdutil.ExitInvalid,
			fmt.Sprintf("Fix them in %s and run again. A step may use ${steps.N.output.KEY} or ${steps.NAME.output.KEY} of a step before it, ${params.NAME} of spec.params and, in a forEach step's task, ${item}; a when is a CEL expression over steps.NAME.outputs.KEY, params.NAME and, in finally steps, workflow.phase.", o.source),
			"workflow %s has %d problem%s; nothing was submitted:\n  %s", name, len(probs), plural(len(probs)), strings.Join(probs, "\n  "))
	}
	if o.secret != nil {
		// First, so the steps that read it find it.
		if err := o.Clients.Apply(ctx, o.secret, o.DryRun); err != nil {
			return cmdutil.API(err, "create", fmt.Sprintf("secrets %q", o.secret.Name))
		}
	}
	// Who asks for a run with an approval step: the admission policy
	// refuses any other name, and some clusters forbid them to approve it.
	if wf.Spec.RequestedBy, err = requestedBy(ctx, o.Clients, &checked.Spec); err != nil {
		return err
	}
	// Create, not apply: its spec cannot change once created, and
	// re-applying the same spec would silently show an old run. Refuse,
	// like kubectl run.
	if err := o.Clients.Create(ctx, wf, o.DryRun); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return cmdutil.Errorf(cmdutil.ExitError,
				fmt.Sprintf("Pick another name with --name, or delete it first: kubectl sched delete workflow %s -n %s", wf.Name, wf.Namespace),
				"workflow %s already exists in namespace %s", wf.Name, wf.Namespace)
		}
		if qe := quota.Refused(ctx, o.Clients.Client, wf.Namespace, err, time.Now()); qe != nil {
			return qe
		}
		return cmdutil.API(err, "create", what(wf.Name))
	}
	if o.Print.OutputFormat != nil && *o.Print.OutputFormat != "" {
		if err := o.Print.Print(wf, o.Out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(o.Out, "workflow.%s/%s created%s\n", schedv1.GroupName, wf.Name, cmdutil.DryRunSuffix(o.DryRun))
	}
	if !o.Watch {
		return nil
	}
	return o.follow(ctx, o.Clients, o.Out, wf.Namespace, wf.Name)
}

// problems lists every mistake the plugin can see before the API server:
// missing names and images, repeated step names, every bad reference
// (api/substitution.ValidateWorkflow) and every when that does not compile
// or names what it may not (api/celexpr.ValidateWorkflow), which the
// operator also runs.
func problems(wf *schedv1.Workflow) []string {
	var out []string
	if wf.Name == "" {
		out = append(out, "metadata.name: a name is required; set it in the file or with --name")
	}
	if len(wf.Spec.Steps) == 0 {
		out = append(out, "spec.steps: a workflow needs at least one step")
	}
	seen := map[string]string{}
	check := func(list string, i int, s *schedv1.WorkflowStep) {
		path := fmt.Sprintf("%s[%d]", list, i)
		switch at, dup := seen[s.Name]; {
		case s.Name == "":
			out = append(out, path+".name: every step needs a name")
		case dup:
			out = append(out, fmt.Sprintf("%s.name: %q is also the name of %s; step names must differ", path, s.Name, at))
		default:
			seen[s.Name] = path
		}
		for j, m := range s.Task.Workspaces {
			if m.ClaimName == "" && !slices.ContainsFunc(wf.Spec.Workspaces, func(w schedv1.Workspace) bool { return w.Name == m.Name }) {
				out = append(out, fmt.Sprintf("%s.task.workspaces[%d]: workspace %q is not in spec.workspaces; declare it there (name and size), or name an existing claim with claimName", path, j, m.Name))
			}
		}
		switch {
		case s.Approval != nil && s.Task.Image != "":
			out = append(out, path+": a step runs a task or waits for an approval; remove one of task and approval")
		case s.Approval == nil && s.Task.Image == "":
			out = append(out, path+".task.image: every step needs an image (or, instead of a task, an approval)")
		}
	}
	for i := range wf.Spec.Steps {
		check("spec.steps", i, &wf.Spec.Steps[i])
	}
	for i := range wf.Spec.Finally {
		if wf.Spec.Finally[i].Approval != nil {
			out = append(out, fmt.Sprintf("spec.finally[%d].approval: a finally step cannot wait for approval: it runs whatever happened before it; put the approval in spec.steps", i))
			continue
		}
		check("spec.finally", i, &wf.Spec.Finally[i])
	}
	for _, e := range substitution.ValidateWorkflow(&wf.Spec) {
		out = append(out, e.Field+": "+e.Detail)
	}
	for _, e := range celexpr.ValidateWorkflow(&wf.Spec) {
		// CEL's errors quote the expression on lines of their own.
		out = append(out, e.Field+": "+strings.ReplaceAll(e.Detail, "\n", "\n    "))
	}
	return out
}

// render renders --template with the parameter flags. The workflow is
// named --name, or after the template.
func (o *RunOptions) render(ctx context.Context) (*schedv1.Workflow, error) {
	o.source = "template " + o.Template
	// Printing a rendered workflow should not need the cluster.
	t, err := o.Get(ctx, o.Clients.Client, o.Clients.Namespace, o.DryRun == "client", o.ErrOut)
	if err != nil {
		return nil, err
	}
	if k := t.ObjectKind(); k != workflowKind.Kind {
		return nil, cmdutil.Usage("'kubectl sched template list' shows what each template makes; 'kubectl sched deploy' and 'task run' take the others.",
			"template %s makes a %s, not a Workflow", t.Name(), k)
	}
	params, secrets, err := o.Values.Values()
	if err != nil {
		return nil, err
	}
	name := o.Name
	if name == "" {
		name = t.Name()
	}
	if o.generate {
		// Before rendering: the template may use the name.
		name = generatedName(name)
	}
	obj, secret, err := t.Render(templates.Input{Name: name, Namespace: o.Clients.Namespace, Params: params, Secrets: secrets})
	if err != nil {
		return nil, templates.CommandError(err)
	}
	templates.Announce(o.ErrOut, t)
	o.secret = secret
	return obj.(*schedv1.Workflow), nil
}

// generatedName is prefix-xxxxx, within 63 characters, the suffix drawn
// as the API server draws generateName's.
func generatedName(prefix string) string {
	const suffix = 5
	prefix = strings.TrimRight(prefix, "-.")
	if max := validation.DNS1123LabelMaxLength - suffix - 1; len(prefix) > max {
		prefix = strings.TrimRight(prefix[:max], "-.")
	}
	return prefix + "-" + utilrand.String(suffix)
}

// readFile reads -f: one Workflow, YAML or JSON, unknown fields refused.
func (o *RunOptions) readFile() (*schedv1.Workflow, error) {
	data, source, err := cmdutil.ReadFile(o.File, o.In)
	o.source = source
	if err != nil {
		return nil, err
	}
	return decode(data, o.source)
}

// decode reads exactly one Workflow from YAML or JSON.
func decode(data []byte, source string) (*schedv1.Workflow, error) {
	docs, err := kinds.Documents(data, source)
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, cmdutil.Errorf(cmdutil.ExitInvalid, "Put one Workflow in the file.", "%s holds %d objects; workflow run takes exactly one Workflow", source, len(docs))
	}
	wf := &schedv1.Workflow{}
	if err := yaml.Unmarshal(docs[0], &wf.TypeMeta); err != nil {
		return nil, cmdutil.Errorf(cmdutil.ExitInvalid, "Check the YAML syntax.", "%s: %v", source, err)
	}
	if wf.Kind != workflowKind.Kind || wf.APIVersion != schedv1.GroupVersion.String() {
		return nil, cmdutil.Errorf(cmdutil.ExitInvalid, fmt.Sprintf("Start the file with apiVersion: %s and kind: Workflow.", schedv1.GroupVersion),
			"%s holds a %s %q, not a %s Workflow", source, orNone(wf.Kind), wf.APIVersion, schedv1.GroupVersion)
	}
	if err := kinds.DecodeStrict(docs[0], wf); err != nil {
		return nil, cmdutil.Errorf(cmdutil.ExitInvalid, "'kubectl explain workflows.spec' lists the fields (with the CRDs installed).", "%s: %v", source, err)
	}
	return wf, nil
}

func orNone(s string) string {
	if s == "" {
		return "(no kind)"
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// setParams sets the values of declared params from --param-file and -p.
// A name the workflow does not declare is a usage error naming those it does.
func (o *RunOptions) setParams() error {
	if len(o.Params)+len(o.ParamFiles) == 0 {
		return nil
	}
	values := map[string]string{}
	for _, file := range o.ParamFiles {
		vals, err := templates.ReadValuesFile(file)
		if err != nil {
			return err
		}
		maps.Copy(values, vals)
	}
	set, err := templates.ParseSet("--param", o.Params)
	if err != nil {
		return err
	}
	maps.Copy(values, set)
	// A run from a template sets only the params given, of those the
	// template declares; the operator fills in the others' defaults.
	params := o.wf.Spec.Params
	if o.tmpl != nil {
		params = o.tmpl.Params
	}
	declared := make([]string, 0, len(params))
	for _, p := range params {
		declared = append(declared, p.Name)
	}
	var unknown []string
	for name := range values {
		if !slices.Contains(declared, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		hint := "It declares no params: add them to spec.params."
		if len(declared) > 0 {
			hint = "Its params: " + strings.Join(declared, ", ") + "."
		}
		return cmdutil.Usage(hint, "workflow %s declares no param %s", o.source, strings.Join(unknown, ", "))
	}
	if o.tmpl != nil {
		for _, name := range declared {
			if v, ok := values[name]; ok {
				o.wf.Spec.Params = append(o.wf.Spec.Params, schedv1.WorkflowParam{Name: name, Value: v})
			}
		}
		return nil
	}
	for i := range o.wf.Spec.Params {
		if v, ok := values[o.wf.Spec.Params[i].Name]; ok {
			o.wf.Spec.Params[i].Value = v
		}
	}
	return nil
}
