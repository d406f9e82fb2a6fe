package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/cronschedule"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

func durationOf(s string) *metav1.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return &metav1.Duration{Duration: d}
}

func validCron(schedule string) *CronWorkflowWrapper {
	return MakeCronWorkflow("nightly", ns, schedule).Step("build", "busybox")
}

// TestCronWorkflowRefused: a bad schedule, time zone, name or workflow is
// refused by `kubectl apply`, naming the field and what to write instead.
func TestCronWorkflowRefused(t *testing.T) {
	cases := map[string]struct {
		obj                client.Object
		wantField, wantMsg string
	}{
		"four fields":       {validCron("0 2 * *").Obj(), "spec.schedule", "schedule must be five fields separated by spaces"},
		"six fields":        {validCron("0 0 2 * * *").Obj(), "spec.schedule", "schedule must be five fields separated by spaces"},
		"@every":            {validCron("@every 1h").Obj(), "spec.schedule", "@every and TZ= are not supported: use spec.timeZone"},
		"TZ= prefix":        {validCron("TZ=Europe/Berlin 0 2 * * *").Obj(), "spec.schedule", "schedule must be five fields"},
		"minute 60":         {validCron("60 2 * * *").Obj(), "spec.schedule", "the minute (first field) must be *, a number from 0 to 59"},
		"hour 24":           {validCron("0 24 * * *").Obj(), "spec.schedule", "the hour (second field) must be *, a number from 0 to 23"},
		"day of month 0":    {validCron("0 2 0 * *").Obj(), "spec.schedule", "the day of month (third field)"},
		"month 13":          {validCron("0 2 * 13 *").Obj(), "spec.schedule", "the month (fourth field) must be *, a number from 1 to 12 or a name JAN to DEC"},
		"day of week 7":     {validCron("0 2 * * 7").Obj(), "spec.schedule", "the day of week (fifth field) must be * or ?, a number from 0 to 6 (0 is Sunday)"},
		"a word":            {validCron("0 2 * * weekday").Obj(), "spec.schedule", "the day of week (fifth field)"},
		"step zero":         {validCron("*/0 * * * *").Obj(), "spec.schedule", "the minute (first field)"},
		"empty":             {validCron("").Obj(), "spec.schedule", "should be at least 1 chars long"},
		"too long":          {validCron(strings.Repeat("1,", 64) + "1 * * * *").Obj(), "spec.schedule", "may not be more than 128 bytes"},
		"unknown notation":  {validCron("@fortnightly").Obj(), "spec.schedule", "or one of @yearly"},
		"a space in a zone": {validCron("0 2 * * *").TimeZone("Europe/New Berlin").Obj(), "spec.timeZone", "must be an IANA time zone name such as Europe/Berlin"},
		"a path as a zone":  {validCron("0 2 * * *").TimeZone("../../etc/passwd").Obj(), "spec.timeZone", "must be an IANA time zone name"},
		"Local":             {validCron("0 2 * * *").TimeZone("Local").Obj(), "spec.timeZone", "Local (the operator's own zone) is not allowed"},
		"a 46-character name": {MakeCronWorkflow(strings.Repeat("n", 46), ns, "0 2 * * *").Step("a", "busybox").Obj(), "metadata.name",
			"at most 45 characters: runs are named <name>-<unix time> and <name>-manual-<unix time>, within 63"},
		"unknown concurrency policy": {validCron("0 2 * * *").Concurrency("Queue").Obj(), "spec.concurrencyPolicy", "supported values"},
		"a deadline of 0":            {validCron("0 2 * * *").Deadline(0).Obj(), "spec.startingDeadlineSeconds", "greater than or equal to 1"},
		"a deadline past 31 days":    {validCron("0 2 * * *").Deadline(2678401).Obj(), "spec.startingDeadlineSeconds", "less than or equal to 2678400"},
		"history past 100":           {validCron("0 2 * * *").History(101, 1).Obj(), "spec.successfulRunsHistoryLimit", "less than or equal to 100"},
		"negative failed history":    {validCron("0 2 * * *").History(3, -1).Obj(), "spec.failedRunsHistoryLimit", "greater than or equal to 0"},
		"no steps":                   {MakeCronWorkflow("nightly", ns, "0 2 * * *").Obj(), "spec.workflowSpec", "a workflow runs steps: set spec.steps, or spec.workflowTemplateRef"},
		// The Workflow's own rules, reused.
		"a step name that is no DNS label": {MakeCronWorkflow("nightly", ns, "0 2 * * *").Step("Build_1", "busybox").Obj(), "spec.workflowSpec.steps[0].name", "should match"},
		"a workflow timeout past 720h": {validCron("0 2 * * *").Spec(func(s *schedv1.CronWorkflowSpec) {
			s.WorkflowSpec.Timeout = durationOf("721h")
		}).Obj(), "spec.workflowSpec.timeout", "timeout must be between 1s and 720h"},
		"cancel": {validCron("0 2 * * *").Spec(func(s *schedv1.CronWorkflowSpec) { s.WorkflowSpec.Cancel = true }).Obj(),
			"spec.workflowSpec.cancel", "set spec.suspend to stop new runs"},
		"retryOf": {validCron("0 2 * * *").Spec(func(s *schedv1.CronWorkflowSpec) {
			s.WorkflowSpec.RetryOf = &schedv1.WorkflowRetry{Workflow: "x", FromStep: "build"}
		}).Obj(), "spec.workflowSpec.retryOf", "each run is a new workflow"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := env.Client.Create(context.Background(), tc.obj, client.DryRunAll)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want Invalid, got %v", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.wantField) || !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("message does not name %q with %q:\n%s", tc.wantField, tc.wantMsg, msg)
			}
		})
	}
}

// TestScheduleRulesAgreeWithTheParser feeds the CRD and api/cronschedule
// (the parser the operator and the plugin use) the same schedules: what
// the parser accepts the CRD accepts, and what the CRD accepts that the
// parser refuses is only what CEL cannot see (marked operatorOnly), which
// the operator reports in its Ready condition.
func TestScheduleRulesAgreeWithTheParser(t *testing.T) {
	corpus := []struct {
		schedule     string
		operatorOnly bool
	}{
		{schedule: "* * * * *"}, {schedule: "0 2 * * *"}, {schedule: "*/15 * * * *"}, {schedule: "0 9-17 * * MON-FRI"},
		{schedule: "0 0 1 JAN,jul *"}, {schedule: "30 6 * * sun"}, {schedule: "5/10 * * * *"}, {schedule: "0 0 ? * 1"},
		{schedule: "0 0 1-31/2 * *"}, {schedule: "59 23 31 12 6"}, {schedule: "00 07 01 01 0"}, {schedule: "  0  2\t* * *  "},
		{schedule: "0,15,30,45 0-23/6 * */3 *"}, {schedule: "@yearly"}, {schedule: "@annually"}, {schedule: "@monthly"},
		{schedule: "@weekly"}, {schedule: "@daily"}, {schedule: "@midnight"}, {schedule: "@hourly"},
		{schedule: "5-3 * * * *", operatorOnly: true},     // a range past its end
		{schedule: "0 0 30 2 *", operatorOnly: true},      // February 30
		{schedule: "0 0 * DEC-JAN *", operatorOnly: true}, // names in reverse
		{schedule: "0 0 * * SAT-SUN", operatorOnly: true},
		{schedule: "60 * * * *"}, {schedule: "0 24 * * *"}, {schedule: "0 0 0 * *"}, {schedule: "0 0 32 * *"},
		{schedule: "0 0 * 0 *"}, {schedule: "0 0 * 13 *"}, {schedule: "0 0 * * 7"}, {schedule: "0 0 * * 8"},
		{schedule: "*/0 * * * *"}, {schedule: "1-2-3 * * * *"}, {schedule: "1//2 * * * *"}, {schedule: "? * * * *"},
		{schedule: "0 0 * * * *"}, {schedule: "0 0 * *"}, {schedule: "@every 5m"}, {schedule: "@Daily"},
		{schedule: "TZ=UTC 0 2 * * *"}, {schedule: "CRON_TZ=UTC 0 2 * * *"}, {schedule: "0 0 * * MONDAY"}, {schedule: "0 0 L * *"},
		{schedule: "0 0 * * 1#2"}, {schedule: "0 0 ,1 * *"}, {schedule: "0 0 1, * *"}, {schedule: "-1 * * * *"},
	}
	for _, c := range corpus {
		_, parseErr := cronschedule.Parse(c.schedule, "")
		crdErr := env.Client.Create(context.Background(), validCron(c.schedule).Obj(), client.DryRunAll)
		switch {
		case parseErr == nil && crdErr != nil:
			t.Errorf("%q: the parser accepts it, the CRD refuses it: %v", c.schedule, crdErr)
		case parseErr != nil && crdErr == nil && !c.operatorOnly:
			t.Errorf("%q: the CRD accepts it, the parser refuses it (%v); tighten the CRD's rules or mark it operatorOnly", c.schedule, parseErr)
		case c.operatorOnly && (parseErr == nil || crdErr != nil):
			t.Errorf("%q is marked operatorOnly: want the CRD to accept it (%v) and the parser to refuse it (%v)", c.schedule, crdErr, parseErr)
		case crdErr != nil && !apierrors.IsInvalid(crdErr):
			t.Errorf("%q: want Invalid, got %v", c.schedule, crdErr)
		}
	}
}

// TestCronWorkflowSpecMayChange: unlike a Workflow's, a CronWorkflow's
// workflowSpec is its owner's to edit (the next runs use the new one), and
// so are the schedule and the rest.
func TestCronWorkflowSpecMayChange(t *testing.T) {
	ctx := context.Background()
	cw := validCron("0 2 * * *").Obj()
	cw.Name = "editable"
	if err := env.Client.Create(ctx, cw); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Client.Delete(ctx, cw) }()
	if cw.Spec.ConcurrencyPolicy != schedv1.ConcurrencyAllow || ptr.Deref(cw.Spec.SuccessfulRunsHistoryLimit, 0) != 3 || ptr.Deref(cw.Spec.FailedRunsHistoryLimit, 0) != 1 {
		t.Errorf("defaults: concurrencyPolicy %q, history %v/%v; want Allow, 3 and 1", cw.Spec.ConcurrencyPolicy,
			cw.Spec.SuccessfulRunsHistoryLimit, cw.Spec.FailedRunsHistoryLimit)
	}
	cw.Spec.Schedule = "30 3 * * *"
	cw.Spec.TimeZone = "Europe/Berlin"
	cw.Spec.Suspend = true
	cw.Spec.WorkflowSpec.Steps[0].Task.Image = "alpine"
	cw.Spec.WorkflowSpec.Steps = append(cw.Spec.WorkflowSpec.Steps, schedv1.WorkflowStep{Name: "ship", Task: schedv1.AgentTaskSpec{Image: "busybox"}})
	cw.Spec.WorkflowSpec.Params = []schedv1.WorkflowParam{{Name: "env", Value: "prod"}}
	cw.Spec.WorkflowSpec.Timeout = durationOf("1h")
	if err := env.Client.Update(ctx, cw); err != nil {
		t.Fatalf("an edit of the schedule and the workflow was refused: %v", err)
	}
	cw.Spec.WorkflowSpec.Steps = cw.Spec.WorkflowSpec.Steps[:1]
	cw.Spec.WorkflowSpec.Params, cw.Spec.WorkflowSpec.Timeout = nil, nil
	if err := env.Client.Update(ctx, cw); err != nil {
		t.Fatalf("removing a step, the params and the timeout was refused: %v", err)
	}
}

// TestLargestCronWorkflowAccepted: a CronWorkflow whose step is the
// largest AgentTask spec there can be passes its CEL rules' cost, as a
// namespace user.
func TestLargestCronWorkflowAccepted(t *testing.T) {
	cleo := tenant(t, "tenant-cron", "cleo", map[string]string{optOutLabel: "true"})
	cw := MakeCronWorkflow(strings.Repeat("c", 45), "tenant-cron", strings.Repeat("0,", 59)+"0 * * * *").
		TimeZone("America/Argentina/ComodRivadavia").StepTask("a", largestTaskSpec()).Obj()
	if err := cleo.Create(context.Background(), cw, client.DryRunAll); err != nil {
		t.Fatalf("the largest CronWorkflow was refused: %v", err)
	}
}

// TestWorkflowSpecHasNoTransitionRules: a rule that compares with oldSelf
// inside WorkflowSpec would make every CronWorkflow's workflowSpec
// immutable too. A Workflow's own immutability rules belong on
// Workflow.Spec (workflow_types.go); this finds one put in the type.
func TestWorkflowSpecHasNoTransitionRules(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", "sched.kubectl-sched.dev_cronworkflows.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if i := strings.Index(string(data), "oldSelf"); i >= 0 {
		t.Errorf("the CronWorkflow CRD has a transition rule (oldSelf) at byte %d: move it from WorkflowSpec's fields to Workflow.Spec:\n%s",
			i, data[max(0, i-300):min(len(data), i+100)])
	}
}
