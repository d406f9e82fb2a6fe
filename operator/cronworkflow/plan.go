package cronworkflow

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kubectl-sched/kubectl-sched/api/cronschedule"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
)

// maxMissed is how many missed schedule times are counted, as the CronJob
// controller counts them; past it an event says so, and still only the
// latest runs.
const maxMissed = 100

// Default history limits, as the CRD defaults them.
const (
	defaultSucceededKept = 3
	defaultFailedKept    = 1
)

// event is one Event the reconcile records. related is the run it is
// about: events of one reason about different runs stay apart (the
// recorder merges those that differ only in their note).
type event struct {
	typ, reason, action, note string
	related                   runtime.Object
}

// deletion is a run to delete, and why.
type deletion struct {
	run *schedv1.Workflow
	ev  event
}

// plan is what one reconcile does: the decision of decide, which reads
// nothing but its arguments.
type plan struct {
	status schedv1.CronWorkflowStatus
	// deletes are the running runs Replace stops, then the finished runs
	// past the history limits.
	deletes []deletion
	// create is the run to start for scheduled, nil when none is due.
	create    *schedv1.Workflow
	scheduled time.Time
	// missed is how many schedule times passed since the last run, capped
	// at maxMissed+1.
	missed int
	events []event
	// requeueAt is the next schedule time; zero when there is none.
	requeueAt time.Time
	loc       *time.Location
}

// decide reads the CronWorkflow and its runs at now and says what to do.
func decide(cw *schedv1.CronWorkflow, runs []*schedv1.Workflow, now time.Time) plan {
	p := plan{status: *cw.Status.DeepCopy()}
	p.status.ObservedGeneration = cw.Generation
	active, succeeded, failed := sortRuns(runs)
	for _, r := range succeeded {
		if done := r.Status.CompletionTime; done != nil && (p.status.LastSuccessfulTime == nil || done.After(p.status.LastSuccessfulTime.Time)) {
			p.status.LastSuccessfulTime = done.DeepCopy()
		}
	}
	p.trim(succeeded, ptr.Deref(cw.Spec.SuccessfulRunsHistoryLimit, defaultSucceededKept), "successfulRunsHistoryLimit")
	p.trim(failed, ptr.Deref(cw.Spec.FailedRunsHistoryLimit, defaultFailedKept), "failedRunsHistoryLimit")
	active = p.schedule(cw, runs, active, now)
	p.status.ActiveCount = int32(len(active))
	p.status.Active = nil
	for _, r := range active[:min(len(active), schedv1.MaxActiveRunsListed)] {
		p.status.Active = append(p.status.Active, runRef(r))
	}
	return p
}

// schedule decides whether a run starts now and returns the runs that go
// on running (those Replace stops are not).
func (p *plan) schedule(cw *schedv1.CronWorkflow, runs, active []*schedv1.Workflow, now time.Time) []*schedv1.Workflow {
	st := &p.status
	sched, err := cronschedule.Parse(cw.Spec.Schedule, cw.Spec.TimeZone)
	if err != nil {
		st.NextScheduleTime = nil
		reason := schedv1.ReasonInvalidSchedule
		var e *cronschedule.Error
		if errors.As(err, &e) && e.Field == cronschedule.FieldTimeZone {
			reason = schedv1.ReasonUnknownTimeZone
		}
		p.ready(cw, metav1.ConditionFalse, reason, err.Error()+"; no run starts until it is fixed")
		return active
	}
	p.loc = sched.Location()
	if cw.Spec.Suspend {
		st.NextScheduleTime = nil
		p.ready(cw, metav1.ConditionFalse, schedv1.ReasonSuspended, "spec.suspend is true: no new run starts (running ones go on); set it to false to resume")
		return active
	}

	earliest := cw.CreationTimestamp.Time
	if st.LastScheduleTime != nil {
		earliest = st.LastScheduleTime.Time
	}
	if d := cw.Spec.StartingDeadlineSeconds; d != nil {
		if floor := now.Add(-time.Duration(*d) * time.Second); floor.After(earliest) {
			earliest = floor
		}
	}
	latest, missed := sched.Latest(earliest, now, maxMissed)
	p.missed = missed
	st.NextScheduleTime = nil
	if next := sched.Next(now); !next.IsZero() {
		st.NextScheduleTime = &metav1.Time{Time: next}
		p.requeueAt = next
	}
	if missed > maxMissed {
		p.events = append(p.events, event{corev1.EventTypeWarning, schedv1.ReasonMissedSchedule, "Schedule", fmt.Sprintf(
			"more than %d schedule times passed since %s (the operator was down, the clock jumped, or the CronWorkflow was suspended); only the latest, %s, runs. Set spec.startingDeadlineSeconds to bound how late a run may start",
			maxMissed, p.format(earliest), p.format(latest)), nil})
	}
	if latest.IsZero() {
		// Nothing due. Ready keeps what the last attempt met (a refused
		// run) until the next one, and otherwise says when that is.
		if c := readyCondition(st); c == nil || c.Status == metav1.ConditionTrue || stateReasons[c.Reason] {
			p.ready(cw, metav1.ConditionTrue, schedv1.ReasonScheduled, p.nextMessage())
		}
		return active
	}

	name := names.CronRun(cw.Name, latest)
	if slices.ContainsFunc(runs, func(r *schedv1.Workflow) bool { return r.Name == name }) {
		// Made before a restart, whose status write was lost.
		st.LastScheduleTime = &metav1.Time{Time: latest}
		p.ready(cw, metav1.ConditionTrue, schedv1.ReasonScheduled, p.nextMessage())
		return active
	}
	switch policy := cw.Spec.ConcurrencyPolicy; {
	case policy == schedv1.ConcurrencyForbid && len(active) > 0:
		p.events = append(p.events, event{corev1.EventTypeNormal, schedv1.ReasonRunSkipped, "Skip", fmt.Sprintf(
			"the run for %s waits: %s is still running and concurrencyPolicy is Forbid; it starts when no run is left, unless startingDeadlineSeconds or the next schedule time passes first",
			p.format(latest), active[0].Name), active[0]})
		p.ready(cw, metav1.ConditionTrue, schedv1.ReasonScheduled, p.nextMessage())
		return active
	case policy == schedv1.ConcurrencyReplace:
		for _, r := range active {
			p.deletes = append(p.deletes, deletion{r, event{corev1.EventTypeNormal, schedv1.ReasonRunReplaced, "Delete", fmt.Sprintf(
				"deleted %s, still running, to start the run for %s: concurrencyPolicy is Replace", r.Name, p.format(latest)), r}})
		}
		active = nil
	}
	p.create = newRun(cw, name, latest)
	p.scheduled = latest
	return active
}

// stateReasons are the Ready reasons that say what the spec is, not what
// the last run attempt met: they give way as soon as the spec does.
var stateReasons = map[string]bool{
	schedv1.ReasonInvalidSchedule: true,
	schedv1.ReasonUnknownTimeZone: true,
	schedv1.ReasonSuspended:       true,
}

// newRun is the Workflow a CronWorkflow starts for a schedule time; the
// controller adds the owner reference.
func newRun(cw *schedv1.CronWorkflow, name string, scheduled time.Time) *schedv1.Workflow {
	return &schedv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   cw.Namespace,
			Annotations: map[string]string{schedv1.AnnotationScheduledTime: scheduled.UTC().Format(time.RFC3339)},
		},
		Spec: *cw.Spec.WorkflowSpec.DeepCopy(),
	}
}

// started records that the run p.create was made: it is the latest, and
// it runs.
func (p *plan) started(cw *schedv1.CronWorkflow) {
	st := &p.status
	st.LastScheduleTime = &metav1.Time{Time: p.scheduled}
	st.Active = append([]schedv1.CronWorkflowRun{{Name: p.create.Name, ScheduledTime: &metav1.Time{Time: p.scheduled}}}, st.Active...)
	st.Active = st.Active[:min(len(st.Active), schedv1.MaxActiveRunsListed)]
	st.ActiveCount++
	p.ready(cw, metav1.ConditionTrue, schedv1.ReasonScheduled, p.nextMessage())
	if p.missed > 1 {
		p.events = append(p.events, event{corev1.EventTypeNormal, schedv1.ReasonMissedSchedule, "Schedule", fmt.Sprintf(
			"%s schedule times passed since the last run; only the latest, %s, runs", missedCount(p.missed), p.format(p.scheduled)), nil})
	}
	p.events = append(p.events, event{corev1.EventTypeNormal, schedv1.ReasonCreated, "Create", fmt.Sprintf("created run %s for %s", p.create.Name, p.format(p.scheduled)), p.create})
}

func missedCount(n int) string {
	if n > maxMissed {
		return fmt.Sprintf("more than %d", maxMissed)
	}
	return fmt.Sprint(n)
}

// refused records that the run for scheduled could not be made. skip
// gives the schedule time up (only a new spec or name can help);
// otherwise it is tried again.
func (p *plan) refused(cw *schedv1.CronWorkflow, reason, msg string, skip bool) {
	if skip {
		p.status.LastScheduleTime = &metav1.Time{Time: p.scheduled}
	}
	p.ready(cw, metav1.ConditionFalse, reason, msg)
}

func (p *plan) nextMessage() string {
	if p.status.NextScheduleTime == nil {
		return "runs start on schedule"
	}
	return "runs start on schedule; the next at " + p.format(p.status.NextScheduleTime.Time)
}

// format writes t in the schedule's time zone.
func (p *plan) format(t time.Time) string {
	loc := p.loc
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format("2006-01-02 15:04:05 MST")
}

func (p *plan) ready(cw *schedv1.CronWorkflow, s metav1.ConditionStatus, reason, msg string) {
	status.SetCondition(&p.status.Conditions, cw.Generation, metav1.Condition{Type: schedv1.ConditionReady, Status: s, Reason: reason, Message: msg})
}

func readyCondition(st *schedv1.CronWorkflowStatus) *metav1.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == schedv1.ConditionReady {
			return &st.Conditions[i]
		}
	}
	return nil
}

func runRef(r *schedv1.Workflow) schedv1.CronWorkflowRun {
	ref := schedv1.CronWorkflowRun{Name: r.Name}
	if at, err := time.Parse(time.RFC3339, r.Annotations[schedv1.AnnotationScheduledTime]); err == nil {
		ref.ScheduledTime = &metav1.Time{Time: at}
	}
	return ref
}

// trim deletes the finished runs past limit, oldest first kept last.
func (p *plan) trim(finished []*schedv1.Workflow, limit int32, field string) {
	for i, r := range finished {
		if i < int(limit) {
			continue
		}
		p.deletes = append(p.deletes, deletion{r, event{corev1.EventTypeNormal, schedv1.ReasonDeleted, "Delete", fmt.Sprintf(
			"deleted run %s (%s): %s keeps %d", r.Name, r.Status.Phase, field, limit), r}})
	}
}

// sortRuns splits the runs into those not finished (newest first) and the
// finished ones that Succeeded and that did not (latest finished first).
// Runs being deleted are in none.
func sortRuns(runs []*schedv1.Workflow) (active, succeeded, failed []*schedv1.Workflow) {
	for _, r := range runs {
		switch {
		case !r.DeletionTimestamp.IsZero():
		case !r.Status.Phase.Finished():
			active = append(active, r)
		case r.Status.Phase == schedv1.WorkflowSucceeded:
			succeeded = append(succeeded, r)
		default:
			failed = append(failed, r)
		}
	}
	newestFirst := func(at func(*schedv1.Workflow) time.Time) func(a, b *schedv1.Workflow) int {
		return func(a, b *schedv1.Workflow) int {
			return cmp.Or(at(b).Compare(at(a)), cmp.Compare(b.Name, a.Name))
		}
	}
	created := func(r *schedv1.Workflow) time.Time { return r.CreationTimestamp.Time }
	ended := func(r *schedv1.Workflow) time.Time {
		if r.Status.CompletionTime != nil {
			return r.Status.CompletionTime.Time
		}
		return r.CreationTimestamp.Time
	}
	slices.SortFunc(active, newestFirst(created))
	slices.SortFunc(succeeded, newestFirst(ended))
	slices.SortFunc(failed, newestFirst(ended))
	return active, succeeded, failed
}
