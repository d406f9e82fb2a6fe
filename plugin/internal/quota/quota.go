// Package quota explains a ResourceQuota's refusal of a create: which quota,
// its limit, what counts against it in the namespace (finished runs count
// until their TTL deletes them), the commands to list and delete them, and
// when the first of them goes by itself.
package quota

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

// Resources of the count/ kinds a tier limits.
const (
	CountTasks     = "count/agenttasks." + schedv1.GroupName
	CountWorkflows = "count/workflows." + schedv1.GroupName
	CountApps      = "count/userdeployments." + schedv1.GroupName
	CountSchedules = "count/cronworkflows." + schedv1.GroupName
)

// Refused returns err, from a create in namespace ns, as an error with exit
// code cmdutil.ExitQuota that says what to do, or nil when err is not a
// quota's refusal. It reads what counts with c (best effort: what it may
// not read, it leaves out).
func Refused(ctx context.Context, c client.Reader, ns string, err error, now time.Time) error {
	q := cmdutil.QuotaRefusalOf(err)
	if q == nil {
		return nil
	}
	if len(q.Unknown) > 0 {
		return &cmdutil.Error{Code: cmdutil.ExitQuota, Err: err,
			Msg: fmt.Sprintf("namespace %s: quota %s has not counted %s yet, so the API server refuses creates of it; nothing was created",
				ns, q.Quota, strings.Join(q.Unknown, ", ")),
			Hint: fmt.Sprintf("Right after 'kubectl sched install' or a new tenant the cluster's quota controller needs up to a minute to find new kinds (the operator asks it to recount): run the command again in a moment. 'kubectl describe resourcequota %s -n %s' shows what it counts.", q.Quota, ns)}
	}
	var msgs, hints []string
	for _, e := range q.Exceeded {
		what := e.Resource
		if n := noun(e.Resource); n != "" {
			what = n + " (" + e.Resource + ")"
		}
		what = strings.TrimSuffix(what, ")")
		msgs = append(msgs, fmt.Sprintf("namespace %s is at its limit of %s %s, quota %s): %s in use; nothing was created",
			ns, e.Limited, what, q.Quota, e.Used))
		hints = append(hints, explain(ctx, c, ns, e.Resource, now)...)
	}
	hints = append(hints, fmt.Sprintf("'kubectl sched tenant describe %s' (or 'kubectl describe resourcequota %s -n %s') shows the limits and what counts.", ns, q.Quota, ns))
	return &cmdutil.Error{Code: cmdutil.ExitQuota, Err: err, Msg: strings.Join(msgs, "\n"), Hint: strings.Join(compact(hints), "\n")}
}

// noun names what a quota resource counts, for a person; "" when the
// resource's own name says it.
func noun(resource string) string {
	return map[string]string{CountTasks: "AgentTasks", CountWorkflows: "Workflows", CountApps: "apps", CountSchedules: "CronWorkflows", "count/jobs.batch": "Jobs"}[resource]
}

// explain says what counts against resource in ns and what to do.
func explain(ctx context.Context, c client.Reader, ns, resource string, now time.Time) []string {
	switch resource {
	case CountWorkflows:
		var list schedv1.WorkflowList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return []string{"Every Workflow counts, finished ones too, until its TTL deletes it. List them: kubectl sched get workflows -n " + ns}
		}
		var runs []run
		for _, wf := range list.Items {
			runs = append(runs, run{name: wf.Name, finished: wf.Status.Phase.Finished(), expiry: wf.Status.Expiry})
		}
		return advice(runs, len(runs), "Workflows", "workflow", ns, now, "kubectl sched workflow stop NAME -n "+ns)
	case CountTasks:
		var list schedv1.AgentTaskList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return []string{"Every AgentTask counts, finished ones and workflow steps' tasks too. List them: kubectl sched get agenttasks -n " + ns}
		}
		var runs []run
		steps := 0
		for _, t := range list.Items {
			if ref := metav1.GetControllerOf(&t); ref != nil && ref.Kind == "Workflow" && ref.APIVersion == schedv1.GroupVersion.String() {
				steps++
				continue
			}
			runs = append(runs, run{name: t.Name, finished: t.Status.Phase.Finished(), expiry: t.Status.Expiry})
		}
		out := advice(runs, len(list.Items), "AgentTasks", "agenttask", ns, now, "kubectl sched task cancel NAME -n "+ns)
		if steps > 0 {
			out = append(out, fmt.Sprintf("Workflow steps' tasks among them: %d; they go with their workflow (delete the workflow to free them).", steps))
		}
		return out
	case CountApps:
		return []string{
			"Every app counts while it exists, stopped ones too.",
			"List them: kubectl sched get userdeployments -n " + ns,
			"Delete one you no longer need: kubectl sched delete userdeployment NAME -n " + ns,
		}
	case CountSchedules:
		return []string{
			"Every CronWorkflow counts while it exists, suspended ones too; its runs count as Workflows.",
			"List them: kubectl sched get cronworkflows -n " + ns,
			"Delete one you no longer need: kubectl sched delete cronworkflow NAME -n " + ns,
		}
	case "count/jobs.batch":
		return []string{"Each AgentTask's Job counts until the task is deleted (its TTL with cleanup Task, or the tier's), or until spec.ttlAfterFinished with cleanup Job deletes the Job alone. Delete finished tasks: kubectl sched delete agenttask NAME -n " + ns}
	}
	if strings.HasPrefix(resource, "count/") {
		return []string{fmt.Sprintf("Every object of %s in the namespace counts: delete those you no longer need.", strings.TrimPrefix(resource, "count/"))}
	}
	return []string{fmt.Sprintf("What runs now uses %s: the pods of running tasks, workflow steps and apps (kubectl get pods -n %s). Wait for runs to finish, stop an app you do not need now (kubectl sched stop APP -n %s), or ask for less.", resource, ns, ns)}
}

// run is a task or workflow that counts.
type run struct {
	name     string
	finished bool
	expiry   *schedv1.Expiry
}

// advice says how many of runs (of total that count) have finished, when
// the first finished one goes by its TTL, and the commands to list,
// delete and stop them.
func advice(runs []run, total int, plural, kind, ns string, now time.Time, stop string) []string {
	var finished, noTTL []run
	for _, r := range runs {
		if r.finished {
			finished = append(finished, r)
			if r.expiry == nil || r.expiry.DeleteTime == nil {
				noTTL = append(noTTL, r)
			}
		}
	}
	var out []string
	switch {
	case len(finished) == 0:
		out = append(out, fmt.Sprintf("None of the %d %s has finished: wait for one to finish and its TTL to delete it, or stop one (%s) and delete it.", total, plural, stop))
	default:
		line := fmt.Sprintf("%d of the %d %s have finished; finished ones count until their TTL deletes them.", len(finished), total, plural)
		if first := firstToGo(finished); first != nil {
			line += fmt.Sprintf(" The first to go is %s, %s (%s).", first.name, in(first.expiry.DeleteTime.Time, now), tiers.Why(first.expiry))
		}
		if len(noTTL) > 0 {
			line += fmt.Sprintf(" %d of them have no TTL and stay until deleted.", len(noTTL))
		}
		out = append(out, line)
	}
	out = append(out,
		fmt.Sprintf("List them: kubectl sched get %ss -n %s", kind, ns),
		fmt.Sprintf("Delete a finished one: kubectl sched delete %s NAME -n %s", kind, ns))
	return out
}

func firstToGo(runs []run) *run {
	var first *run
	for i := range runs {
		e := runs[i].expiry
		if e == nil || e.DeleteTime == nil {
			continue
		}
		if first == nil || e.DeleteTime.Before(first.expiry.DeleteTime) {
			first = &runs[i]
		}
	}
	return first
}

// in says when t comes: "in 14m", or "any moment now" once it is due.
func in(t, now time.Time) string {
	if !t.After(now) {
		return "any moment now"
	}
	return "in " + duration.HumanDuration(t.Sub(now))
}

func compact(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l != "" && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}
