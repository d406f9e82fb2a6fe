package logs_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

var env *plugintest.Env

func TestMain(m *testing.M) { plugintest.Main(m, &env) }

var ctx = context.Background()

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := env.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// simulatedPod is a started pod of app on a kwok node: the API server
// finds no kubelet there. With restarted its container crashed once
// before.
func simulatedPod(t *testing.T, ns, name string, labels map[string]string, restarted ...bool) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: "kwok-logs", Containers: []corev1.Container{{Name: "main", Image: "web:1"}}},
	}
	create(t, pod)
	cs := corev1.ContainerStatus{Name: "main", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}
	if len(restarted) > 0 && restarted[0] {
		cs.RestartCount = 1
		cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", StartedAt: metav1.Now(), FinishedAt: metav1.Now()}
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
}

func TestErrors(t *testing.T) {
	const ns = "logs-errors"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	// A kwok node at a loopback address where no kubelet listens.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-logs", Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}}}
	create(t, node)
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.1.0.11"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = 10250
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	create(t,
		MakeUserDeployment("shop", ns).Service("web", "web:1", 80, schedv1.ExposureInternal).Obj(),
		MakeUserDeployment("empty", ns).Service("web", "web:1", 80, schedv1.ExposureInternal).Obj(),
		MakeUserDeployment("dup", ns).Service("web", "web:1", 80, schedv1.ExposureInternal).Obj(),
		MakeAgentTask("dup", ns).Image("busybox:1.36").Obj(),
		MakeUserDeployment("crashy", ns).Service("web", "web:1", 80, schedv1.ExposureInternal).Obj(),
		MakeAgentTask("lone", ns).Image("busybox:1.36").Obj(),
		MakeWorkflow("rollout", ns).Step("plan", "busybox").Step("deploy", "busybox", "${item}").ForEach([]string{"eu", "us"}, "", 0).Obj(),
	)
	simulatedPod(t, ns, "shop-web-1", map[string]string{schedv1.LabelUserDeployment: "shop", schedv1.LabelService: "web"})
	simulatedPod(t, ns, "crashy-web-1", map[string]string{schedv1.LabelUserDeployment: "crashy", schedv1.LabelService: "web"}, true)
	for _, p := range []struct{ name, step, item string }{{"rollout-0-plan-x", "0", ""}, {"rollout-1-deploy-0-x", "1", "0"}, {"rollout-1-deploy-1-x", "1", "1"}} {
		l := map[string]string{schedv1.LabelWorkflow: "rollout", schedv1.LabelWorkflowStep: p.step}
		if p.item != "" {
			l[schedv1.LabelWorkflowItem] = p.item
		}
		simulatedPod(t, ns, p.name, l)
	}
	nobody, err := env.UserKubeconfig("nobody")
	if err != nil {
		t.Fatal(err)
	}

	cases := map[string]plugintest.ErrorCase{
		"no name":             {Args: []string{"logs"}, Code: cmdutil.ExitUsage, Stderr: []string{"accepts between 1 and 2 arg(s), received 0"}},
		"a kind without pods": {Args: []string{"logs", "schedext/lavd"}, Code: cmdutil.ExitUsage, Stderr: []string{`logs cannot show "schedext"`, "ud/shop"}},
		"an unknown kind":     {Args: []string{"logs", "pods/x"}, Code: cmdutil.ExitUsage, Stderr: []string{`logs cannot show "pods"`}},
		"bad tail":            {Args: []string{"logs", "shop", "--tail", "-2"}, Code: cmdutil.ExitUsage, Stderr: []string{"--tail must be -1 or more"}},
		"bad since":           {Args: []string{"logs", "shop", "--since", "-1m"}, Code: cmdutil.ExitUsage, Stderr: []string{"--since must not be negative"}},
		"service of a task":   {Args: []string{"logs", "at/dup", "web"}, Code: cmdutil.ExitUsage, Stderr: []string{"agenttask/dup has no services or steps"}},
		"no such step": {Args: []string{"logs", "wf/rollout", "ship", "-n", ns}, Code: cmdutil.ExitNotFound,
			Stderr: []string{`workflow rollout has no step "ship"`, "Its steps: plan, deploy."}},
		"item without a step":     {Args: []string{"logs", "wf/rollout", "--item", "1"}, Code: cmdutil.ExitUsage, Stderr: []string{"--item needs a workflow and its forEach STEP"}},
		"item of an app":          {Args: []string{"logs", "shop", "web", "--item", "1"}, Code: cmdutil.ExitUsage, Stderr: []string{"--item needs a workflow and its forEach STEP"}},
		"item of a step, no loop": {Args: []string{"logs", "wf/rollout", "plan", "--item", "0", "-n", ns}, Code: cmdutil.ExitUsage, Stderr: []string{"step plan of workflow rollout has no forEach, so no items", "Drop --item"}},
		"negative item":           {Args: []string{"logs", "wf/rollout", "deploy", "--item", "-2"}, Code: cmdutil.ExitUsage, Stderr: []string{"--item must be 0 or more"}},
		// Simulated pods have no logs, but the command names those it chose.
		"the items of a step": {Args: []string{"logs", "wf/rollout", "deploy", "-c", "main", "-n", ns}, Code: cmdutil.ExitNoLogs,
			Stderr: []string{"pod rollout-1-deploy-0-x runs on simulated node", "pod rollout-1-deploy-1-x runs on simulated node"}},
		"one item": {Args: []string{"logs", "wf/rollout", "deploy", "--item", "1", "-c", "main", "-n", ns}, Code: cmdutil.ExitNoLogs,
			Stderr: []string{"pod rollout-1-deploy-1-x runs on simulated node"}},
		"not found":         {Args: []string{"logs", "nope", "-n", ns}, Code: cmdutil.ExitNotFound, Stderr: []string{`no app, task or workflow named "nope" in namespace "logs-errors"`}},
		"not found by kind": {Args: []string{"logs", "wf/nope", "-n", ns}, Code: cmdutil.ExitNotFound, Stderr: []string{`workflows.sched.kubectl-sched.dev "nope" not found`}},
		"no such service":   {Args: []string{"logs", "shop", "db", "-n", ns}, Code: cmdutil.ExitNotFound, Stderr: []string{`userdeployment shop has no service "db"`, "Its services: web."}},
		"two kinds":         {Args: []string{"logs", "dup", "-n", ns}, Code: cmdutil.ExitUsage, Stderr: []string{`"dup" names more than one kind`, "userdeployment/dup, agenttask/dup"}},
		"no pods":           {Args: []string{"logs", "empty", "-n", ns}, Code: cmdutil.ExitError, Stderr: []string{"userdeployment empty has no pods", "-f waits for them"}},
		"a simulated pod": {Args: []string{"logs", "shop", "-n", ns}, Code: cmdutil.ExitNoLogs,
			Stderr: []string{"pod shop-web-1 runs on simulated node kwok-logs (kwok): simulated pods have no logs", "no pod of userdeployment shop has logs to show"}},
		"previous and follow": {Args: []string{"logs", "shop", "-p", "-f"}, Code: cmdutil.ExitUsage, Stderr: []string{"--previous and --follow cannot be combined", "Drop -f"}},
		"previous of a task": {Args: []string{"logs", "at/dup", "--previous"}, Code: cmdutil.ExitUsage,
			Stderr: []string{"--previous applies to an app: agenttask dup runs each attempt in a pod of its own", "'kubectl sched logs agenttask/dup' shows every attempt"}},
		"previous of a workflow": {Args: []string{"logs", "wf/release", "-p"}, Code: cmdutil.ExitUsage, Stderr: []string{"--previous applies to an app: workflow release runs each attempt"}},
		"previous of a task found by name": {Args: []string{"logs", "lone", "-p", "-n", ns}, Code: cmdutil.ExitUsage,
			Stderr: []string{"--previous applies to an app", "'kubectl sched logs agenttask/lone' shows every attempt"}},
		"previous: nothing restarted": {Args: []string{"logs", "shop", "-p", "-n", ns}, Code: cmdutil.ExitError,
			Stderr: []string{"pod shop-web-1: container main has not ended or restarted: no previous log", "no container of userdeployment shop has ended or restarted, so there is no previous log", "Without -p"}},
		"previous of a simulated pod": {Args: []string{"logs", "crashy", "--previous", "-n", ns}, Code: cmdutil.ExitNoLogs,
			Stderr: []string{"pod crashy-web-1 runs on simulated node kwok-logs (kwok)", "no pod of userdeployment crashy has logs to show"}},
		"forbidden":  {Args: []string{"logs", "shop", "-n", ns, "--kubeconfig", nobody}, NoKubeconfig: true, Code: cmdutil.ExitForbidden, Stderr: []string{"forbidden"}},
		"no cluster": {Args: []string{"logs", "shop", "--server", "https://127.0.0.1:1", "--insecure-skip-tls-verify"}, NoKubeconfig: true, Code: cmdutil.ExitUnreachable, Stderr: []string{"cannot reach the cluster"}},
	}
	env.RunErrorCases(t, cases, func(t *testing.T, r plugintest.Result) {
		// Only the pods of what was asked for.
		for _, pod := range []string{"rollout-0-plan-x", "rollout-1-deploy-0-x"} {
			if strings.Contains(t.Name(), "one_item") && strings.Contains(r.Stderr, pod) || strings.Contains(t.Name(), "items_of_a_step") && pod == "rollout-0-plan-x" && strings.Contains(r.Stderr, pod) {
				t.Errorf("stderr names pod %s, which is not asked for: %s", pod, r.Stderr)
			}
		}
	})

	t.Run("no CRDs", func(t *testing.T) {
		env.RemoveCRD(t, "userdeployments.sched.kubectl-sched.dev", &schedv1.UserDeploymentList{})
		r := env.Run("logs", "ud/shop", "-n", ns)
		if r.Code != cmdutil.ExitNotInstalled || !strings.Contains(r.Stderr, "kubectl sched install") {
			t.Errorf("exit %d, want %d; stderr %q", r.Code, cmdutil.ExitNotInstalled, r.Stderr)
		}
	})
}

// TestDeletedPods: the pods of succeeded tasks that the operator deleted
// after --succeeded-pod-retention are explained, with when, why and where
// the outputs are, and exit 8 (no logs to show) when none is left.
func TestDeletedPods(t *testing.T) {
	const ns = "logs-deleted"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	deletedAt := metav1.NewTime(time.Date(2026, 11, 25, 10, 15, 0, 0, time.UTC))
	succeeded := func(task *schedv1.AgentTask, pod string) {
		t.Helper()
		create(t, task)
		task.Status = schedv1.AgentTaskStatus{Phase: schedv1.TaskSucceeded, PodName: pod, Outputs: map[string]string{"answer": "42"},
			Conditions: []metav1.Condition{{Type: schedv1.ConditionPodDeleted, Status: metav1.ConditionTrue, Reason: schedv1.ReasonSucceededPodRetention,
				LastTransitionTime: deletedAt,
				Message:            "pod " + pod + " was deleted 10m after the task succeeded, as the cluster's --succeeded-pod-retention says; its log went with it, its outputs are in the task's status"}}}
		if err := env.Client.Status().Update(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	succeeded(MakeAgentTask("pruned", ns).Image("busybox:1.36").Obj(), "pruned-x7k2p")
	wf := MakeWorkflow("cleaned", ns).Step("build", "busybox:1.36").Step("test", "busybox:1.36").Obj()
	create(t, wf)
	for i, step := range []string{"build", "test"} {
		task := MakeAgentTask(names.StepTask("cleaned", i, step), ns).Image("busybox:1.36").Obj()
		task.Labels = map[string]string{schedv1.LabelWorkflow: "cleaned", schedv1.LabelWorkflowStep: strconv.Itoa(i)}
		task.OwnerReferences = []metav1.OwnerReference{{APIVersion: schedv1.GroupVersion.String(), Kind: "Workflow", Name: wf.Name, UID: wf.UID, Controller: ptr.To(true)}}
		succeeded(task, task.Name+"-abcde")
	}
	// A workflow whose forEach step's items succeeded and lost their pods;
	// its first step's pod is still there.
	loop := MakeWorkflow("looped", ns).Step("plan", "busybox:1.36").Step("deploy", "busybox:1.36", "${item}").ForEach([]string{"eu", "us"}, "", 0).Obj()
	create(t, loop)
	for k := range 2 {
		task := MakeAgentTask(names.ItemTask("looped", 1, "deploy", k), ns).Image("busybox:1.36").Obj()
		task.Labels = map[string]string{schedv1.LabelWorkflow: "looped", schedv1.LabelWorkflowStep: "1", schedv1.LabelWorkflowItem: strconv.Itoa(k)}
		task.OwnerReferences = []metav1.OwnerReference{{APIVersion: schedv1.GroupVersion.String(), Kind: "Workflow", Name: loop.Name, UID: loop.UID, Controller: ptr.To(true)}}
		succeeded(task, task.Name+"-abcde")
	}
	create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "looped-0-plan-x", Namespace: ns, Labels: map[string]string{schedv1.LabelWorkflow: "looped", schedv1.LabelWorkflowStep: "0"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "task", Image: "busybox:1.36"}}}})

	cases := map[string]plugintest.ErrorCase{
		"a task": {Args: []string{"logs", "at/pruned", "-n", ns}, Code: cmdutil.ExitNoLogs, Stderr: []string{
			"agenttask pruned: pod pruned-x7k2p was deleted 10m after the task succeeded, as the cluster's --succeeded-pod-retention says; its log went with it, its outputs are in the task's status (deleted at 2026-11-25T10:15:00Z)",
			"'kubectl sched describe agenttask pruned' shows the outputs",
			"kubectl sched install --succeeded-pod-retention 1h",
		}},
		"a workflow": {Args: []string{"logs", "wf/cleaned", "-n", ns}, Code: cmdutil.ExitNoLogs, Stderr: []string{
			"warning: step build: pod cleaned-0-build-abcde was deleted 10m after the task succeeded",
			"warning: step test: pod cleaned-1-test-abcde was deleted",
			"workflow cleaned has no pods left: the operator deleted the pods of its 2 succeeded step(s), with their logs",
			"--succeeded-pod-retention",
		}},
		"one item": {Args: []string{"logs", "wf/looped", "deploy", "--item", "1", "-n", ns}, Code: cmdutil.ExitNoLogs, Stderr: []string{
			"error: item 1 of step deploy: pod looped-1-deploy-1-abcde was deleted 10m after the task succeeded, as the cluster's --succeeded-pod-retention says; its log went with it, its outputs are in the task's status (deleted at 2026-11-25T10:15:00Z)",
			"'kubectl sched describe workflow looped' shows the outputs",
			"kubectl sched install --succeeded-pod-retention 1h",
		}},
		"a forEach step": {Args: []string{"logs", "wf/looped", "deploy", "-n", ns}, Code: cmdutil.ExitNoLogs, Stderr: []string{
			"warning: item 0 of step deploy: pod looped-1-deploy-0-abcde was deleted",
			"warning: item 1 of step deploy: pod looped-1-deploy-1-abcde was deleted",
			"step deploy of workflow looped has no pods left: the operator deleted the pods of its 2 succeeded item(s), with their logs",
			"kubectl sched install --succeeded-pod-retention 1h",
		}},
	}
	env.RunErrorCases(t, cases, func(t *testing.T, r plugintest.Result) {
		// Only the pods asked for are explained: not the other steps'.
		looped := strings.HasSuffix(t.Name(), "one_item") || strings.HasSuffix(t.Name(), "a_forEach_step")
		if looped && strings.Contains(r.Stderr, "plan") || strings.HasSuffix(t.Name(), "one_item") && strings.Contains(r.Stderr, "item 0") {
			t.Errorf("stderr names pods not asked for:\n%s", r.Stderr)
		}
	})
}

// TestKeptLogs: for pods that are gone, the end of the log the operator
// kept in their task's status is printed in the pod's place among the
// live ones, after a line that says so (and that it is cut); a pod whose
// log could not be kept is named on stderr. Stdout and stderr are goldens.
func TestKeptLogs(t *testing.T) {
	const ns = "logs-kept"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	at := func(s int) *metav1.Time { return ptr.To(metav1.NewTime(t0.Add(time.Duration(s) * time.Second))) }
	withStatus := func(task *schedv1.AgentTask, st schedv1.AgentTaskStatus) {
		t.Helper()
		create(t, task)
		task.Status = st
		if err := env.Client.Status().Update(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	// A task of three attempts whose pods are all gone: the first's log
	// kept whole, the second's cut, the third's not read. Its PodDeleted
	// condition is not repeated: the kept log stands for the pod.
	withStatus(MakeAgentTask("retried", ns).Image("busybox:1.36").Obj(), schedv1.AgentTaskStatus{
		Phase: schedv1.TaskFailed, PodName: "retried-c",
		Conditions: []metav1.Condition{{Type: schedv1.ConditionPodDeleted, Status: metav1.ConditionTrue, Reason: schedv1.ReasonSucceededPodRetention,
			LastTransitionTime: metav1.NewTime(t0), Message: "pod retried-c was deleted"}},
		Logs: []schedv1.KeptLog{
			{Pod: "retried-b", CreationTime: at(20), ExitCode: ptr.To[int32](1), Reason: schedv1.LogTruncated, Log: "line 499\nline 500 \x1b[31mred\x1b[0m\n",
				Message: "the end of a longer log: its last 2 line(s), 30 bytes (a pod's kept log is at most 500 lines and 32 KiB)"},
			{Pod: "retried-a", CreationTime: at(0), ExitCode: ptr.To[int32](1), Reason: schedv1.LogKept, Log: "first try\nno answer"},
			{Pod: "retried-c", CreationTime: at(40), Reason: schedv1.LogUnavailable, Message: "the API server could not read the log from node sim-a"},
		},
	})
	// A workflow: step build's pod gone, its log kept; forEach step test's
	// item 0 gone and kept, item 1 live on a simulated node (no log); the
	// finally step's gone and kept.
	wf := MakeWorkflow("kept", ns).Step("build", "busybox:1.36").Step("test", "busybox:1.36", "${item}").ForEach([]string{"eu", "us"}, "", 0).Obj()
	wf.Spec.Finally = []schedv1.WorkflowStep{{Name: "cleanup", Task: schedv1.AgentTaskSpec{Image: "busybox:1.36"}}}
	create(t, wf)
	// Finished, so that -f ends.
	wf.Status.Phase = schedv1.WorkflowSucceeded
	if err := env.Client.Status().Update(ctx, wf); err != nil {
		t.Fatal(err)
	}
	stepTask := func(name string, labels map[string]string, pod, log string, created int) {
		task := MakeAgentTask(name, ns).Image("busybox:1.36").Obj()
		task.Labels = labels
		task.OwnerReferences = []metav1.OwnerReference{{APIVersion: schedv1.GroupVersion.String(), Kind: "Workflow", Name: wf.Name, UID: wf.UID, Controller: ptr.To(true)}}
		st := schedv1.AgentTaskStatus{Phase: schedv1.TaskSucceeded, PodName: pod}
		if log != "" {
			st.Logs = []schedv1.KeptLog{{Pod: pod, CreationTime: at(created), ExitCode: ptr.To[int32](0), Reason: schedv1.LogKept, Log: log}}
		}
		withStatus(task, st)
	}
	stepTask(names.StepTask("kept", 0, "build"), map[string]string{schedv1.LabelWorkflow: "kept", schedv1.LabelWorkflowStep: "0"}, "kept-0-build-x", "built\n", 0)
	stepTask(names.ItemTask("kept", 1, "test", 0), map[string]string{schedv1.LabelWorkflow: "kept", schedv1.LabelWorkflowStep: "1", schedv1.LabelWorkflowItem: "0"}, "kept-1-test-0-x", "ok eu\n", 10)
	stepTask(names.ItemTask("kept", 1, "test", 1), map[string]string{schedv1.LabelWorkflow: "kept", schedv1.LabelWorkflowStep: "1", schedv1.LabelWorkflowItem: "1"}, "kept-1-test-1-x", "", 0)
	stepTask(names.FinallyTask("kept", 0, "cleanup"), map[string]string{schedv1.LabelWorkflow: "kept", schedv1.LabelWorkflowStep: names.FinallyStep(0)}, "kept-f0-cleanup-x", "cleaned\n", 30)
	// The live pod, on a node where no kubelet listens.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-kept", Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}}}
	create(t, node)
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.1.0.12"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = 10250
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kept-1-test-1-x", Namespace: ns, CreationTimestamp: metav1.NewTime(t0),
			Labels: map[string]string{schedv1.LabelWorkflow: "kept", schedv1.LabelWorkflowStep: "1", schedv1.LabelWorkflowItem: "1"}},
		Spec: corev1.PodSpec{NodeName: "kwok-kept", Containers: []corev1.Container{{Name: "task", Image: "busybox:1.36"}}},
	}
	create(t, pod)
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "task", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}

	for name, args := range map[string][]string{
		"kept-task":        {"logs", "at/retried"},
		"kept-task-tail-1": {"logs", "at/retried", "--tail", "1"},
		"kept-workflow":    {"logs", "wf/kept"},
		"kept-follow":      {"logs", "wf/kept", "test", "-f"},
		"kept-other-c":     {"logs", "at/retried", "-c", "sidecar"},
		"kept-task-logs":   {"task", "logs", "retried-x"},
	} {
		t.Run(name, func(t *testing.T) {
			if name == "kept-task-logs" {
				// task logs shows the latest attempt: a gone pod kept whole.
				withStatus(MakeAgentTask("retried-x", ns).Image("busybox:1.36").Obj(), schedv1.AgentTaskStatus{Phase: schedv1.TaskSucceeded, PodName: "retried-x-a",
					Logs: []schedv1.KeptLog{{Pod: "retried-x-a", CreationTime: at(0), ExitCode: ptr.To[int32](0), Reason: schedv1.LogKept, Log: "the answer is 42\n"}}})
			}
			r := env.Run(append(args, "-n", ns)...)
			// The pod's address differs from run to run only in the error.
			stderr := regexp.MustCompile(`: Get "[^"]*": .*`).ReplaceAllString(r.Stderr, ": (the kubelet's address): ...")
			plugintest.Golden(t, name, fmt.Sprintf("$ kubectl sched %s\n--- stdout\n%s--- stderr\n%s--- exit %d\n", strings.Join(args, " "), r.Stdout, stderr, r.Code))
		})
	}
}
