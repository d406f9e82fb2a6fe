package templates

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// SourceFlags say where a command's object comes from: --template, found
// in --template-dir, the cluster or the catalog and rendered with the
// ValueFlags, or, for a command that also reads an object, -f FILE. Every
// command that renders a template embeds them, so they read the same way
// everywhere.
type SourceFlags struct {
	// File is -f: a file, or - for stdin.
	File         string
	Template     string
	TemplateDirs []string
	Values       ValueFlags

	// kind is what the command makes: UserDeployment, Workflow.
	kind string
}

// AddFlags registers the flags of a command that makes objects of kind.
// fileUsage registers -f/--filename with that usage; without it, -f is
// --values. --template completes the catalog's templates of kind.
func (s *SourceFlags) AddFlags(cmd *cobra.Command, kind, fileUsage string) {
	s.kind = kind
	f := cmd.Flags()
	valuesShort := "f"
	if fileUsage != "" {
		f.StringVarP(&s.File, "filename", "f", "", fileUsage)
		valuesShort = ""
	}
	f.StringVar(&s.Template, "template", "", "A template that renders a "+kind+": a name, a file or a folder (see 'kubectl sched template list').")
	AddTemplateDirFlag(f, &s.TemplateDirs)
	s.Values.AddFlags(f, valuesShort)
	_ = cmd.RegisterFlagCompletionFunc("template", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return completeCatalog(kind), cobra.ShellCompDirectiveDefault
	})
}

// AddTemplateDirFlag registers --template-dir into dirs.
func AddTemplateDirFlag(f *pflag.FlagSet, dirs *[]string) {
	f.StringArrayVar(dirs, "template-dir", nil, "A folder of templates, searched before the cluster and the catalog (repeatable).")
}

// completeCatalog offers the catalog's templates of kind, and files,
// without asking the cluster: completion must be instant.
func completeCatalog(kind string) []cobra.Completion {
	ts, _ := Catalog()
	var out []cobra.Completion
	for _, t := range ts {
		if t.ObjectKind() == kind {
			out = append(out, cobra.CompletionWithDesc(t.Name(), t.Description))
		}
	}
	return out
}

// ValidateFile checks the source of a command with -f: a file or a
// template, and template parameters only with a template. cmdLine is how
// the command starts, for the hint when neither is given.
func (s *SourceFlags) ValidateFile(cmdLine string) error {
	v := s.Values
	switch {
	case s.File != "" && s.Template != "":
		return cmdutil.Usage("Use -f FILE or --template T.", "-f and --template cannot be used together")
	case s.File == "" && s.Template == "":
		return cmdutil.Usage(cmdLine+" -f FILE, or --template T; 'kubectl sched template list' lists templates.",
			"give the %s with -f FILE or --template T", strings.ToLower(s.kind))
	case s.Template == "" && len(v.Set)+len(v.ValuesFiles)+len(v.Secret)+len(v.SecretFile) > 0:
		return cmdutil.Usage("--set, --values, --secret and --secret-file give template parameters; edit the file instead, or use --template.",
			"template parameters need --template")
	}
	return nil
}

// Get finds --template: in --template-dir, then in namespace ns and the
// operator's of the cluster c reads (nil skips the cluster), then in the
// catalog, saying on errOut what it skipped. tolerateUnreachable goes on
// without a cluster that does not answer. A broken template is an
// invalid-input error.
func (s *SourceFlags) Get(ctx context.Context, c client.Reader, ns string, tolerateUnreachable bool, errOut io.Writer) (*Template, error) {
	src := &Source{Dirs: s.TemplateDirs, Client: c, Namespace: ns, TolerateUnreachable: tolerateUnreachable,
		Warn: func(msg string) { fmt.Fprintln(errOut, "warning: "+printing.Line(msg)) }}
	t, err := src.Get(ctx, s.Template)
	if err != nil {
		return nil, CommandError(err)
	}
	return t, nil
}
