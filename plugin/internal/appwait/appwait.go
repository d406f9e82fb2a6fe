// Package appwait follows a UserDeployment until it reaches the phase its
// spec asks for (Running, or Stopped), for deploy, stop, start and restart.
package appwait

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// Wait follows ud with a watch until it is Running (Stopped when its spec
// asks for that), exit 0; Degraded, exit 10; or timeout passes, exit 12.
// It prints to out one line per change of phase, readiness or what the app
// waits for (waitingFor), and the URL as soon as the status has one. A
// status older than the spec is ignored. The operator decides what is
// Degraded: a cause that may clear by itself is, only past the app's
// progress deadline.
// nsFlag is " -n NS" when the user named the namespace, for hints.
func Wait(ctx context.Context, c client.WithWatch, ud *schedv1.UserDeployment, timeout time.Duration, out io.Writer, nsFlag string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	w := &follower{out: out, name: ud.Name, nsFlag: nsFlag, stopped: ud.Spec.State == schedv1.StateStopped}
	fmt.Fprintf(w.out, "Waiting for userdeployment %q to be %s...\n", ud.Name, w.target())

	lw := listWatch(c, ud.Namespace, ud.Name)
	_, err := watchtools.UntilWithSync(ctx, lw, &schedv1.UserDeployment{}, nil, w.condition)
	switch {
	case err == nil:
		fmt.Fprintf(w.out, "Next: kubectl sched describe ud %s%s\n", ud.Name, w.nsFlag)
		return nil
	case errors.Is(err, wait.ErrWaitTimeout) || errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return cmdutil.Errorf(cmdutil.ExitWatchTimeout,
			fmt.Sprintf("It may still get there: 'kubectl sched get ud %s%s -w' follows it, and 'kubectl sched describe ud %s%s' says what it waits for.", ud.Name, w.nsFlag, ud.Name, w.nsFlag),
			"timed out after %v waiting for userdeployment %q to be %s (last phase: %s)", timeout, ud.Name, w.target(), w.lastPhase())
	}
	return err
}

// listWatch lists and watches the one UserDeployment, by name, through
// the controller-runtime client.
func listWatch(c client.WithWatch, namespace, name string) cache.ListerWatcher {
	sel := fields.OneTermEqualSelector("metadata.name", name)
	opts := func(raw metav1.ListOptions) *client.ListOptions {
		return &client.ListOptions{Namespace: namespace, FieldSelector: sel, Raw: &raw}
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, raw metav1.ListOptions) (runtime.Object, error) {
			list := &schedv1.UserDeploymentList{}
			return list, c.List(ctx, list, opts(raw))
		},
		WatchFuncWithContext: func(ctx context.Context, raw metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, &schedv1.UserDeploymentList{}, opts(raw))
		},
	}
}

// waitingFor is what a Progressing app waits out before its progress
// deadline (a node, a claim to bind, containers being created): its Ready
// condition's reason and message, when the reason names such a cause
// rather than the rollout itself.
func waitingFor(st schedv1.UserDeploymentStatus) string {
	if st.Phase != schedv1.UserDeploymentProgressing {
		return ""
	}
	c := apimeta.FindStatusCondition(st.Conditions, schedv1.ConditionReady)
	if c == nil || c.Message == "" || c.Reason == schedv1.ReasonReconciling || c.Reason == schedv1.ReasonPending {
		return ""
	}
	return printing.OneLine(c.Reason + ": " + c.Message)
}

// follower turns watch events into progress lines and the outcome.
type follower struct {
	out     io.Writer
	name    string
	nsFlag  string
	stopped bool // the spec asks for Stopped, so that is the goal

	last    string
	urlSeen bool
	status  schedv1.UserDeploymentStatus
}

func (f *follower) target() string {
	if f.stopped {
		return string(schedv1.UserDeploymentStopped)
	}
	return string(schedv1.UserDeploymentRunning)
}

func (f *follower) lastPhase() string {
	if f.status.Phase == "" {
		return "none reported yet; is the operator running? 'kubectl sched version' checks"
	}
	return string(f.status.Phase)
}

func (f *follower) condition(ev watch.Event) (bool, error) {
	if ev.Type == watch.Deleted {
		return false, cmdutil.Errorf(cmdutil.ExitFailed, "", "userdeployment %q was deleted while waiting for it", f.name)
	}
	ud, ok := ev.Object.(*schedv1.UserDeployment)
	if !ok {
		return false, nil
	}
	// A status older than the spec describes the previous deploy.
	if ud.Status.ObservedGeneration < ud.Generation {
		return false, nil
	}
	st := ud.Status
	f.status = st
	st.Phase, st.Ready = schedv1.UserDeploymentPhase(printing.Line(string(st.Phase))), printing.Line(st.Ready)
	line := string(st.Phase)
	if st.Ready != "" {
		line += fmt.Sprintf(" (%s services ready)", st.Ready)
	}
	if why := waitingFor(st); why != "" {
		line += ": " + why
	}
	if st.Phase != "" && line != f.last {
		f.last = line
		fmt.Fprintf(f.out, "userdeployment %q: %s\n", f.name, line)
	}
	if len(st.URLs) > 0 && !f.urlSeen {
		f.urlSeen = true
		fmt.Fprintf(f.out, "URL: %s\n", printing.Line(strings.Join(st.URLs, " ")))
	}
	switch {
	case string(st.Phase) == f.target():
		return true, nil
	case st.Phase == schedv1.UserDeploymentDegraded:
		msg := "no reason given"
		if c := apimeta.FindStatusCondition(st.Conditions, schedv1.ConditionReady); c != nil && c.Message != "" {
			msg = printing.OneLine(c.Message)
		}
		return false, cmdutil.Errorf(cmdutil.ExitFailed,
			fmt.Sprintf("'kubectl sched describe ud %s%s' shows the failing service and recent events.", f.name, f.nsFlag),
			"userdeployment %q is Degraded: %s", f.name, msg)
	}
	return false, nil
}
