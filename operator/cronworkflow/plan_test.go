package cronworkflow

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// at is a time on 27 November 2026, UTC: "02:00" or "02:00:30".
func at(hm string) time.Time {
	layout := "15:04"
	if strings.Count(hm, ":") == 2 {
		layout = "15:04:05"
	}
	t, err := time.Parse("2006-01-02 "+layout, "2026-11-27 "+hm)
	if err != nil {
		panic(err)
	}
	return t
}

func mtime(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }

// cron is an hourly CronWorkflow created at 01:30 with UID "cw".
func cron(edit ...func(*CronWorkflowWrapper)) *schedv1.CronWorkflow {
	w := MakeCronWorkflow("nightly", "ns", "0 * * * *").Step("build", "busybox").Created(at("01:30")).History(3, 1)
	w.UID = "cw"
	for _, e := range edit {
		e(w)
	}
	return w.Obj()
}

func lastRun(t time.Time) func(*CronWorkflowWrapper) {
	return func(w *CronWorkflowWrapper) { w.Status.LastScheduleTime = mtime(t) }
}

// run is a run of cron() for the schedule time t, in phase (created at t,
// finished ten minutes later when the phase is final).
func run(t time.Time, phase schedv1.WorkflowPhase) *schedv1.Workflow {
	wf := MakeWorkflow(names.CronRun("nightly", t), "ns").Step("build", "busybox").Obj()
	wf.UID = types.UID("run-" + fmt.Sprint(t.Unix()))
	wf.CreationTimestamp = metav1.NewTime(t)
	wf.Annotations = map[string]string{schedv1.AnnotationScheduledTime: t.Format(time.RFC3339)}
	wf.Status.Phase = phase
	if phase.Finished() {
		wf.Status.CompletionTime = mtime(t.Add(10 * time.Minute))
	}
	return wf
}

type want struct {
	create     string // the run's name, "" for none
	deletes    []string
	ready      metav1.ConditionStatus
	reason     string
	next       string // "" for unset
	last       string // status.lastScheduleTime, "" for unset
	active     int32
	eventWords []string // "Reason: words in its note"
}

// TestDecide: the schedule decision for one reconcile at a fake clock's
// time: the next time, the missed runs, the concurrency policies, the
// history limits, and what stops runs.
func TestDecide(t *testing.T) {
	cases := map[string]struct {
		cw   *schedv1.CronWorkflow
		runs []*schedv1.Workflow
		now  time.Time
		want want
	}{
		"not due yet": {
			cw: cron(), now: at("01:59:59"),
			want: want{ready: metav1.ConditionTrue, reason: schedv1.ReasonScheduled, next: "02:00"},
		},
		"due at the schedule time": {
			cw: cron(), now: at("02:00"),
			want: want{create: "nightly-1795744800", ready: metav1.ConditionTrue, reason: schedv1.ReasonScheduled, next: "03:00", last: "02:00", active: 1,
				eventWords: []string{"Created: created run nightly-1795744800 for 2026-11-27 02:00:00 UTC"}},
		},
		"the creation time is no schedule time": {
			cw: cron(func(w *CronWorkflowWrapper) { w.Created(at("02:00")) }), now: at("02:00:30"),
			want: want{ready: metav1.ConditionTrue, reason: schedv1.ReasonScheduled, next: "03:00"},
		},
		"three missed: only the latest starts": {
			cw: cron(lastRun(at("02:00"))), now: at("05:10"),
			want: want{create: names.CronRun("nightly", at("05:00")), ready: metav1.ConditionTrue, reason: schedv1.ReasonScheduled, next: "06:00", last: "05:00", active: 1,
				eventWords: []string{"MissedSchedule: 3 schedule times passed since the last run; only the latest, 2026-11-27 05:00:00 UTC, runs", "Created: "}},
		},
		"too many missed to count: a warning, and still only the latest": {
			cw: cron(func(w *CronWorkflowWrapper) { w.Spec(func(s *schedv1.CronWorkflowSpec) { s.Schedule = "* * * * *" }) }, lastRun(at("01:00"))), now: at("04:00:10"),
			want: want{create: names.CronRun("nightly", at("04:00")), ready: metav1.ConditionTrue, reason: schedv1.ReasonScheduled, next: "04:01", last: "04:00", active: 1,
				eventWords: []string{"MissedSchedule: more than 100 schedule times passed since 2026-11-27 01:00:00 UTC", "MissedSchedule: more than 100 schedule times passed since the last run", "Created: "}},
		},
		"past the starting deadline": {
			cw: cron(lastRun(at("02:00")), func(w *CronWorkflowWrapper) { w.Deadline(300) }), now: at("03:10"),
			want: want{ready: metav1.ConditionTrue, reason: schedv1.ReasonScheduled, next: "04:00", last: "02:00"},
		},
		"within the starting deadline": {
			cw: cron(lastRun(at("02:00")), func(w *CronWorkflowWrapper) { w.Deadline(600) }), now: at("03:09"),
			want: want{create: names.CronRun("nightly", at("03:00")), ready: metav1.ConditionTrue, reason: schedv1.ReasonScheduled, next: "04:00", last: "03:00", active: 1},
		},
		"made before a restart, the status not written": {
			cw: cron(lastRun(at("02:00"))), now: at("03:00:05"),
			runs: []*schedv1.Workflow{run(at("02:00"), schedv1.WorkflowSucceeded), run(at("03:00"), schedv1.WorkflowRunning)},
			want: want{ready: metav1.ConditionTrue, reason: schedv1.ReasonScheduled, next: "04:00", last: "03:00", active: 1},
		},
		"Allow starts beside a running one": {
			cw: cron(lastRun(at("02:00"))), now: at("03:00"),
			runs: []*schedv1.Workflow{run(at("02:00"), schedv1.WorkflowRunning)},
			want: want{create: names.CronRun("nightly", at("03:00")), ready: metav1.ConditionTrue, reason: schedv1.ReasonScheduled, next: "04:00", last: "03:00", active: 2},
		},
		"Forbid skips while one runs": {
			cw: cron(lastRun(at("02:00")), func(w *CronWorkflowWrapper) { w.Concurrency(schedv1.ConcurrencyForbid) }), now: at("03:00"),
			runs: []*schedv1.Workflow{run(at("02:00"), schedv1.WorkflowRunning)},
			want: want{ready: metav1.ConditionTrue, reason: schedv1.ReasonScheduled, next: "04:00", last: "02:00", active: 1,
				eventWords: []string{"RunSkipped: the run for 2026-11-27 03:00:00 UTC waits: nightly-1795744800 is still running and concurrencyPolicy is Forbid"}},
		},
		"Forbid starts once the running one ended": {
			cw: cron(lastRun(at("02:00")), func(w *CronWorkflowWrapper) { w.Concurrency(schedv1.ConcurrencyForbid) }), now: at("03:20"),
			runs: []*schedv1.Workflow{run(at("02:00"), schedv1.WorkflowFailed)},
			want: want{create: names.CronRun("nightly", at("03:00")), ready: metav1.ConditionTrue, reason: schedv1.ReasonScheduled, next: "04:00", last: "03:00", active: 1},
		},
		"Replace deletes the running ones first": {
			cw: cron(lastRun(at("02:00")), func(w *CronWorkflowWrapper) { w.Concurrency(schedv1.ConcurrencyReplace) }), now: at("03:00"),
			runs: []*schedv1.Workflow{run(at("01:00"), schedv1.WorkflowRunning), run(at("02:00"), schedv1.WorkflowPending)},
			want: want{create: names.CronRun("nightly", at("03:00")), deletes: []string{names.CronRun("nightly", at("02:00")), names.CronRun("nightly", at("01:00"))},
				ready: metav1.ConditionTrue, reason: schedv1.ReasonScheduled, next: "04:00", last: "03:00", active: 1,
				eventWords: []string{"Created: ", "RunReplaced: deleted nightly-1795744800, still running, to start the run for 2026-11-27 03:00:00 UTC: concurrencyPolicy is Replace"}},
		},
		"history: the oldest past each limit are deleted": {
			cw: cron(lastRun(at("09:00"))), now: at("09:30"),
			runs: []*schedv1.Workflow{
				run(at("02:00"), schedv1.WorkflowSucceeded), run(at("03:00"), schedv1.WorkflowFailed), run(at("04:00"), schedv1.WorkflowSucceeded),
				run(at("05:00"), schedv1.WorkflowTimeout), run(at("06:00"), schedv1.WorkflowSucceeded), run(at("07:00"), schedv1.WorkflowSucceeded),
				run(at("08:00"), schedv1.WorkflowCancelled), run(at("09:00"), schedv1.WorkflowRunning),
			},
			want: want{deletes: []string{names.CronRun("nightly", at("02:00")), names.CronRun("nightly", at("05:00")), names.CronRun("nightly", at("03:00"))},
				ready: metav1.ConditionTrue, reason: schedv1.ReasonScheduled, next: "10:00", last: "09:00", active: 1,
				eventWords: []string{"Deleted: deleted run nightly-1795744800 (Succeeded): successfulRunsHistoryLimit keeps 3", "Deleted: deleted run nightly-1795755600 (Timeout): failedRunsHistoryLimit keeps 1"}},
		},
		"suspended": {
			cw: cron(lastRun(at("02:00")), func(w *CronWorkflowWrapper) { w.Suspend(true) }), now: at("05:00"),
			want: want{ready: metav1.ConditionFalse, reason: schedv1.ReasonSuspended, last: "02:00"},
		},
		"a schedule only the parser refuses": {
			cw: cron(func(w *CronWorkflowWrapper) { w.Spec(func(s *schedv1.CronWorkflowSpec) { s.Schedule = "5-3 * * * *" }) }), now: at("05:00"),
			want: want{ready: metav1.ConditionFalse, reason: schedv1.ReasonInvalidSchedule},
		},
		"an unknown time zone": {
			cw: cron(func(w *CronWorkflowWrapper) { w.TimeZone("Mars/Olympus_Mons") }), now: at("05:00"),
			want: want{ready: metav1.ConditionFalse, reason: schedv1.ReasonUnknownTimeZone},
		},
		"02:00 in Berlin is 01:00 UTC": {
			cw: cron(func(w *CronWorkflowWrapper) {
				w.TimeZone("Europe/Berlin").Spec(func(s *schedv1.CronWorkflowSpec) { s.Schedule = "0 2 * * *" }).Created(at("00:00"))
			}), now: at("01:00"),
			want: want{create: names.CronRun("nightly", at("01:00")), ready: metav1.ConditionTrue, reason: schedv1.ReasonScheduled, last: "01:00", active: 1,
				next: "01:00", eventWords: []string{"Created: created run nightly-1795741200 for 2026-11-27 02:00:00 CET"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clock := clocktesting.NewFakePassiveClock(tc.now)
			p := decide(tc.cw, tc.runs, clock.Now())
			if p.create != nil {
				p.started(tc.cw) // as the controller does once the create succeeded
			}
			check(t, p, tc.want)
		})
	}
}

func check(t *testing.T, p plan, w want) {
	t.Helper()
	got := want{ready: "", next: "", last: "", active: p.status.ActiveCount}
	if p.create != nil {
		got.create = p.create.Name
		if p.create.Annotations[schedv1.AnnotationScheduledTime] != p.scheduled.UTC().Format(time.RFC3339) {
			t.Errorf("the run's annotations %v do not say it is for %s", p.create.Annotations, p.scheduled)
		}
	}
	for _, d := range p.deletes {
		got.deletes = append(got.deletes, d.run.Name)
	}
	if c := readyCondition(&p.status); c != nil {
		got.ready, got.reason = c.Status, c.Reason
	}
	if n := p.status.NextScheduleTime; n != nil {
		got.next = n.UTC().Format("15:04")
	}
	if l := p.status.LastScheduleTime; l != nil {
		got.last = l.UTC().Format("15:04")
	}
	// Events: each wanted one must be there, reason and words.
	got.eventWords = w.eventWords
	events := p.events
	for _, d := range p.deletes {
		events = append(events, d.ev) // recorded once the delete is done
	}
	for _, ew := range w.eventWords {
		reason, words, _ := strings.Cut(ew, ": ")
		found := false
		for _, e := range events {
			found = found || (e.reason == reason && strings.Contains(e.note, words))
		}
		if !found {
			t.Errorf("no %s event saying %q in %+v", reason, words, events)
		}
	}
	if diff := cmp.Diff(w, got, cmp.AllowUnexported(want{})); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if int(p.status.ActiveCount) < len(p.status.Active) || len(p.status.Active) > schedv1.MaxActiveRunsListed {
		t.Errorf("active %d listed of %d", len(p.status.Active), p.status.ActiveCount)
	}
}

// TestReadyKeepsARefusalUntilTheNextAttempt: a run refused at 02:00 keeps
// Ready False until 03:00's is tried, and then says how that went.
func TestReadyKeepsARefusalUntilTheNextAttempt(t *testing.T) {
	cw := cron()
	clock := clocktesting.NewFakePassiveClock(at("02:00"))
	p := decide(cw, nil, clock.Now())
	p.refused(cw, schedv1.ReasonRejected, "refused", true)
	cw.Status = p.status
	clock.SetTime(at("02:30"))
	p = decide(cw, nil, clock.Now())
	check(t, p, want{ready: metav1.ConditionFalse, reason: schedv1.ReasonRejected, next: "03:00", last: "02:00"})
	clock.SetTime(at("03:00"))
	p = decide(cw, nil, clock.Now())
	p.started(cw)
	check(t, p, want{create: names.CronRun("nightly", at("03:00")), ready: metav1.ConditionTrue, reason: schedv1.ReasonScheduled, next: "04:00", last: "03:00", active: 1,
		eventWords: []string{"Created: "}})
}

// TestADayOnAFakeClock runs the decision through a day of a half-hourly
// schedule, reconciling every 7 minutes, with runs that take 40 minutes
// and an operator that is down from 09:00 to 12:00: every schedule time
// gets exactly one run, but those missed while down, of which only the
// latest (12:00) runs, and with Forbid no run starts while one runs.
func TestADayOnAFakeClock(t *testing.T) {
	for _, policy := range []schedv1.ConcurrencyPolicy{schedv1.ConcurrencyAllow, schedv1.ConcurrencyForbid} {
		t.Run(string(policy), func(t *testing.T) {
			cw := cron(func(w *CronWorkflowWrapper) {
				w.Concurrency(policy).History(100, 100).Created(at("00:00")).
					Spec(func(s *schedv1.CronWorkflowSpec) { s.Schedule = "*/30 * * * *" })
			})
			clock := clocktesting.NewFakeClock(at("00:00"))
			var runs []*schedv1.Workflow
			made := map[string]int{}
			for clock.Now().Before(at("23:59")) {
				clock.Step(7 * time.Minute)
				now := clock.Now()
				if !now.Before(at("09:00")) && now.Before(at("12:00")) {
					continue // the operator is down
				}
				for _, r := range runs {
					if !r.Status.Phase.Finished() && now.Sub(r.CreationTimestamp.Time) >= 40*time.Minute {
						r.Status.Phase, r.Status.CompletionTime = schedv1.WorkflowSucceeded, mtime(now)
					}
				}
				p := decide(cw, runs, now)
				if p.create != nil {
					if policy == schedv1.ConcurrencyForbid {
						for _, r := range runs {
							if !r.Status.Phase.Finished() {
								t.Errorf("%s: %s started while %s runs", now.Format("15:04"), p.create.Name, r.Name)
							}
						}
					}
					made[p.create.Name]++
					p.create.CreationTimestamp = metav1.NewTime(now)
					runs = append(runs, p.create)
					p.started(cw)
				}
				cw.Status = p.status
			}
			for name, n := range made {
				if n != 1 {
					t.Errorf("%s made %d times", name, n)
				}
			}
			for _, missed := range []string{"09:00", "09:30", "10:00", "10:30", "11:00", "11:30"} {
				if made[names.CronRun("nightly", at(missed))] != 0 {
					t.Errorf("the run for %s, missed while the operator was down, was started", missed)
				}
			}
			if made[names.CronRun("nightly", at("12:00"))] != 1 {
				t.Errorf("the latest missed run (12:00) was not started once: %v", made)
			}
			// Allow: every other half hour of the day; Forbid: fewer, as a
			// 40-minute run makes the next wait.
			switch n := len(made); {
			case policy == schedv1.ConcurrencyAllow && n != 48-6:
				t.Errorf("Allow made %d runs, want 42 (48 half hours, 6 missed while down)", n)
			case policy == schedv1.ConcurrencyForbid && (n < 20 || n >= 42):
				t.Errorf("Forbid made %d runs, want fewer than Allow's 42 and at least 20", n)
			}
		})
	}
}
