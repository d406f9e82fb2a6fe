// Package cmd builds the kubectl sched command tree. Each subcommand lives in
// its own package with an options struct (Complete, Validate, Run).
package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/version"
)

const rootExamples = `  # Show the plugin and operator versions
  kubectl sched version

  # List everything kubectl-sched manages, with kubectl itself
  kubectl get sched`

// NewRootCommand returns `kubectl sched` with the kubectl connection flags
// (--kubeconfig, --context, -n, --as, ...) and every subcommand.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:   "kubectl-sched",
		Short: "Run templated apps, agent tasks, workflows and sched_ext schedulers on Kubernetes",
		Long: `kubectl sched renders templates into kubectl-sched resources (UserDeployment,
AgentTask, Workflow, SchedExt), applies them with server-side apply and follows
what happens to them. The kubectl-sched operator must run in the cluster:
see 'kubectl sched install'.`,
		Example:       rootExamples,
		SilenceUsage:  true,
		SilenceErrors: true,
		// kubectl runs plugins as kubectl-<name>; show the name users type.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl sched"},
	}
	flags.AddFlags(root.PersistentFlags())
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetIn(streams.In)

	root.AddCommand(version.NewCommand(flags, streams))
	return root
}

// Exit codes scripts can rely on. They are documented in the README.
const (
	ExitOK = 0
	// ExitError is any failure not listed below.
	ExitError = 1
	// ExitUsage is a bad command line: unknown flag, bad --set, missing argument.
	ExitUsage = 2
)

// UsageError marks an error caused by the command line.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Execute runs the command and turns its error into one line on stderr and
// an exit code.
func Execute(root *cobra.Command, streams genericiooptions.IOStreams) int {
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &UsageError{Err: fmt.Errorf("%w\nSee '%s --help'.", err, c.CommandPath())}
	})
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(streams.ErrOut, "error: %v\n", err)
	var usage *UsageError
	if errors.As(err, &usage) {
		return ExitUsage
	}
	return ExitError
}
