package workflow_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/watchtest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

func getCron(t *testing.T, name string) *schedv1.CronWorkflow {
	t.Helper()
	cw := &schedv1.CronWorkflow{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, cw); err != nil {
		t.Fatal(err)
	}
	return cw
}

// TestSchedule: schedule applies a CronWorkflow from a file with -p, says
// when it runs next, and applied again changes it in place: a flag left
// out goes back to its default.
func TestSchedule(t *testing.T) {
	res := env.Run("workflow", "schedule", "nightly", "--cron", "0 2 * * *", "--time-zone", "Europe/Berlin",
		"-f", "testdata/two-steps.yaml", "-p", "greeting=hi", "--concurrency-policy", "Forbid", "--starting-deadline-seconds", "600", "--suspend")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	if want := "cronworkflow.sched.kubectl-sched.dev/nightly serverside-applied\nSuspended: no run starts until it is applied again without --suspend.\nRun it now with: kubectl sched workflow trigger nightly\n"; res.Stdout != want {
		t.Errorf("stdout %q, want %q", res.Stdout, want)
	}
	cw := getCron(t, "nightly")
	s := cw.Spec
	if s.Schedule != "0 2 * * *" || s.TimeZone != "Europe/Berlin" || s.ConcurrencyPolicy != schedv1.ConcurrencyForbid || !s.Suspend ||
		*s.StartingDeadlineSeconds != 600 || s.WorkflowSpec.Params[0].Value != "hi" || len(s.WorkflowSpec.Steps) != 2 || s.WorkflowSpec.Timeout == nil {
		t.Errorf("spec %+v", s)
	}
	if m := cw.ManagedFields; len(m) != 1 || m[0].Manager != "kubectl-sched" || m[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("want one apply by field manager kubectl-sched, got %+v", m)
	}

	res = env.Run("workflow", "schedule", "nightly", "--cron", "30 3 * * MON-FRI", "-f", "testdata/two-steps.yaml")
	if res.Code != 0 || !regexp.MustCompile(`(?m)^Next run: \d{4}-\d\d-\d\d 03:30:00 UTC \(in .+\)$`).MatchString(res.Stdout) {
		t.Fatalf("applied again: exit %d\nstdout:\n%sstderr:\n%s", res.Code, res.Stdout, res.Stderr)
	}
	s = getCron(t, "nightly").Spec
	if s.Schedule != "30 3 * * MON-FRI" || s.TimeZone != "" || s.ConcurrencyPolicy != schedv1.ConcurrencyAllow || s.Suspend || s.StartingDeadlineSeconds != nil ||
		s.WorkflowSpec.Params[0].Value != "hello" || *s.SuccessfulRunsHistoryLimit != 3 || *s.FailedRunsHistoryLimit != 1 {
		t.Errorf("applied again without the flags: spec %+v", s)
	}
}

func TestScheduleFromATemplate(t *testing.T) {
	res := env.Run("workflow", "schedule", "release", "--cron", "@daily", "--template", "release-workflow", "--set", "repo=https://example.com/shop.git",
		"--dry-run=client", "-o", "yaml")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	plugintest.Golden(t, "schedule-template.yaml", res.Stdout)
}

// TestScheduleEscapesFinallyValues: a template value in a finally step of
// the CronWorkflow's workflowSpec is escaped, as in spec.steps: it cannot
// read the build's outputs.
func TestScheduleEscapesFinallyValues(t *testing.T) {
	res := env.Run("workflow", "schedule", "report", "--cron", "@daily", "--template", "testdata/finally-template.yaml",
		"--set", "message=${steps.build.output.token}", "--dry-run=client", "-o", "yaml")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	cw := &schedv1.CronWorkflow{}
	if err := yaml.UnmarshalStrict([]byte(res.Stdout), cw); err != nil {
		t.Fatal(err)
	}
	want := []schedv1.EnvVar{{Name: "MESSAGE", Value: "$${steps.build.output.token}"}, {Name: "PHASE", Value: "${workflow.phase}"}}
	if diff := cmp.Diff(want, cw.Spec.WorkflowSpec.Finally[0].Task.Env); diff != "" {
		t.Errorf("finally env (-want +got):\n%s", diff)
	}
}

func TestScheduleErrors(t *testing.T) {
	file := []string{"-f", "testdata/two-steps.yaml"}
	env.RunErrorCases(t, map[string]plugintest.ErrorCase{
		"no cron": {Args: append([]string{"workflow", "schedule", "x"}, file...), Code: cmdutil.ExitUsage,
			Stderr: []string{"--cron is required", `such as --cron "0 2 * * *"`}},
		"no name": {Args: []string{"workflow", "schedule", "--cron", "@daily", "-f", "testdata/two-steps.yaml"}, Code: cmdutil.ExitUsage,
			Stderr: []string{"takes one cronworkflow name"}},
		"no workflow": {Args: []string{"workflow", "schedule", "x", "--cron", "@daily"}, Code: cmdutil.ExitUsage,
			Stderr: []string{"give the workflow with -f FILE or --template T"}},
		"an unknown policy": {Args: append([]string{"workflow", "schedule", "x", "--cron", "@daily", "--concurrency-policy", "Queue"}, file...), Code: cmdutil.ExitUsage,
			Stderr: []string{`--concurrency-policy "Queue" is not a policy`, "Use Allow, Forbid or Replace."}},
		"a deadline of 0": {Args: append([]string{"workflow", "schedule", "x", "--cron", "@daily", "--starting-deadline-seconds", "0"}, file...), Code: cmdutil.ExitUsage,
			Stderr: []string{"--starting-deadline-seconds 0 is out of range"}},
		"every problem at once": {
			Args: []string{"workflow", "schedule", strings.Repeat("n", 46), "--cron", "61 2 * * *", "--time-zone", "Mars/Olympus_Mons", "-f", "testdata/bad-references.yaml"},
			Code: cmdutil.ExitInvalid,
			Stderr: []string{"problems:", `metadata.name: "` + strings.Repeat("n", 46) + `" has 46 characters, at most 45`,
				`spec.timeZone (--time-zone): unknown time zone "Mars/Olympus_Mons"`, "spec.workflowSpec.steps[", "nothing was submitted"}},
		"a bad schedule": {Args: append([]string{"workflow", "schedule", "x", "--cron", "61 2 * * *"}, file...), Code: cmdutil.ExitInvalid,
			Stderr: []string{`spec.schedule (--cron): "61 2 * * *" is not a cron schedule: end of range (61) above maximum (59)`}},
		"@every": {Args: append([]string{"workflow", "schedule", "x", "--cron", "@every 1h"}, file...), Code: cmdutil.ExitInvalid,
			Stderr: []string{"@every is not supported", `such as "*/15 * * * *"`}},
	}, func(t *testing.T, r plugintest.Result) {
		if r.Stdout != "" {
			t.Errorf("stdout %q, want nothing", r.Stdout)
		}
	})
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "x"}, &schedv1.CronWorkflow{}); err == nil {
		t.Error("a CronWorkflow was submitted")
	}
}

// TestTrigger: a run now, owned by the CronWorkflow and named apart from
// the scheduled ones, watched to its end.
func TestTrigger(t *testing.T) {
	if res := env.Run("workflow", "schedule", "triggered", "--cron", "0 2 * * *", "-f", "testdata/two-steps.yaml", "--suspend"); res.Code != 0 {
		t.Fatalf("schedule: exit %d: %s", res.Code, res.Stderr)
	}
	cw := getCron(t, "triggered")

	res := env.Run("workflow", "trigger", "triggered")
	m := regexp.MustCompile(`^workflow.sched.kubectl-sched.dev/(triggered-manual-\d{10}) created: a run of cronworkflow triggered, now\nWatch it with: kubectl sched workflow watch triggered-manual-\d{10}\n$`).FindStringSubmatch(res.Stdout)
	if res.Code != 0 || m == nil {
		t.Fatalf("exit %d\nstdout:\n%sstderr:\n%s", res.Code, res.Stdout, res.Stderr)
	}
	run := getWF(t, m[1])
	if !metav1.IsControlledBy(run, cw) || run.Annotations[schedv1.AnnotationManualRun] != "true" || len(run.Spec.Steps) != 2 || run.Spec.Timeout == nil {
		t.Errorf("run %s: owners %+v, annotations %v, spec %+v", run.Name, run.OwnerReferences, run.Annotations, run.Spec)
	}

	r := watchtest.Start(env.Kubeconfig, "workflow", "trigger", "triggered", "--watch")
	var name string
	watchtest.Eventually(t, "the watch to start", func() bool {
		m := regexp.MustCompile(`workflow (triggered-manual-\d{10}) Pending`).FindStringSubmatch(r.Stdout())
		if m != nil {
			name = m[1]
		}
		return m != nil || r.Exited()
	})
	if name == "" {
		// Both runs within one second: the second is refused, named.
		if r.Wait(t) != cmdutil.ExitError || !strings.Contains(r.Stderr(), "a run of triggered was triggered this second") {
			t.Fatalf("exit %d: %s", r.Wait(t), r.Stderr())
		}
		return
	}
	setStatus(t, name, end(schedv1.WorkflowFailed, 2, "step 0 (build) failed", schedv1.StepStatus{Name: "build", Phase: schedv1.StepFailed}))
	if code := r.Wait(t); code != cmdutil.ExitFailed || !strings.Contains(r.Stderr(), "workflow "+name+" failed") {
		t.Errorf("exit %d, want %d (the run failed)\nstderr: %s", code, cmdutil.ExitFailed, r.Stderr())
	}
}

func TestTriggerErrors(t *testing.T) {
	env.RunErrorCases(t, map[string]plugintest.ErrorCase{
		"no such CronWorkflow": {Args: []string{"workflow", "trigger", "nope"}, Code: cmdutil.ExitNotFound,
			Stderr: []string{`cronworkflows.sched.kubectl-sched.dev "nope" not found`}},
		"watch with dry run": {Args: []string{"workflow", "trigger", "nope", "--watch", "--dry-run=server"}, Code: cmdutil.ExitUsage,
			Stderr: []string{"--dry-run creates nothing to watch"}},
	}, nil)
}

// TestScheduleAndTriggerRecordWhoAsks: schedule records its user as the
// requester of a gated workflowSpec, which the admission policy holds to
// the writer; a manual run is asked for by whoever triggers it.
func TestScheduleAndTriggerRecordWhoAsks(t *testing.T) {
	for _, user := range []string{"erin", "frank"} {
		if _, err := testenv.BindUser(context.Background(), env.Client, env.Config, "default", user, "kubectl-sched-edit",
			authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: "workflows"}); err != nil {
			t.Fatal(err)
		}
	}
	res := env.Run("workflow", "schedule", "gated-nightly", "--cron", "0 2 * * *", "-f", "testdata/gated.yaml", "--as", "erin")
	if res.Code != 0 {
		t.Fatalf("schedule as erin: exit %d: %s", res.Code, res.Stderr)
	}
	cw := getCron(t, "gated-nightly")
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cw) })
	if by := cw.Spec.WorkflowSpec.RequestedBy; by != "erin" {
		t.Errorf("workflowSpec.requestedBy %q, want erin", by)
	}
	res = env.Run("workflow", "trigger", "gated-nightly", "--as", "frank")
	if res.Code != 0 {
		t.Fatalf("trigger as frank: exit %d: %s", res.Code, res.Stderr)
	}
	run := getWF(t, strings.TrimPrefix(strings.Fields(res.Stdout)[0], "workflow.sched.kubectl-sched.dev/"))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), run) })
	if run.Spec.RequestedBy != "frank" {
		t.Errorf("the manual run's requestedBy %q, want frank", run.Spec.RequestedBy)
	}
}
