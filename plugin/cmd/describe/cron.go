package describe

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/cronschedule"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// cronWorkflow shows a schedule: when it ran and runs next (in its time
// zone), the workflow each run runs, and the runs it keeps.
func (d *describer) cronWorkflow(w *printing.DescribeWriter, cw *schedv1.CronWorkflow) {
	w.Header(cw, "CronWorkflow")
	s, st := cw.Spec, cw.Status
	loc, _ := cronschedule.Location(s.TimeZone)
	if loc == nil {
		loc = time.UTC
	}
	inZone := func(t *metav1.Time) string {
		if t == nil {
			return ""
		}
		return t.In(loc).Format("2006-01-02 15:04:05 MST")
	}
	w.Field(0, "Schedule", s.Schedule)
	w.Field(0, "Time Zone", cmp.Or(s.TimeZone, "UTC (the default)"))
	w.Field(0, "Concurrency Policy", string(cmp.Or(s.ConcurrencyPolicy, schedv1.ConcurrencyAllow)))
	w.Field(0, "Suspend", fmt.Sprint(s.Suspend))
	if s.StartingDeadlineSeconds != nil {
		w.Field(0, "Starting Deadline", printing.FormatDuration(time.Duration(*s.StartingDeadlineSeconds)*time.Second))
	}
	w.Field(0, "Runs Kept", fmt.Sprintf("%d succeeded, %d failed", ptr.Deref(s.SuccessfulRunsHistoryLimit, 3), ptr.Deref(s.FailedRunsHistoryLimit, 1)))
	w.Field(0, "Last Schedule Time", inZone(st.LastScheduleTime))
	w.Optional(0, "Last Successful Time", inZone(st.LastSuccessfulTime))
	next := inZone(st.NextScheduleTime)
	if next != "" && st.NextScheduleTime.After(time.Now()) {
		next += " (in " + duration.HumanDuration(time.Until(st.NextScheduleTime.Time)) + ")"
	}
	w.Field(0, "Next Schedule Time", next)
	var active []string
	for _, a := range st.Active {
		active = append(active, a.Name)
	}
	if more := int(st.ActiveCount) - len(active); more > 0 {
		active = append(active, fmt.Sprintf("and %d more", more))
	}
	w.Field(0, "Active", strings.Join(active, ", "))

	wf := s.WorkflowSpec
	w.Line(0, "Workflow:")
	params := map[string]string{}
	for _, p := range wf.Params {
		params[p.Name] = p.Value
	}
	w.MapField(1, "Params", params, "=")
	if wf.Timeout != nil {
		w.Field(1, "Timeout", wf.Timeout.Duration.String())
	}
	if wf.TTLAfterFinished != nil {
		w.Field(1, "TTL After Finished", wf.TTLAfterFinished.Duration.String())
	}
	rows := [][]string{}
	for i, step := range wf.Steps {
		rows = append(rows, []string{fmt.Sprint(i), step.Name, printing.OrDash(strings.Join(step.DependsOn, ",")), step.Task.Image})
	}
	w.Table(1, "Steps", []string{"#", "Name", "After", "Image"}, rows)
	w.Conditions(st.Conditions)
	d.cronRuns(w, cw, inZone)
}

// cronRuns lists the Workflows the CronWorkflow controls, newest first.
func (d *describer) cronRuns(w *printing.DescribeWriter, cw *schedv1.CronWorkflow, inZone func(*metav1.Time) string) {
	var list schedv1.WorkflowList
	if err := d.clients.Client.List(d.ctx, &list, client.InNamespace(cw.Namespace)); err != nil {
		w.Line(0, "Runs:\t%s", listError(err, "workflows."+schedv1.GroupName))
		return
	}
	var runs []schedv1.Workflow
	for _, wf := range list.Items {
		if metav1.IsControlledBy(&wf, cw) {
			runs = append(runs, wf)
		}
	}
	slices.SortFunc(runs, func(a, b schedv1.Workflow) int {
		return cmp.Or(b.CreationTimestamp.Compare(a.CreationTimestamp.Time), strings.Compare(b.Name, a.Name))
	})
	rows := [][]string{}
	for _, r := range runs {
		trigger := "manual"
		if at, err := time.Parse(time.RFC3339, r.Annotations[schedv1.AnnotationScheduledTime]); err == nil {
			trigger = inZone(&metav1.Time{Time: at})
		}
		rows = append(rows, []string{r.Name, trigger, printing.OrDash(string(r.Status.Phase)), printing.OrDash(r.Status.Progress),
			printing.OrDash(inZone(r.Status.StartTime)), printing.OrDash(elapsed(r.Status.StartTime, r.Status.CompletionTime))})
	}
	w.Table(0, "Runs", []string{"Name", "Scheduled For", "Phase", "Progress", "Started", "Duration"}, rows)
}
