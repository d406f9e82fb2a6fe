package cronworkflow_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

var (
	env *testenv.Env
	// operator is stopped and started again by TestRestartBetweenCreateAndStatus.
	operator *testenv.Operator
	// clock is the operator's: a run falls due when a test moves it. The
	// tests run one at a time, each from startClock.
	clock = clocktesting.NewFakeClock(time.Now())
)

// The operator runs only the CronWorkflow controller, with its generated
// RBAC, on a bare API server: the runs are Workflows nobody runs, so a
// test says when one ends.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.MainOptions{
		Env: &env, Controllers: []string{"cronworkflow"}, Operator: &operator,
		Options: func(o *app.Options) { o.Clock = clock },
	})
}

// startClock sets the operator's clock to a minute before the first full
// hour after now and returns that hour. The API server stamps creation
// times with the real clock, so the fake one starts from it in each test:
// ahead of it, a CronWorkflow just created would have missed runs.
func startClock() time.Time {
	at := time.Now().Truncate(time.Hour).Add(time.Hour)
	clock.SetTime(at.Add(-time.Minute))
	return at
}

// tick sets the operator's clock to to and nudges the CronWorkflow (an
// annotation), as its timer would at that time: the controller's requeue
// runs on the real clock.
func tick(t *testing.T, cw *schedv1.CronWorkflow, to time.Time) {
	t.Helper()
	if to.Before(clock.Now()) {
		t.Fatalf("the clock only goes forward: %s is before %s", to, clock.Now())
	}
	clock.SetTime(to)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"test.kubectl-sched.dev/tick":%q}}}`, to.Format(time.RFC3339Nano))
	if err := env.Client.Patch(context.Background(), cw.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

func create(t *testing.T, c client.Client, cw *schedv1.CronWorkflow) *schedv1.CronWorkflow {
	t.Helper()
	if err := c.Create(context.Background(), cw); err != nil {
		t.Fatal(err)
	}
	return cw
}

func waitCron(t *testing.T, cw *schedv1.CronWorkflow, what string, cond func(*schedv1.CronWorkflow) bool) *schedv1.CronWorkflow {
	t.Helper()
	got := &schedv1.CronWorkflow{}
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, testenv.Timeout, true, func(ctx context.Context) (bool, error) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cw), got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return cond(got), nil
	})
	if err != nil {
		t.Fatalf("waiting for cronworkflow %s to be %s: %v; last status: %+v", cw.Name, what, err, got.Status)
	}
	return got
}

// runs are the Workflows cw controls, by name.
func runs(t *testing.T, cw *schedv1.CronWorkflow) map[string]*schedv1.Workflow {
	t.Helper()
	var list schedv1.WorkflowList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(cw.Namespace)); err != nil {
		t.Fatal(err)
	}
	out := map[string]*schedv1.Workflow{}
	for i := range list.Items {
		if wf := &list.Items[i]; metav1.IsControlledBy(wf, cw) && wf.DeletionTimestamp.IsZero() {
			out[wf.Name] = wf
		}
	}
	return out
}

func waitRuns(t *testing.T, cw *schedv1.CronWorkflow, what string, cond func(map[string]*schedv1.Workflow) bool) map[string]*schedv1.Workflow {
	t.Helper()
	var got map[string]*schedv1.Workflow
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, testenv.Timeout, true, func(context.Context) (bool, error) {
		got = runs(t, cw)
		return cond(got), nil
	})
	if err != nil {
		t.Fatalf("waiting for the runs of %s: %s: %v; runs: %v", cw.Name, what, err, keys(got))
	}
	return got
}

func keys(m map[string]*schedv1.Workflow) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// finish ends a run in phase, as the Workflow controller would.
func finish(t *testing.T, wf *schedv1.Workflow, phase schedv1.WorkflowPhase) {
	t.Helper()
	wf.Status.Phase = phase
	wf.Status.CompletionTime = &metav1.Time{Time: time.Now()}
	if err := env.Client.Status().Update(context.Background(), wf); err != nil {
		t.Fatal(err)
	}
}

// events are the notes of cw's events with reason.
func events(t *testing.T, cw *schedv1.CronWorkflow, reason string) []string {
	t.Helper()
	var list corev1.EventList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(cw.Namespace)); err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "CronWorkflow" && e.InvolvedObject.Name == cw.Name && e.Reason == reason {
			notes = append(notes, e.Message)
		}
	}
	return notes
}

func waitEvent(t *testing.T, cw *schedv1.CronWorkflow, reason, words string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, testenv.Timeout, true, func(context.Context) (bool, error) {
		for _, n := range events(t, cw, reason) {
			if strings.Contains(n, words) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event saying %q: %v", reason, words, events(t, cw, reason))
	}
}

func ready(cw *schedv1.CronWorkflow) *metav1.Condition {
	return meta.FindStatusCondition(cw.Status.Conditions, schedv1.ConditionReady)
}

func readyIs(status metav1.ConditionStatus, reason string) func(*schedv1.CronWorkflow) bool {
	return func(cw *schedv1.CronWorkflow) bool {
		c := ready(cw)
		return cw.Status.ObservedGeneration == cw.Generation && c != nil && c.Status == status && c.Reason == reason
	}
}

func nextIs(at time.Time) func(*schedv1.CronWorkflow) bool {
	return func(cw *schedv1.CronWorkflow) bool {
		n := cw.Status.NextScheduleTime
		return n != nil && n.Equal(&metav1.Time{Time: at})
	}
}

// TestRunAtTheScheduleTime: nothing runs before the schedule time; at it,
// one Workflow named <name>-<unix time>, controlled by the CronWorkflow,
// with its workflowSpec, and the status says so and when the next is.
func TestRunAtTheScheduleTime(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	at := startClock()
	cw := create(t, env.Client, MakeCronWorkflow("hourly", ns, "0 * * * *").Step("build", "busybox", "make").Obj())
	waitCron(t, cw, "scheduled for "+at.String(), nextIs(at))
	if got := runs(t, cw); len(got) != 0 {
		t.Fatalf("runs before the schedule time: %v", keys(got))
	}

	tick(t, cw, at)
	name := names.CronRun("hourly", at)
	got := waitRuns(t, cw, "the run for "+at.String(), func(r map[string]*schedv1.Workflow) bool { return r[name] != nil })
	if len(got) != 1 {
		t.Errorf("runs %v, want only %s", keys(got), name)
	}
	run := got[name]
	if run.Annotations[schedv1.AnnotationScheduledTime] != at.UTC().Format(time.RFC3339) || run.Spec.Steps[0].Task.Args[0] != "make" {
		t.Errorf("run %s: annotations %v, spec %+v", name, run.Annotations, run.Spec)
	}
	st := waitCron(t, cw, "recording the run", func(c *schedv1.CronWorkflow) bool {
		return c.Status.LastScheduleTime != nil && c.Status.LastScheduleTime.Equal(&metav1.Time{Time: at})
	}).Status
	if !st.NextScheduleTime.Equal(&metav1.Time{Time: at.Add(time.Hour)}) || st.ActiveCount != 1 || len(st.Active) != 1 || st.Active[0].Name != name {
		t.Errorf("status %+v: want the next at %s and %s active", st, at.Add(time.Hour), name)
	}
	waitEvent(t, cw, schedv1.ReasonCreated, "created run "+name)

	// The same time again (the controller woken up by anything) makes no
	// second run.
	tick(t, cw, at.Add(time.Second))
	waitCron(t, cw, "seen at the new time", func(c *schedv1.CronWorkflow) bool { return c.Annotations["test.kubectl-sched.dev/tick"] != "" })
	if got := runs(t, cw); len(got) != 1 {
		t.Errorf("runs %v after a second reconcile at the same schedule time", keys(got))
	}
}

// TestHistoryTrimmed keeps the newest succeeded and failed runs the limits
// say and deletes the older ones.
func TestHistoryTrimmed(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	first := startClock()
	cw := create(t, env.Client, MakeCronWorkflow("trimmed", ns, "0 * * * *").Step("build", "busybox").History(1, 1).Obj())
	phases := []schedv1.WorkflowPhase{schedv1.WorkflowSucceeded, schedv1.WorkflowSucceeded, schedv1.WorkflowFailed, schedv1.WorkflowTimeout}
	for i, phase := range phases {
		at := first.Add(time.Duration(i) * time.Hour)
		tick(t, cw, at)
		name := names.CronRun("trimmed", at)
		got := waitRuns(t, cw, "the run for "+at.String(), func(r map[string]*schedv1.Workflow) bool { return r[name] != nil })
		finish(t, got[name], phase)
	}
	want := []string{names.CronRun("trimmed", first.Add(time.Hour)), names.CronRun("trimmed", first.Add(3*time.Hour))}
	waitRuns(t, cw, fmt.Sprintf("only %v kept", want), func(r map[string]*schedv1.Workflow) bool {
		return len(r) == 2 && r[want[0]] != nil && r[want[1]] != nil
	})
	st := waitCron(t, cw, "no run active", func(c *schedv1.CronWorkflow) bool { return c.Status.ActiveCount == 0 }).Status
	if st.LastSuccessfulTime == nil {
		t.Errorf("lastSuccessfulTime unset: %+v", st)
	}
	waitEvent(t, cw, schedv1.ReasonDeleted, "successfulRunsHistoryLimit keeps 1")
	waitEvent(t, cw, schedv1.ReasonDeleted, "failedRunsHistoryLimit keeps 1")
}

// TestForbidWaitsAndReplaceStops: with Forbid the run due while another
// runs waits for it to end; with Replace the running one is deleted and
// the new one starts.
func TestForbidWaitsAndReplaceStops(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	first := startClock()
	forbid := create(t, env.Client, MakeCronWorkflow("forbid", ns, "0 * * * *").Step("a", "busybox").Concurrency(schedv1.ConcurrencyForbid).Obj())
	replace := create(t, env.Client, MakeCronWorkflow("replace", ns, "0 * * * *").Step("a", "busybox").Concurrency(schedv1.ConcurrencyReplace).Obj())
	tick(t, forbid, first)
	tick(t, replace, first)
	for _, cw := range []*schedv1.CronWorkflow{forbid, replace} {
		waitRuns(t, cw, "the first run", func(r map[string]*schedv1.Workflow) bool { return len(r) == 1 })
	}

	second := first.Add(time.Hour)
	tick(t, forbid, second)
	tick(t, replace, second)
	waitEvent(t, forbid, schedv1.ReasonRunSkipped, "is still running and concurrencyPolicy is Forbid")
	if got := runs(t, forbid); len(got) != 1 {
		t.Errorf("Forbid: runs %v while the first runs", keys(got))
	}
	waitRuns(t, replace, "the second run only", func(r map[string]*schedv1.Workflow) bool {
		return len(r) == 1 && r[names.CronRun("replace", second)] != nil
	})
	waitEvent(t, replace, schedv1.ReasonRunReplaced, "deleted "+names.CronRun("replace", first)+", still running")

	// The first ends: the run that waited starts (within no deadline).
	finish(t, runs(t, forbid)[names.CronRun("forbid", first)], schedv1.WorkflowSucceeded)
	waitRuns(t, forbid, "the waiting run", func(r map[string]*schedv1.Workflow) bool { return r[names.CronRun("forbid", second)] != nil })
}

// TestSuspend: no run while suspended; resumed past the starting
// deadline, the missed time stays missed.
func TestSuspend(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	at := startClock()
	cw := create(t, env.Client, MakeCronWorkflow("paused", ns, "0 * * * *").Step("a", "busybox").Suspend(true).Deadline(120).Obj())
	got := waitCron(t, cw, "suspended", readyIs(metav1.ConditionFalse, schedv1.ReasonSuspended))
	if got.Status.NextScheduleTime != nil {
		t.Errorf("a next schedule time while suspended: %s", got.Status.NextScheduleTime)
	}
	tick(t, cw, at.Add(5*time.Minute))
	waitCron(t, cw, "seen at "+at.Add(5*time.Minute).String(), func(c *schedv1.CronWorkflow) bool { return c.Annotations["test.kubectl-sched.dev/tick"] != "" })
	resume := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`))
	if err := env.Client.Patch(context.Background(), got, resume); err != nil {
		t.Fatal(err)
	}
	waitCron(t, cw, "resumed", func(c *schedv1.CronWorkflow) bool {
		return readyIs(metav1.ConditionTrue, schedv1.ReasonScheduled)(c) && nextIs(at.Add(time.Hour))(c)
	})
	if r := runs(t, cw); len(r) != 0 {
		t.Errorf("the run for %s started %s late, past its 120s deadline: %v", at, 5*time.Minute, keys(r))
	}
}

// TestScheduleProblemsInReady: what the CRD lets through and the parser
// does not is in Ready, naming the field.
func TestScheduleProblemsInReady(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	for _, tc := range []struct {
		cw           *schedv1.CronWorkflow
		reason, want string
	}{
		{MakeCronWorkflow("reversed", ns, "5-3 * * * *").Step("a", "busybox").Obj(), schedv1.ReasonInvalidSchedule, `spec.schedule: "5-3 * * * *" is not a cron schedule: beginning of range (5) beyond end of range (3)`},
		{MakeCronWorkflow("feb30", ns, "0 0 30 2 *").Step("a", "busybox").Obj(), schedv1.ReasonInvalidSchedule, "never matches a date"},
		{MakeCronWorkflow("mars", ns, "0 2 * * *").TimeZone("Mars/Olympus_Mons").Step("a", "busybox").Obj(), schedv1.ReasonUnknownTimeZone, `spec.timeZone: unknown time zone "Mars/Olympus_Mons"`},
	} {
		got := waitCron(t, create(t, env.Client, tc.cw), tc.reason, readyIs(metav1.ConditionFalse, tc.reason))
		if msg := ready(got).Message; !strings.Contains(msg, tc.want) || !strings.Contains(msg, "no run starts until it is fixed") {
			t.Errorf("%s: Ready says %q, want %q", tc.cw.Name, msg, tc.want)
		}
	}
}

// TestNameTakenIsNotTakenOver: a Workflow that is not a run of the
// CronWorkflow but has the name of one is neither taken nor deleted; the
// time is skipped and Ready says why.
func TestNameTakenIsNotTakenOver(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	at := startClock()
	squatter := MakeWorkflow(names.CronRun("taken", at), ns).Step("a", "busybox").Obj()
	if err := env.Client.Create(context.Background(), squatter); err != nil {
		t.Fatal(err)
	}
	cw := create(t, env.Client, MakeCronWorkflow("taken", ns, "0 * * * *").Step("a", "busybox").Obj())
	waitCron(t, cw, "scheduled", nextIs(at))
	tick(t, cw, at)
	got := waitCron(t, cw, "NameTaken", readyIs(metav1.ConditionFalse, schedv1.ReasonNameTaken))
	if !strings.Contains(ready(got).Message, "Rename or delete that Workflow") || got.Status.LastScheduleTime == nil {
		t.Errorf("status %+v", got.Status)
	}
	after := &schedv1.Workflow{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(squatter), after); err != nil || after.UID != squatter.UID || metav1.GetControllerOf(after) != nil {
		t.Errorf("the other Workflow was touched: %v %+v", err, after.OwnerReferences)
	}
}

// TestRestartBetweenCreateAndStatus: the operator creates a run and is
// stopped before its status write lands (a test admission policy loses
// every status write of this CronWorkflow, as a kill between the two
// writes would); a new operator finds the run, records it, and makes no
// second one.
func TestRestartBetweenCreateAndStatus(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	at := startClock()
	cw := create(t, env.Client, MakeCronWorkflow("crashy", ns, "0 * * * *").Step("a", "busybox").Obj())
	waitCron(t, cw, "scheduled", nextIs(at))
	loseStatusWrites(t, cw)

	tick(t, cw, at)
	name := names.CronRun("crashy", at)
	made := waitRuns(t, cw, "the run", func(r map[string]*schedv1.Workflow) bool { return r[name] != nil })[name]
	// The operator retries the status write (and finds the run each time).
	time.Sleep(time.Second)
	if err := operator.Stop(); err != nil {
		t.Fatal(err)
	}
	keepStatusWrites(t, cw)
	if got := waitCron(t, cw, "read", func(*schedv1.CronWorkflow) bool { return true }); got.Status.LastScheduleTime != nil {
		t.Fatalf("the status write was not lost: %+v", got.Status)
	}
	if err := operator.Start(nil); err != nil {
		t.Fatal(err)
	}
	tick(t, cw, at.Add(time.Second))
	waitCron(t, cw, "recording the run", func(c *schedv1.CronWorkflow) bool {
		return c.Status.LastScheduleTime != nil && c.Status.LastScheduleTime.Equal(&metav1.Time{Time: at}) && c.Status.ActiveCount == 1
	})
	got := runs(t, cw)
	if len(got) != 1 || got[name] == nil || got[name].UID != made.UID {
		t.Errorf("runs after the restart: %v (want only %s, uid %s)", keys(got), name, made.UID)
	}
}

const losePolicy = "test-lose-cronworkflow-status"

// loseStatusWrites makes the API server refuse every status write of cw
// until keepStatusWrites.
func loseStatusWrites(t *testing.T, cw *schedv1.CronWorkflow) {
	t.Helper()
	ctx := context.Background()
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: losePolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{schedv1.GroupName}, APIVersions: []string{"v1alpha1"},
						Resources: []string{"cronworkflows/status"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("!(object.metadata.namespace == %q && object.metadata.name == %q)", cw.Namespace, cw.Name),
				Message:    "this status write is lost (test)",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: losePolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: losePolicy,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { keepStatusWrites(t, cw) })
	waitStatusWrite(t, cw, true)
}

func keepStatusWrites(t *testing.T, cw *schedv1.CronWorkflow) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range []client.Object{&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, &admissionregistrationv1.ValidatingAdmissionPolicy{}} {
		obj.SetName(losePolicy)
		if err := env.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	waitStatusWrite(t, cw, false)
}

// waitStatusWrite waits until a status write of cw (a dry run) is refused
// or not: policies take effect asynchronously.
func waitStatusWrite(t *testing.T, cw *schedv1.CronWorkflow, refused bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, testenv.Timeout, true, func(ctx context.Context) (bool, error) {
		probe := &schedv1.CronWorkflow{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cw), probe); err != nil {
			return false, err
		}
		probe.Status.ActiveCount = 99
		err := env.Client.Status().Update(ctx, probe, client.DryRunAll)
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return (err != nil && strings.Contains(err.Error(), "this status write is lost")) == refused, nil
	})
	if err != nil {
		t.Fatalf("status writes of %s still refused=%v: %v", cw.Name, !refused, err)
	}
}
