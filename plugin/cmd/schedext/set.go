package schedext

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// wellKnownName is the CRD's pattern for spec.scheduler.name.
var wellKnownName = regexp.MustCompile(`^scx_[a-z0-9_]+$`)

// SetOptions for `kubectl sched schedext set`.
type SetOptions struct {
	kube.ClientOptions
	Print *printing.Flags

	Sched   string
	Nodes   string
	Args    string
	ArgList []string
	OpsName string
	Image   string
	DryRun  string

	obj *schedv1.SchedExt
}

func newSetCommand(c kube.ClientOptions) *cobra.Command {
	o := &SetOptions{ClientOptions: c, Print: printing.NewFlags()}
	cmd := &cobra.Command{
		Use:   "set NAME --sched scx_NAME|IMAGE [--nodes k=v,...] [--args \"...\"]",
		Short: "Create or replace a SchedExt (server-side apply)",
		Long: `Load a sched_ext scheduler on the nodes --nodes selects (every node when omitted).
--sched takes a well-known scheduler (a value starting with scx_, such as
scx_lavd) or an image of your own. set declares the whole SchedExt: flags left
out are removed from an existing one.`,
		Example: `  # scx_lavd on the batch pool
  kubectl sched schedext set lavd --sched scx_lavd --nodes node.kubectl-sched.dev/pool=batch

  # scx_rusty everywhere, with arguments
  kubectl sched schedext set rusty --sched scx_rusty --args "--slice-us 20000 --greedy-threshold 2"

  # scx_lavd from another scx release than the operator's default
  kubectl sched schedext set lavd --sched scx_lavd --image registry.example.com/scx:v1.0.13

  # Your own loader image; attached when /sys/kernel/sched_ext/root/ops starts with "mysched"
  kubectl sched schedext set mine --sched registry.example.com/mysched:1.2 --ops-name mysched

  # Print the object without creating it
  kubectl sched schedext set lavd --sched scx_lavd --dry-run=client -o yaml`,
		Args:              cmdutil.NameArg(kind.Singular),
		ValidArgsFunction: o.CompleteNames(kind, 1),
		RunE:              cmdutil.RunE(o),
	}
	f := cmd.Flags()
	f.StringVar(&o.Sched, "sched", "", "Scheduler: a well-known name (scx_lavd, scx_rusty, ...) or an image.")
	f.StringVar(&o.Nodes, "nodes", "", "Node label selector, k=v[,k2=v2]; every node when empty.")
	f.StringVar(&o.Args, "args", "", "Arguments to the scheduler, split like a shell would (quotes group words).")
	f.StringArrayVar(&o.ArgList, "arg", nil, "One argument to the scheduler, as is; repeat for more (after --args).")
	f.StringVar(&o.OpsName, "ops-name", "", "With an image: the ops name the kernel reports when it is attached.")
	f.StringVar(&o.Image, "image", "", "With a well-known --sched: the image to run it from, in place of the operator's (another scx release).")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"client" prints the object without sending it; "server" has the API server check it.`)
	_ = cmd.RegisterFlagCompletionFunc("sched", cobra.FixedCompletions(schedv1.WellKnownSchedulers, cobra.ShellCompDirectiveNoFileComp))
	o.Print.AddFlags(cmd, false)
	return cmd
}

// Complete builds the SchedExt from the flags.
func (o *SetOptions) Complete(cmd *cobra.Command, args []string) error {
	obj := &schedv1.SchedExt{
		TypeMeta:   metav1.TypeMeta{APIVersion: schedv1.GroupVersion.String(), Kind: "SchedExt"},
		ObjectMeta: metav1.ObjectMeta{Name: args[0]},
	}
	if strings.HasPrefix(o.Sched, "scx_") {
		obj.Spec.Scheduler.Name = o.Sched
		obj.Spec.Scheduler.Image = o.Image
	} else {
		obj.Spec.Scheduler.Image = o.Sched
		obj.Spec.Scheduler.OpsName = o.OpsName
	}
	if o.Nodes != "" {
		sel, err := labels.ConvertSelectorToLabelsMap(o.Nodes)
		if err != nil {
			return cmdutil.Usage("Use --nodes key=value[,key2=value2].", "bad --nodes %q: %v", o.Nodes, err)
		}
		obj.Spec.NodeSelector = sel
	}
	split, err := splitArgs(o.Args)
	if err != nil {
		return cmdutil.Usage(`Close the quote, or pass each argument with --arg.`, "bad --args: %v", err)
	}
	split = append(split, o.ArgList...)
	obj.Spec.Args = split
	o.obj = obj
	if o.DryRun == "client" {
		return nil
	}
	return o.ClientOptions.Complete(cmd, args)
}

// Validate checks what the API server would refuse, with clearer words.
func (o *SetOptions) Validate() error {
	if err := cmdutil.ValidateDryRun(o.DryRun); err != nil {
		return err
	}
	if o.Print.IsWide() {
		return cmdutil.Usage("Use -o yaml, json or name.", "set prints no table; -o wide does not apply")
	}
	if err := o.Print.Validate("Use -o yaml, json, name, jsonpath=... or go-template=...."); err != nil {
		return err
	}
	name := o.obj.Name
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 || len(name) > 50 {
		return cmdutil.Usage("Use at most 50 lower-case letters, digits, '-' and '.'; the DaemonSet is named scx-NAME.", "bad SchedExt name %q", name)
	}
	s := o.obj.Spec.Scheduler
	switch {
	case o.Sched == "":
		return cmdutil.Usage("Well-known schedulers: "+strings.Join(schedv1.WellKnownSchedulers, ", ")+".", "--sched is required")
	case s.Name != "" && !wellKnownName.MatchString(s.Name):
		return cmdutil.Usage("Well-known schedulers: "+strings.Join(schedv1.WellKnownSchedulers, ", ")+"; anything not starting with scx_ is an image.", "bad scheduler name %q", s.Name)
	case s.Name != "" && o.OpsName != "":
		return cmdutil.Usage("Drop --ops-name: a well-known scheduler already says which ops attach.", "--ops-name only applies to an image")
	case s.Name == "" && o.Image != "":
		return cmdutil.Usage("Give the image with --sched, or a well-known scheduler with --sched scx_NAME --image IMAGE.", "--image only applies to a well-known --sched")
	case s.Image != "" && strings.ContainsAny(s.Image, " \t"):
		return cmdutil.Usage("An image looks like registry/name:tag.", "bad image %q", s.Image)
	}
	return nil
}

// Run applies the SchedExt and prints it.
func (o *SetOptions) Run(ctx context.Context) error {
	if o.DryRun != "client" {
		if err := o.Clients.Apply(ctx, o.obj, o.DryRun); err != nil {
			return cmdutil.API(err, "patch", kind.What("", o.obj.Name))
		}
		o.obj.SetGroupVersionKind(kind.GVK())
	}
	if !o.Print.IsTable() {
		if o.DryRun == "client" {
			// Nothing went to the server: print the spec that would be
			// applied, without the empty status the Go type carries.
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.obj)
			if err != nil {
				return err
			}
			delete(u, "status")
			unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
			return o.Print.Print(&unstructured.Unstructured{Object: u}, o.Out)
		}
		return o.Print.Print(o.obj, o.Out)
	}
	suffix := cmdutil.DryRunSuffix(o.DryRun)
	fmt.Fprintf(o.Out, "%s/%s serverside-applied%s\n", kind.Qualified(), o.obj.Name, suffix)
	if o.DryRun == "" {
		fmt.Fprintf(o.Out, "See where it is attached: kubectl sched schedext status %s\n", o.obj.Name)
	}
	return nil
}

// splitArgs splits s into words as a POSIX shell would for plain words,
// single and double quotes and backslashes; nothing is expanded.
func splitArgs(s string) ([]string, error) {
	var (
		out     []string
		cur     strings.Builder
		inWord  bool
		quote   rune
		escaped bool
	)
	for _, r := range s {
		switch {
		case escaped && quote == '"':
			// Inside double quotes a backslash escapes only these.
			if !strings.ContainsRune("\"\\$`", r) {
				cur.WriteRune('\\')
			}
			cur.WriteRune(r)
			escaped = false
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c quote in %q", quote, s)
	}
	if escaped {
		return nil, fmt.Errorf("trailing backslash in %q", s)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}
