package quota_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/quota"
)

var env *plugintest.Env

func TestMain(m *testing.M) { plugintest.Main(m, &env) }

// tierNamespace makes ns a tenant of tier free with a quota of limits, as
// the operator would, and writes its status as the quota controller would
// (this API server runs neither): counted, or not (counted false).
func tierNamespace(t *testing.T, ns string, limits corev1.ResourceList, counted bool) {
	t.Helper()
	ctx := t.Context()
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: schedv1.TierObjectName, Namespace: ns,
			Labels:      map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelTier: "free"},
			Annotations: map[string]string{schedv1.AnnotationTierTTLDefault: "15m", schedv1.AnnotationTierTTLMax: "24h"}},
		Spec: corev1.ResourceQuotaSpec{Hard: limits},
	}
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := env.Client.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, q); err != nil {
		t.Fatal(err)
	}
	n.Labels = map[string]string{schedv1.LabelTier: "free"}
	if err := env.Client.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	q.Status.Hard = limits.DeepCopy()
	q.Status.Used = corev1.ResourceList{}
	for r := range limits {
		if counted {
			q.Status.Used[r] = resource.MustParse("0")
		}
	}
	if err := env.Client.Status().Update(ctx, q); err != nil {
		t.Fatal(err)
	}
}

// TestFullQuotaSaysWhatToDo: a free tenant whose quota holds 2 workflows,
// 2 tasks, 1 app and 1 CronWorkflow, all taken: one workflow finished (its TTL deletes it
// in about 14 minutes), one running with its step task, a finished task
// without a TTL, an app. Each command that creates one more is refused
// with exit 9 and told what counts and what to do.
func TestFullQuotaSaysWhatToDo(t *testing.T) {
	const ns = "full"
	tierNamespace(t, ns, plugintest.Resources(quota.CountWorkflows, "2", quota.CountTasks, "2", quota.CountApps, "1", quota.CountSchedules, "1"), true)
	soon := metav1.NewTime(time.Now().Add(14*time.Minute + 30*time.Second))
	done := MakeWorkflow("done", ns).Step("a", "busybox").Step("b", "busybox").Obj()
	done.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowFailed, CompletionTime: &metav1.Time{Time: time.Now()},
		Steps:  []schedv1.StepStatus{{Name: "a", Phase: schedv1.StepSucceeded}, {Name: "b", Phase: schedv1.StepFailed}},
		Expiry: &schedv1.Expiry{TTLAfterFinished: metav1.Duration{Duration: 15 * time.Minute}, Source: schedv1.ExpiryFromTierDefault, Tier: "free", DeleteTime: &soon}}
	// The API server's quota admission counts each one created.
	env.CreateWithStatus(t, done)
	running := MakeWorkflow("running", ns).Step("a", "busybox").Obj()
	running.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning}
	env.CreateWithStatus(t, running)
	step := MakeAgentTask("running-0-a", ns).Image("busybox").Obj()
	step.OwnerReferences = []metav1.OwnerReference{{APIVersion: schedv1.GroupVersion.String(), Kind: "Workflow", Name: "running", UID: running.UID, Controller: ptr.To(true)}}
	step.Status = schedv1.AgentTaskStatus{Phase: schedv1.TaskRunning}
	env.CreateWithStatus(t, step)
	old := MakeAgentTask("old", ns).Image("busybox").Obj()
	old.Status = schedv1.AgentTaskStatus{Phase: schedv1.TaskSucceeded, CompletionTime: &metav1.Time{Time: time.Now()}}
	env.CreateWithStatus(t, old)
	app := MakeUserDeployment("shop", ns).Service("web", "nginx", 80, schedv1.ExposureInternal).Obj()
	app.Status = schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentRunning}
	env.CreateWithStatus(t, app)
	env.CreateWithStatus(t, MakeCronWorkflow("nightly", ns, "0 2 * * *").Step("a", "busybox").Obj())

	file := filepath.Join(t.TempDir(), "wf.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: sched.kubectl-sched.dev/v1alpha1\nkind: Workflow\nmetadata:\n  name: next\nspec:\n  steps:\n    - name: a\n      task: {image: busybox}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	workflows := []string{
		"namespace full is at its limit of 2 Workflows (count/workflows.sched.kubectl-sched.dev, quota kubectl-sched-tier): 2 in use; nothing was created",
		"1 of the 2 Workflows have finished; finished ones count until their TTL deletes them. The first to go is done, in 14m (tier free's default ttlAfterFinished).",
		"List them: kubectl sched get workflows -n full",
		"Delete a finished one: kubectl sched delete workflow NAME -n full",
		"'kubectl sched tenant describe full'",
	}
	env.RunErrorCases(t, map[string]plugintest.ErrorCase{
		"workflow run":   {Args: []string{"workflow", "run", "-f", file, "-n", ns}, Code: cmdutil.ExitQuota, Stderr: workflows},
		"workflow retry": {Args: []string{"workflow", "retry", "done", "-n", ns}, Code: cmdutil.ExitQuota, Stderr: workflows},
		"task run": {Args: []string{"task", "run", "another", "--image", "busybox", "-n", ns}, Code: cmdutil.ExitQuota, Stderr: []string{
			"namespace full is at its limit of 2 AgentTasks (count/agenttasks.sched.kubectl-sched.dev, quota kubectl-sched-tier): 2 in use",
			"1 of the 2 AgentTasks have finished; finished ones count until their TTL deletes them. 1 of them have no TTL and stay until deleted.",
			"Workflow steps' tasks among them: 1; they go with their workflow (delete the workflow to free them).",
			"Delete a finished one: kubectl sched delete agenttask NAME -n full",
		}},
		"workflow trigger": {Args: []string{"workflow", "trigger", "nightly", "-n", ns}, Code: cmdutil.ExitQuota, Stderr: workflows},
		"workflow schedule": {Args: []string{"workflow", "schedule", "weekly", "--cron", "@weekly", "-f", file, "-n", ns}, Code: cmdutil.ExitQuota, Stderr: []string{
			"namespace full is at its limit of 1 CronWorkflows (count/cronworkflows.sched.kubectl-sched.dev, quota kubectl-sched-tier): 1 in use",
			"Every CronWorkflow counts while it exists, suspended ones too; its runs count as Workflows.",
			"Delete one you no longer need: kubectl sched delete cronworkflow NAME -n full",
		}},
		"deploy": {Args: []string{"deploy", "shop2", "--template", "web-app", "--set", "apiImage=api:1", "-n", ns}, Code: cmdutil.ExitQuota, Stderr: []string{
			"namespace full is at its limit of 1 apps (count/userdeployments.sched.kubectl-sched.dev, quota kubectl-sched-tier): 1 in use",
			"Every app counts while it exists, stopped ones too.",
			"Delete one you no longer need: kubectl sched delete userdeployment NAME -n full",
		}},
	}, func(t *testing.T, r plugintest.Result) {
		t.Logf("stderr:\n%s", r.Stderr)
		if strings.Contains(r.Stderr, "RBAC") || strings.Contains(r.Stderr, "you may not") {
			t.Errorf("a quota's refusal reads as RBAC's:\n%s", r.Stderr)
		}
	})
}

// TestUncountedQuotaSaysWait: a quota the quota controller has not
// counted refuses with "status unknown"; the plugin says to wait.
func TestUncountedQuotaSaysWait(t *testing.T) {
	const ns = "uncounted"
	tierNamespace(t, ns, plugintest.Resources(quota.CountTasks, "20"), false)
	env.RunErrorCases(t, map[string]plugintest.ErrorCase{
		"task run": {Args: []string{"task", "run", "first", "--image", "busybox", "-n", ns}, Code: cmdutil.ExitQuota, Stderr: []string{
			"namespace uncounted: quota kubectl-sched-tier has not counted count/agenttasks.sched.kubectl-sched.dev yet, so the API server refuses creates of it; nothing was created",
			"run the command again in a moment",
		}},
	}, nil)
}
