// Package cmd builds the kubectl sched command tree. Each subcommand lives in
// its own package with an options struct (Complete, Validate, Run) that
// embeds kube.ClientOptions: the root gives every command the same flags,
// streams and client getter.
package cmd

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	deletecmd "github.com/kubectl-sched/kubectl-sched/plugin/cmd/delete"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/deploy"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/describe"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/doctor"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/get"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/install"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/lifecycle"
	logscmd "github.com/kubectl-sched/kubectl-sched/plugin/cmd/logs"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/placement"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/revisions"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/scale"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/schedext"
	setcmd "github.com/kubectl-sched/kubectl-sched/plugin/cmd/set"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/task"
	templatecmd "github.com/kubectl-sched/kubectl-sched/plugin/cmd/template"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/tenant"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/version"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/workflow"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

const rootExamples = `  # Show the plugin and operator versions
  kubectl sched version

  # Check what kubectl-sched needs, and how to fix what is wrong
  kubectl sched doctor

  # List everything kubectl-sched manages, with kubectl itself
  kubectl get sched`

// ExitCodes are the exit codes every command ends with, with what each
// means: docs/reference/exit-codes.md is written from them (hack/docgen).
var ExitCodes = cmdutil.ExitCodes

// RootOptions is what the root command gives every subcommand. Flags and
// NewClients are for tests: nil means the kubectl flags and kube.New.
type RootOptions struct {
	genericiooptions.IOStreams
	Flags *genericclioptions.ConfigFlags
	// NewClients is the one client getter every command builds its
	// clients with, completion and version included: a test that swaps it
	// here points the whole plugin at what it returns.
	NewClients kube.Getter
}

// NewRootCommand returns `kubectl sched` with the kubectl connection flags
// (--kubeconfig, --context, -n, --as, ...) and every subcommand.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return NewRootCommandWithOptions(RootOptions{IOStreams: streams})
}

// NewRootCommandWithOptions is NewRootCommand with o's flags and client
// getter, as kueuectl's NewKueuectlCmd takes its ClientGetter.
func NewRootCommandWithOptions(o RootOptions) *cobra.Command {
	if o.Flags == nil {
		o.Flags = genericclioptions.NewConfigFlags(true)
	}
	if o.NewClients == nil {
		o.NewClients = kube.New
	}
	streams := o.IOStreams
	root := &cobra.Command{
		Use:   "kubectl-sched",
		Short: "Run templated apps, agent tasks, workflows and sched_ext schedulers on Kubernetes",
		Long: `kubectl sched renders templates into kubectl-sched resources (UserDeployment,
AgentTask, Workflow, CronWorkflow, SchedExt), applies them with server-side apply and follows
what happens to them. The kubectl-sched operator must run in the cluster:
see 'kubectl sched install'.`,
		Example:       rootExamples,
		SilenceUsage:  true,
		SilenceErrors: true,
		// kubectl runs plugins as kubectl-<name>; show the name users type.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl sched"},
	}
	o.Flags.AddFlags(root.PersistentFlags())
	// The API server's warnings (an admission policy's, say) may quote the
	// object: print them as kubectl does, made safe for the terminal.
	rest.SetDefaultWarningHandler(rest.NewWarningWriter(safeWriter{streams.ErrOut}, rest.WarningWriterOptions{Deduplicate: true}))
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetIn(streams.In)

	// Each command copies c into its options; Clients stay nil until its
	// Complete.
	c := kube.ClientOptions{Flags: o.Flags, IOStreams: streams, NewClients: o.NewClients}
	root.AddCommand(version.NewCommand(c), doctor.NewCommand(c))
	root.AddCommand(deploy.NewCommand(c), scale.NewCommand(c), setcmd.NewCommand(c), templatecmd.NewCommand(c))
	root.AddCommand(get.NewCommand(c), describe.NewCommand(c), deletecmd.NewCommand(c), schedext.NewCommand(c), install.NewCommand(c), install.NewUninstallCommand(c))
	root.AddCommand(task.NewCommand(c), workflow.NewCommand(c), placement.NewCommand(c))
	root.AddCommand(lifecycle.NewStopCommand(c), lifecycle.NewStartCommand(c), lifecycle.NewRestartCommand(c))
	root.AddCommand(revisions.NewHistoryCommand(c), revisions.NewRollbackCommand(c))
	root.AddCommand(logscmd.NewCommand(c))
	root.AddCommand(tenant.NewCommand(c))
	return root
}

// Execute runs the command, prints its error as one line plus a hint on
// stderr, and returns the exit code (plugin/internal/cmdutil lists them).
func Execute(root *cobra.Command, streams genericiooptions.IOStreams) int {
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return cmdutil.Usage(fmt.Sprintf("See '%s --help'.", c.CommandPath()), "%v", err)
	})
	usageArgs(root)
	err := root.Execute()
	if err == nil {
		return cmdutil.ExitOK
	}
	if strings.HasPrefix(err.Error(), "unknown command") {
		err = cmdutil.Usage("See 'kubectl sched --help'.", "%v", strings.SplitN(err.Error(), "\n", 2)[0])
	}
	// Errors quote the cluster (a task's message, the server's refusal).
	fmt.Fprintf(streams.ErrOut, "error: %s\n", printing.Text(err.Error()))
	return cmdutil.ExitCode(err)
}

// safeWriter passes what is written through printing.Text. Each write
// must be whole lines, as the warning writer's are.
type safeWriter struct{ out io.Writer }

func (w safeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.out, printing.Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// usageArgs makes a wrong number of arguments a usage error (exit 2), as a
// bad flag is, in every command.
func usageArgs(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			err := check(cmd, args)
			var ce *cmdutil.Error
			if err == nil || errors.As(err, &ce) {
				return err
			}
			return cmdutil.Usage(fmt.Sprintf("See '%s --help'.", cmd.CommandPath()), "%v", err)
		}
	}
	for _, sub := range c.Commands() {
		usageArgs(sub)
	}
}
