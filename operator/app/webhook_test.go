package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/accounts"
	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

// TestOperatorRunsPodsOnlyAsTheOwnersAccount runs the operator with its
// service-accounts webhook, then acts as the operator's service account
// (its generated RBAC) in a namespace made as `kubectl sched tenant
// create` makes it: a Job for a task, or a step's AgentTask, that would
// run as another account than its owner names (and a schedule's run
// whose steps would), or claims an owner that does not exist, is refused by the webhook with a message naming both
// accounts; the operator's own Jobs and step tasks pass.
func TestOperatorRunsPodsOnlyAsTheOwnersAccount(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	webhook := testenv.AccountsWebhook(t, env.Client)
	stop, _, err := testenv.StartOperator(ctx, env.Config, webhook)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	op := operatorClient(t, env)
	ns := testenv.TenantNamespace(t, env.Client, "team", []string{"alice"}, nil)
	alice, err := testenv.Impersonate(env.Config, "alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, sa := range []string{"builder", "deployer"} {
		if err := env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	task := MakeAgentTask("build", ns).Image("busybox").Spec(func(s *schedv1.AgentTaskSpec) { s.ServiceAccountName = "builder" }).Obj()
	if err := alice.Create(ctx, task); err != nil {
		t.Fatal(err)
	}
	wf := &schedv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "release", Namespace: ns},
		Spec: schedv1.WorkflowSpec{
			Steps:   []schedv1.WorkflowStep{{Name: "a", Task: schedv1.AgentTaskSpec{Image: "busybox", ServiceAccountName: "builder"}}},
			Finally: []schedv1.WorkflowStep{{Name: "tidy", Task: schedv1.AgentTaskSpec{Image: "busybox"}}},
		}}
	if err := alice.Create(ctx, wf); err != nil {
		t.Fatal(err)
	}
	// Yearly: no run starts during the test.
	cron := &schedv1.CronWorkflow{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns},
		Spec: schedv1.CronWorkflowSpec{Schedule: "0 0 1 1 *", WorkflowSpec: wf.Spec}}
	if err := alice.Create(ctx, cron); err != nil {
		t.Fatal(err)
	}

	// The normal path: the operator's own Job and step task pass, each
	// running as its owner names.
	testenv.Eventually(t, 100*time.Millisecond, time.Minute, "the task's Job", func(ctx context.Context) error {
		job := &batchv1.Job{}
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.Job(task.Name)}, job); err != nil {
			return err
		}
		if got := job.Spec.Template.Spec.ServiceAccountName; got != "builder" {
			return fmt.Errorf("the Job runs as %q, want builder", got)
		}
		return nil
	})
	stepTask := &schedv1.AgentTask{}
	testenv.Eventually(t, 100*time.Millisecond, time.Minute, "the workflow's step task", func(ctx context.Context) error {
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.StepTask(wf.Name, 0, "a")}, stepTask); err != nil {
			return err
		}
		if got := stepTask.Spec.ServiceAccountName; got != "builder" {
			return fmt.Errorf("the step task runs as %q, want builder", got)
		}
		return nil
	})
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(task), task); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(wf), wf); err != nil {
		t.Fatal(err)
	}

	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cron), cron); err != nil {
		t.Fatal(err)
	}
	run := func(name string, edit func(*schedv1.WorkflowSpec)) *schedv1.Workflow {
		r := &schedv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels:          map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue},
			OwnerReferences: []metav1.OwnerReference{ownedBy(cron, "CronWorkflow")}},
			Spec: *cron.Spec.WorkflowSpec.DeepCopy()}
		if edit != nil {
			edit(&r.Spec)
		}
		return r
	}
	create := func(obj client.Object) error { return op.Create(ctx, obj, client.DryRunAll) }
	refused := map[string]struct {
		obj  client.Object
		want string
	}{
		"a task's Job as another account": {
			job(ns, "build-other", ownedBy(task, "AgentTask"), "deployer"),
			`would run as service account "deployer" but its AgentTask build runs as "builder"`,
		},
		"a task's Job as the namespace's default": {
			job(ns, "build-default", ownedBy(task, "AgentTask"), ""),
			`would run as service account "default" but its AgentTask build runs as "builder"`,
		},
		"a task's Job naming the account in the deprecated field": {
			func() *batchv1.Job {
				// The API server takes it as serviceAccountName.
				j := job(ns, "build-deprecated", ownedBy(task, "AgentTask"), "")
				j.Spec.Template.Spec.DeprecatedServiceAccount = "deployer"
				return j
			}(),
			`would run as service account "deployer"`,
		},
		"a Job of a task that does not exist": {
			job(ns, "ghost", metav1.OwnerReference{APIVersion: schedv1.GroupVersion.String(), Kind: "AgentTask", Name: "ghost", UID: "0d0e5d8c-2b8e-4d8e-9f4a-1f1f1f1f1f1f", Controller: new(true)}, "builder"),
			"its controller AgentTask " + ns + "/ghost (uid 0d0e5d8c-2b8e-4d8e-9f4a-1f1f1f1f1f1f) is not in the operator's cache: it does not exist",
		},
		"a Job claiming a task by name with another uid": {
			job(ns, "build-uid", metav1.OwnerReference{APIVersion: schedv1.GroupVersion.String(), Kind: "AgentTask", Name: task.Name, UID: "0d0e5d8c-2b8e-4d8e-9f4a-000000000000", Controller: new(true)}, "builder"),
			"is not in the operator's cache: it does not exist",
		},
		"a Job no task controls": {
			job(ns, "orphan", metav1.OwnerReference{}, "builder"),
			"has no AgentTask as its controller",
		},
		"a step's task as another account": {
			stepTaskAs(ns, "release-a-other", wf, "0", "deployer"),
			`would run as service account "deployer" but its step "a" of Workflow release runs as "builder"`,
		},
		"a finally step's task as another account": {
			stepTaskAs(ns, "release-tidy-other", wf, names.FinallyStep(0), "builder"),
			`would run as service account "builder" but its step "tidy" of Workflow release runs as "default"`,
		},
		"a schedule's run with a step as another account": {
			run("nightly-other", func(s *schedv1.WorkflowSpec) { s.Steps[0].Task.ServiceAccountName = "deployer" }),
			`step "a" would run as service account "deployer" but its CronWorkflow nightly's workflowSpec runs it as "builder"`,
		},
		"a schedule's run with a step more": {
			run("nightly-more", func(s *schedv1.WorkflowSpec) {
				s.Steps = append(s.Steps, schedv1.WorkflowStep{Name: "b", Task: schedv1.AgentTaskSpec{Image: "busybox", ServiceAccountName: "deployer"}})
			}),
			"has 3 steps and finally steps but its CronWorkflow nightly's workflowSpec has 2",
		},
		"a Workflow no schedule controls": {
			func() *schedv1.Workflow { r := run("loose", nil); r.OwnerReferences = nil; return r }(),
			"has no CronWorkflow as its controller",
		},
		"a task of a step the workflow does not have": {
			stepTaskAs(ns, "release-b", wf, "7", "builder"),
			`names step "7"`,
		},
	}
	for name, tc := range refused {
		t.Run("refused: "+name, func(t *testing.T) {
			err := create(tc.obj)
			if err == nil || !strings.Contains(err.Error(), accounts.WebhookName) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want the webhook's refusal saying %q", err, tc.want)
			}
			// A missing owner may be one the cache has not seen yet: the
			// operator retries (refusal.Transient); any other is final.
			if missing := strings.Contains(tc.want, "not in the operator's cache"); missing != apierrors.IsServiceUnavailable(err) || missing == apierrors.IsForbidden(err) {
				t.Errorf("err = %v, want %s", err, map[bool]string{true: "503, retryable", false: "forbidden, final"}[missing])
			}
		})
	}
	t.Run("allowed: a task's Job as its account", func(t *testing.T) {
		if err := create(job(ns, "build-again", ownedBy(task, "AgentTask"), "builder")); err != nil {
			t.Errorf("refused: %v", err)
		}
	})
	t.Run("allowed: a step's task as its step's account", func(t *testing.T) {
		if err := create(stepTaskAs(ns, "release-a-again", wf, "0", "builder")); err != nil {
			t.Errorf("refused: %v", err)
		}
	})
	t.Run("allowed: a schedule's run as its workflowSpec", func(t *testing.T) {
		if err := create(run("nightly-1", nil)); err != nil {
			t.Errorf("refused: %v", err)
		}
	})
	t.Run("allowed: updating a step's task, its account unchanged", func(t *testing.T) {
		// The operator cancels and labels tasks, also while their workflow
		// goes; an update that keeps the account is not held.
		if err := op.Patch(ctx, stepTask, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`)), client.DryRunAll); err != nil {
			t.Errorf("refused: %v", err)
		}
	})
	t.Run("not in anyone else's way: an admin's Job no task controls", func(t *testing.T) {
		// matchConditions send only the operator's requests to the webhook.
		if err := env.Client.Create(ctx, job(ns, "admins", metav1.OwnerReference{}, "deployer"), client.DryRunAll); err != nil {
			t.Errorf("refused: %v", err)
		}
	})
}

func ownedBy(obj client.Object, kind string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: schedv1.GroupVersion.String(), Kind: kind, Name: obj.GetName(), UID: obj.GetUID(), Controller: new(true), BlockOwnerDeletion: new(true)}
}

// job is a restricted Job as the operator makes them, controlled by
// owner (none when owner has no name), running as sa.
func job(ns, name string, owner metav1.OwnerReference, sa string) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy:      corev1.RestartPolicyNever,
			ServiceAccountName: sa,
			SecurityContext:    podsecurity.Pod(),
			Containers:         []corev1.Container{{Name: "task", Image: "busybox", SecurityContext: podsecurity.Container(nil)}},
		}}},
	}
	if owner.Name != "" {
		j.OwnerReferences = []metav1.OwnerReference{owner}
	}
	return j
}

// stepTaskAs is an AgentTask of wf's step labelled step, running as sa.
func stepTaskAs(ns, name string, wf *schedv1.Workflow, step, sa string) *schedv1.AgentTask {
	return &schedv1.AgentTask{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{
				schedv1.LabelManagedBy:    schedv1.ManagedByValue,
				schedv1.LabelWorkflow:     names.Join(wf.Name),
				schedv1.LabelWorkflowStep: step,
			},
			OwnerReferences: []metav1.OwnerReference{ownedBy(wf, "Workflow")},
		},
		Spec: schedv1.AgentTaskSpec{Image: "busybox", ServiceAccountName: sa},
	}
}
