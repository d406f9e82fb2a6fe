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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/waitfor"
)

// Wait follows ud with a watch until it is Running (Stopped when its spec
// asks for that), exit 0; Degraded, or rolled back by the operator
// (spec.rollback: OnDegraded), exit 10; or timeout passes, exit 12.
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

	obj := &schedv1.UserDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ud.Namespace, Name: ud.Name}}
	err := waitfor.Object(ctx, c, obj, &schedv1.UserDeploymentList{}, w.condition)
	switch {
	case err == nil:
		fmt.Fprintf(w.out, "Next: kubectl sched describe ud %s%s\n", ud.Name, w.nsFlag)
		return nil
	case ctx.Err() != nil:
		return cmdutil.Errorf(cmdutil.ExitWatchTimeout,
			fmt.Sprintf("It may still get there: 'kubectl sched get ud %s%s -w' follows it, and 'kubectl sched describe ud %s%s' says what it waits for.", ud.Name, w.nsFlag, ud.Name, w.nsFlag),
			"timed out after %v waiting for userdeployment %q to be %s (last phase: %s)", timeout, ud.Name, w.target(), w.lastPhase())
	case errors.Is(err, waitfor.ErrDeleted), apierrors.IsNotFound(err) && !cmdutil.NotInstalled(err):
		// Gone before the watch began, or while it ran.
		return cmdutil.Errorf(cmdutil.ExitFailed, "", "userdeployment %q was deleted while waiting for it", ud.Name)
	}
	return cmdutil.API(err, "watch", fmt.Sprintf("userdeployment %q", ud.Name))
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

func (f *follower) condition(ud *schedv1.UserDeployment) (bool, error) {
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
	case st.RolledBack != nil && st.RolledBack.FromRevision == st.CurrentRevision:
		// The operator runs an earlier revision: this one failed.
		msg := fmt.Sprintf("revision %d did not become Running and was rolled back to revision %d", st.RolledBack.FromRevision, st.RolledBack.ToRevision)
		if c := apimeta.FindStatusCondition(st.Conditions, schedv1.ConditionRolledBack); c != nil && c.Message != "" {
			msg = printing.OneLine(c.Message)
		}
		return false, cmdutil.Errorf(cmdutil.ExitFailed,
			fmt.Sprintf("'kubectl sched history %s%s' lists the revisions; 'kubectl sched describe ud %s%s' shows the events.", f.name, f.nsFlag, f.name, f.nsFlag),
			"userdeployment %q was rolled back (spec.rollback: OnDegraded): %s", f.name, msg)
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
