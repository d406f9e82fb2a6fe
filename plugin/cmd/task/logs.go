package task

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/podlogs"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/taskfollow"
)

// LogsOptions for `kubectl sched task logs`.
type LogsOptions struct {
	kube.NameOptions

	Follow bool
	Tail   int64
}

func newLogsCommand(c kube.ClientOptions) *cobra.Command {
	o := &LogsOptions{NameOptions: kube.Named(c)}
	cmd := &cobra.Command{
		Use:   "logs NAME [-f] [--tail N]",
		Short: "Print the logs of an AgentTask's pod",
		Long: `Print the logs of the pod that runs the task's latest attempt (its "task"
container). A task has no pod while it waits to be scheduled or for its image;
the command then says why. Once the pod is gone (deleted after the task
succeeded, or pruned), it prints the end of the pod's log that the operator
kept in the task's status, saying so on stderr. With -f it waits for the pod, follows each attempt
in turn, and ends when the task does. Control characters in the log are shown
escaped; 'kubectl logs POD -c task' gives the raw bytes.`,
		Example: `  # The logs of task hello
  kubectl sched task logs hello

  # The last 20 lines, then follow until the task ends
  kubectl sched task logs hello -f --tail 20`,
		Args:              cmdutil.NameArg(agentTaskKind.Singular),
		ValidArgsFunction: o.CompleteNames(agentTaskKind, 1),
		RunE:              cmdutil.RunE(o),
	}
	cmd.Flags().BoolVarP(&o.Follow, "follow", "f", false, "Follow the logs until the task finishes, waiting for its pod if needed.")
	cmd.Flags().Int64Var(&o.Tail, "tail", -1, "Lines of recent log to show; -1 shows all.")
	return cmd
}

// Validate checks the flags.
func (o *LogsOptions) Validate() error {
	if o.Tail < -1 {
		return cmdutil.Usage("Use --tail N with N >= 0, or -1 for all.", "--tail must be -1 or more, got %d", o.Tail)
	}
	return nil
}

// Run prints the logs.
func (o *LogsOptions) Run(ctx context.Context) error {
	ns := o.Clients.Namespace
	t := &schedv1.AgentTask{}
	if err := o.Clients.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.Name}, t); err != nil {
		return cmdutil.API(err, "get", what(o.Name))
	}
	opts := corev1.PodLogOptions{}
	if o.Tail >= 0 {
		opts.TailLines = ptr.To(o.Tail)
	}
	pod := t.Status.PodName
	switch {
	case pod == "" && !o.Follow:
		return noPod(t)
	case pod == "" || o.Follow && !t.Status.Phase.Finished():
		return o.follow(ctx, t, opts)
	}
	err := podlogs.StreamTask(ctx, o.Clients.Kube, ns, pod, opts, o.Out)
	if podNotFound(err, pod) {
		if rec := schedv1.KeptLogOf(t.Status.Logs, pod); rec != nil {
			return o.printKept(t, rec)
		}
	}
	if err != nil {
		return logsError(err, t)
	}
	return nil
}

// printKept prints what the operator kept of the log of the task's gone
// pod, after a line on stderr that says so.
func (o *LogsOptions) printKept(t *schedv1.AgentTask, rec *schedv1.KeptLog) error {
	note, ok := podlogs.KeptNote(rec)
	if !ok {
		return cmdutil.Errorf(cmdutil.ExitNoLogs, fmt.Sprintf("Its outputs are kept: kubectl sched describe agenttask %s", t.Name), "%s", note)
	}
	fmt.Fprintln(o.ErrOut, printing.Line(note))
	if err := podlogs.CopyKept(o.Out, rec.Log, o.Tail); err != nil {
		return cmdutil.Errorf(cmdutil.ExitError, "", "write the log: %v", err)
	}
	return nil
}

// follow waits for the task's pods and streams their logs until it ends.
func (o *LogsOptions) follow(ctx context.Context, t *schedv1.AgentTask, opts corev1.PodLogOptions) error {
	if t.Status.Phase.Finished() {
		return noPod(t) // it ended without a pod; nothing will come
	}
	f := &taskfollow.Follower{
		Client: o.Clients.Client,
		Kube:   o.Clients.Kube,
		Logs:   true,
		Tail:   opts.TailLines,
		Out:    o.Out,
		Note:   func(s string) { fmt.Fprintln(o.ErrOut, "warning: "+printing.Line(s)) },
	}
	said := ""
	f.OnChange = func(t *schedv1.AgentTask) {
		if t.Status.PodName == "" && !t.Status.Phase.Finished() {
			if why := taskfollow.Explain(t); why != said {
				said = why
				fmt.Fprintf(o.ErrOut, "agenttask/%s has no pod yet: %s\n", t.Name, why)
			}
		}
	}
	if _, err := f.Run(ctx, t.Namespace, t.Name); err != nil {
		return watchError(err, t.Name, 0, nil)
	}
	return nil
}

// noPod explains why a task has no pod to show logs of.
func noPod(t *schedv1.AgentTask) error {
	if t.Status.Phase.Finished() {
		return cmdutil.Errorf(cmdutil.ExitError, fmt.Sprintf("'kubectl sched describe agenttask %s' shows what happened.", t.Name),
			"agenttask %s ended without a pod, so it has no logs: %s", t.Name, taskfollow.Explain(t))
	}
	return cmdutil.Errorf(cmdutil.ExitError,
		fmt.Sprintf("'kubectl sched task logs %s -f' waits for the pod; 'kubectl sched describe agenttask %s' shows events.", t.Name, t.Name),
		"agenttask %s has no pod yet: %s", t.Name, taskfollow.Explain(t))
}

func logsError(err error, t *schedv1.AgentTask) error {
	pod := t.Status.PodName
	if podNotFound(err, pod) {
		return cmdutil.Errorf(cmdutil.ExitError,
			fmt.Sprintf("Its outputs are kept: kubectl sched describe agenttask %s", t.Name),
			"pod %s of agenttask %s is gone (deleted after the task finished, or by its TTL), and its logs with it", pod, t.Name)
	}
	var nl *podlogs.NoLogsError
	if errors.As(err, &nl) {
		hint := fmt.Sprintf("The task's status and outputs do not need its logs: kubectl sched describe agenttask %s", t.Name)
		if !nl.Simulated && !nl.NodeHidden {
			hint = fmt.Sprintf("Check that the kubelet of %s runs and that the API server can reach its address (kubectl get node %s -o wide).", nl.Node, nl.Node)
		}
		return &cmdutil.Error{Code: cmdutil.ExitNoLogs, Msg: nl.Error(), Hint: hint, Err: err}
	}
	if apierrors.IsForbidden(err) || cmdutil.Unreachable(err) {
		return cmdutil.API(err, "get", "pods/log "+pod)
	}
	return cmdutil.Errorf(cmdutil.ExitError, fmt.Sprintf("'kubectl sched describe agenttask %s' shows the task's state.", t.Name),
		"cannot read the logs of pod %s of agenttask %s: %v", pod, t.Name, err)
}

// podNotFound tells a missing pod from other things the API server may not
// find on the way to the logs, such as the pod's node.
func podNotFound(err error, pod string) bool {
	var se apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &se) {
		return false
	}
	d := se.Status().Details
	return d == nil || d.Kind == "pods" && d.Name == pod
}
