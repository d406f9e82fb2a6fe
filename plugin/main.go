// Command kubectl-sched is the kubectl plugin for kubectl-sched: kubectl
// runs it as `kubectl sched`.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-sched/kubectl-sched/plugin/cmd"
)

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(cmd.Execute(cmd.NewRootCommand(streams), streams))
}
