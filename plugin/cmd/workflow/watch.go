package workflow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/liveview"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/podlogs"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/taskfollow"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/waitfor"
)

const watchLong = `Follow a Workflow until it ends: a header (phase, elapsed time, steps done
out of all, whether it is suspended) and a row per step (phase, duration,
outputs as they appear, why it failed or was skipped, the command that
approves a step waiting for approval), then its finally steps in a section
of their own.

On a terminal the view is redrawn in place, only when something in it changed.
When stdout is not a terminal, or NO_COLOR is set, or TERM=dumb, no escape
codes are written: each change is appended as one line ("12:00:01 step 0
build Running"), so the output is a record. With --logs the running step's
pod logs are streamed too, each line prefixed with the step's name; on a
terminal they scroll above the view.

Everything comes from watch events; nothing is polled. The command ends when
the workflow does, with a summary line, and exits 0 when it Succeeded, 10
when it Failed, 11 when it ran past its spec.timeout (phase Timeout), and 12
when --timeout passed first (the workflow goes on).`

// workflowKind is the kind for name completion.
var workflowKind = kinds.Workflow

// logsGrace is how long the view waits, once the workflow ended, for the
// last step's logs to arrive. Its pod has ended by then, so this is short.
const logsGrace = 5 * time.Second

// WatchOptions for `kubectl sched workflow watch`.
type WatchOptions struct {
	kube.NameOptions

	Logs    bool
	Timeout time.Duration
}

func newWatchCommand(c kube.ClientOptions) *cobra.Command {
	o := &WatchOptions{NameOptions: kube.Named(c)}
	cmd := &cobra.Command{
		Use:   "watch NAME [--logs] [--timeout D]",
		Short: "Follow a Workflow live until it ends; the exit code is its outcome",
		Long:  watchLong,
		Example: `  # Watch a workflow; exit 0 if it succeeds, 10 if it fails, 11 if it times out
  kubectl sched workflow watch nightly

  # With the running step's logs, giving up after 30 minutes (exit 12)
  kubectl sched workflow watch nightly --logs --timeout 30m

  # In CI: plain appended lines, no escape codes
  kubectl sched workflow watch nightly | tee watch.log`,
		Args:              cmdutil.NameArg(workflowKind.Singular),
		ValidArgsFunction: o.CompleteNames(workflowKind, 1),
		RunE:              cmdutil.RunE(o),
	}
	cmd.Flags().BoolVar(&o.Logs, "logs", false, "Stream the running step's pod logs, each line prefixed with the step name.")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "Stop watching after this long and exit 12 (0: until the workflow ends).")
	return cmd
}

// Validate checks the flags.
func (o *WatchOptions) Validate() error {
	if o.Timeout < 0 {
		return cmdutil.Usage("Use a positive --timeout, or 0 for no limit.", "--timeout must not be negative")
	}
	return nil
}

// Run checks the workflow exists, then watches it.
func (o *WatchOptions) Run(ctx context.Context) error {
	wf := &schedv1.Workflow{}
	if err := o.Clients.Client.Get(ctx, client.ObjectKey{Namespace: o.Clients.Namespace, Name: o.Name}, wf); err != nil {
		return cmdutil.API(err, "get", what(o.Name))
	}
	tty := printing.Color(o.Out)
	return follow(ctx, o.Clients, o.Clients.Namespace, o.Name, followOptions{
		out: o.Out, tty: tty, width: width(o.Out, tty), logs: o.Logs, timeout: o.Timeout,
	})
}

type followOptions struct {
	out     io.Writer
	tty     bool
	width   int
	logs    bool
	timeout time.Duration
}

// follow shows the workflow until it ends and turns its end into the exit
// code. `workflow run --watch` ends here too.
func follow(ctx context.Context, c *kube.Clients, ns, name string, fo followOptions) error {
	ctx, cancel := watchtools.ContextWithOptionalTimeout(ctx, fo.timeout)
	defer cancel()
	view := liveview.New(fo.out, fo.tty, fo.width, time.Now)
	if fo.tty {
		// Elapsed times move on between events; Tick redraws only when
		// the drawing changed. This reads the clock, not the cluster.
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					view.Tick()
				}
			}
		}()
	}
	logs := &stepLogs{clients: c, ns: ns, view: view, enabled: fo.logs, started: map[string]bool{}}
	logsCtx, stopLogs := context.WithCancel(ctx)
	defer stopLogs()

	var final *liveview.State
	err := waitfor.Object(ctx, c.Client, &schedv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, &schedv1.WorkflowList{},
		func(wf *schedv1.Workflow) (bool, error) {
			s := liveview.StateOf(wf)
			view.Update(s)
			logs.sync(logsCtx, s)
			if wf.Status.Phase.Finished() {
				final = &s
				return true, nil
			}
			return false, nil
		})
	logs.wait(stopLogs, logsGrace)
	if err != nil {
		view.Stop()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return cmdutil.Errorf(cmdutil.ExitWatchTimeout,
				fmt.Sprintf("It goes on in the cluster; 'kubectl sched workflow watch %s' picks it up again.", name),
				"stopped watching workflow %s after %s", name, fo.timeout)
		case errors.Is(err, waitfor.ErrDeleted):
			return cmdutil.Errorf(cmdutil.ExitNotFound, "Someone or its TTL deleted it; 'kubectl sched get workflows' lists what exists.",
				"workflow %s was deleted before it ended", name)
		}
		return cmdutil.API(err, "watch", what(name))
	}
	view.Finish(*final)
	return outcome(*final)
}

// outcome is the exit code of a finished workflow.
func outcome(s liveview.State) error {
	hint := ""
	if st := s.FailedStep(); st != nil && st.TaskName != "" {
		hint = fmt.Sprintf("See the step's logs: kubectl sched task logs %s", st.TaskName)
	}
	switch s.Phase {
	case schedv1.WorkflowSucceeded:
		return nil
	case schedv1.WorkflowTimeout:
		return cmdutil.Errorf(cmdutil.ExitTimedOut, hint, "workflow %s timed out", s.Name)
	case schedv1.WorkflowCancelled:
		return cmdutil.Errorf(cmdutil.ExitFailed, hint, "workflow %s was cancelled", s.Name)
	}
	return cmdutil.Errorf(cmdutil.ExitFailed, hint, "workflow %s failed", s.Name)
}

// stepLogs follows the logs of each step that starts while watched.
type stepLogs struct {
	clients *kube.Clients
	ns      string
	view    *liveview.View
	enabled bool

	wg      sync.WaitGroup
	started map[string]bool // by task name
}

// sync starts following each step and finally step that is pending or
// running, and each item of a forEach step that is.
func (l *stepLogs) sync(ctx context.Context, s liveview.State) {
	if !l.enabled {
		return
	}
	for _, st := range append(append([]liveview.Step(nil), s.Steps...), s.Finally...) {
		if st.Loop != nil {
			// A forEach step: each item's task, as it starts.
			for _, it := range st.Loop.Active {
				l.start(ctx, fmt.Sprintf("%s[%d]", st.Name, it.Index), it.TaskName)
			}
			continue
		}
		if st.TaskName == "" || (st.Phase != schedv1.StepPending && st.Phase != schedv1.StepRunning) {
			continue
		}
		l.start(ctx, st.Name, st.TaskName)
	}
}

// start follows task, whose lines are prefixed with step, unless it is
// followed already.
func (l *stepLogs) start(ctx context.Context, step, task string) {
	if l.started[task] {
		return
	}
	l.started[task] = true
	l.wg.Add(1)
	go l.follow(ctx, step, task)
}

func (l *stepLogs) follow(ctx context.Context, step, task string) {
	defer l.wg.Done()
	out := podlogs.Lines(func(line string) { l.view.Log(step + " | " + line) })
	defer out.Close()
	note := func(s string) { l.view.Log(step + ": " + s) }
	said := ""
	f := &taskfollow.Follower{
		Client: l.clients.Client, Kube: l.clients.Kube, Logs: true, Out: out, Note: note,
		OnChange: func(t *schedv1.AgentTask) {
			if t.Status.PodName == "" && !t.Status.Phase.Finished() {
				if why := taskfollow.Explain(t); why != said {
					said = why
					note("waiting for its pod: " + why)
				}
			}
		},
	}
	if _, err := f.Run(ctx, l.ns, task); err != nil && ctx.Err() == nil {
		note(fmt.Sprintf("cannot follow agenttask %s: %v", task, err))
	}
}

// wait lets the followers finish for up to grace, then stops them.
func (l *stepLogs) wait(stop context.CancelFunc, grace time.Duration) {
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		stop()
		<-done
	}
}

// width is the terminal's width, so the view's lines do not wrap.
func width(w io.Writer, tty bool) int {
	f, ok := w.(*os.File)
	if !tty || !ok {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return cols
}
