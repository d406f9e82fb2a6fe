package describe_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

var env *plugintest.Env

func TestMain(m *testing.M) {
	// Start and completion times print in local time; pin it.
	time.Local = time.UTC
	plugintest.Main(m, &env)
}

const ns = "describe-test"

// past is when the test's conditions and events happened: long enough ago
// that ages print as two-digit years, which normalise keeps aligned.
var past = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

var (
	createdRE = regexp.MustCompile(`(?m)^(Created:\s+).*$`)
	yearsRE   = regexp.MustCompile(`\b\d\dy\b`)
)

// normalise replaces what depends on the clock: the server-set creation
// time and ages in years (same width, so columns stay aligned).
func normalise(s string) string {
	s = createdRE.ReplaceAllString(s, "${1}<created>")
	return yearsRE.ReplaceAllString(s, "NNy")
}

func at(d time.Duration) *metav1.Time { return ptr.To(metav1.NewTime(past.Add(d))) }

func cond(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(past)}
}

// event records an event about obj as a controller would.
func event(t *testing.T, obj client.Object, kind, typ, reason, msg string, offset time.Duration, count int32) {
	t.Helper()
	evNS := obj.GetNamespace()
	if evNS == "" {
		evNS = metav1.NamespaceDefault
	}
	e := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: obj.GetName() + ".", Namespace: evNS},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: schedv1.GroupVersion.String(), Kind: kind, Name: obj.GetName(), Namespace: obj.GetNamespace(), UID: obj.GetUID(),
		},
		Type: typ, Reason: reason, Message: msg, Count: count,
		FirstTimestamp: metav1.NewTime(past), LastTimestamp: metav1.NewTime(past.Add(offset)),
		Source: corev1.EventSource{Component: strings.ToLower(kind) + "-controller"},
	}
	if err := env.Client.Create(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

func labels(kindLabel, value string) map[string]string {
	return map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, kindLabel: value}
}

func pod(name, namespace, node string, l map[string]string, ready bool, phase corev1.PodPhase) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: l},
		Spec: corev1.PodSpec{NodeName: node, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "busybox:1.37"}}},
	}
	p.Status = corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "main", Image: "busybox:1.37", ImageID: "docker.io/library/busybox@sha256:0", Ready: ready, RestartCount: 1,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}},
	}}}
	if ready {
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(past)}}
	}
	return p
}

func TestDescribe(t *testing.T) {
	ctx := context.Background()
	for _, n := range []string{ns, "kubectl-sched-schedulers"} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}

	// AgentTask with its Job, pod, conditions and events.
	task := builders.MakeAgentTask("hello", ns).Image("busybox:1.37").Command("sh", "-c", "echo answer=42 > /dev/termination-log").
		Env("GREETING", "hi there").Timeout(10*time.Minute).Retries(2).TTL(time.Hour, schedv1.CleanupJob).
		Repo(schedv1.Repo{Name: "app", URL: "https://git.example.com/team/app.git", Ref: "v1.2", SecretRef: &schedv1.RepoSecretRef{Name: "git-token"}}).
		Repo(schedv1.Repo{Name: "docs", URL: "http://git.local/docs", Path: "/docs"}).Obj()
	task.Spec.Env = append(task.Spec.Env, schedv1.EnvVar{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "api"}, Key: "token"}}})
	task.Status = schedv1.AgentTaskStatus{Phase: schedv1.TaskSucceeded, JobName: "hello", PodName: "hello-x7k2p", Attempts: 1, ExitCode: ptr.To[int32](0),
		Reason: schedv1.ReasonSucceeded, Message: "the container exited 0", StartTime: at(0), CompletionTime: at(12 * time.Second),
		Outputs: map[string]string{"answer": "42", "url": "http://example.com/report", "repo.app.commit": "8f3c2a1d9b7e6f5a4c3b2a1908f7e6d5c4b3a291"},
		Conditions: []metav1.Condition{
			cond(schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonSucceeded, "the task finished"),
			cond(schedv1.ConditionSucceeded, metav1.ConditionTrue, schedv1.ReasonSucceeded, "the container exited 0"),
		}}
	jobLabels := labels(schedv1.LabelAgentTask, "hello")
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns, Labels: jobLabels},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: jobLabels},
			Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "busybox:1.37"}}},
		}},
	}
	env.CreateWithStatus(t, task, job, pod("hello-x7k2p", ns, "node-1", jobLabels, false, corev1.PodSucceeded),
		// Another task's pod must not show.
		pod("other-abcde", ns, "node-1", labels(schedv1.LabelAgentTask, "other"), false, corev1.PodSucceeded))
	event(t, task, "AgentTask", corev1.EventTypeNormal, "Created", "Created Job hello", 0, 1)
	event(t, task, "AgentTask", corev1.EventTypeNormal, "Succeeded", "The container exited 0 after 12s", 12*time.Second, 1)
	event(t, task, "AgentTask", corev1.EventTypeWarning, "OutputsTruncated", "Output url was cut\nto 1 KiB", 5*time.Second, 3)

	// A task waiting to retry a failed attempt.
	flaky := builders.MakeAgentTask("flaky", ns).Image("fetcher:2").Retry(2, 30*time.Second, 75).Obj()
	flaky.Status = schedv1.AgentTaskStatus{Phase: schedv1.TaskRunning, JobName: "flaky", PodName: "flaky-a1b2c", Attempts: 1, ExitCode: ptr.To[int32](75),
		Reason: schedv1.ReasonBackingOff, Message: "attempt 1 of 3 failed (exit code 75); the next starts at 04:05:48 UTC (backoff 30s); it said: mirror busy",
		StartTime: at(0), NextAttemptTime: at(42 * time.Second)}
	env.CreateWithStatus(t, flaky)
	event(t, flaky, "AgentTask", corev1.EventTypeWarning, schedv1.ReasonBackingOff, "attempt 1 of 3 failed (exit code 75); the next starts at 04:05:48 UTC (backoff 30s); it said: mirror busy", 12*time.Second, 1)

	// Workflow with step statuses and its step tasks.
	wf := builders.MakeWorkflow("nightly", ns).Param("env", "staging").
		Step("fetch", "busybox", "fetch").Step("build", "busybox", "build", "${steps.fetch.output.url}").Step("ship", "busybox").Timeout(time.Hour).Obj()
	wf.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowFailed, Progress: "1/3", CurrentStep: 1, StartTime: at(0), CompletionTime: at(95 * time.Second),
		Reason: schedv1.ReasonStepFailed, Message: "step 1 (build) failed: exit code 2",
		Steps: []schedv1.StepStatus{
			{Name: "fetch", TaskName: "nightly-0-fetch", Phase: schedv1.StepSucceeded, StartTime: at(0), CompletionTime: at(30 * time.Second), Outputs: map[string]string{"url": "http://x/a.tgz", "size": "12"}},
			{Name: "build", TaskName: "nightly-1-build", Phase: schedv1.StepFailed, StartTime: at(31 * time.Second), CompletionTime: at(95 * time.Second), Message: "exit code 2"},
			{Name: "ship", Phase: schedv1.StepSkipped, Message: "an earlier step failed"},
		},
		Conditions: []metav1.Condition{cond(schedv1.ConditionSucceeded, metav1.ConditionFalse, schedv1.ReasonStepFailed, "step 1 (build) failed")},
		// Its tier's default deleted it long ago, as far as this clock goes.
		Expiry: &schedv1.Expiry{TTLAfterFinished: metav1.Duration{Duration: 15 * time.Minute}, Source: schedv1.ExpiryFromTierDefault, Tier: "free", DeleteTime: at(95*time.Second + 15*time.Minute)}}
	stepTask := func(name, step string, phase schedv1.AgentTaskPhase, exit int32) *schedv1.AgentTask {
		st := builders.MakeAgentTask(name, ns).Image("busybox").Obj()
		st.Labels = map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelWorkflow: "nightly", schedv1.LabelWorkflowStep: step}
		st.Status = schedv1.AgentTaskStatus{Phase: phase, ExitCode: ptr.To(exit), Attempts: 1, JobName: name}
		return st
	}
	env.CreateWithStatus(t, wf, stepTask("nightly-1-build", "1", schedv1.TaskFailed, 2), stepTask("nightly-0-fetch", "0", schedv1.TaskSucceeded, 0))
	event(t, wf, "Workflow", corev1.EventTypeWarning, "StepFailed", "Step 1 (build) failed: exit code 2", 95*time.Second, 1)

	// UserDeployment with secrets by reference, and what the operator made.
	ud := builders.MakeUserDeployment("shop", ns).
		Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).Service("api", "shop/api:2.1", 8080, schedv1.ExposureInternal).
		Config("LOG_LEVEL", "debug").Config("FEATURES", "cart").Ingress("shop.example.com").TLS("shop-tls").Obj()
	ud.Spec.Secrets = []schedv1.SecretReference{
		{Name: "db", SecretName: "shop-db", EnvPrefix: "DB_"},
		{Name: "stripe", External: &schedv1.ExternalSecretSource{Key: "vault/shop/stripe", Property: "token"}, MountPath: "/etc/stripe", Services: []string{"api"}},
	}
	ud.Status = schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentDegraded, Ready: "1/2", URLs: []string{"https://shop.example.com/"}, CurrentRevision: 3,
		Services: []schedv1.ServiceStatus{{Name: "web", ReadyReplicas: 1, DesiredReplicas: 1}, {Name: "api", ReadyReplicas: 0, DesiredReplicas: 1, Message: "image shop/api:2.1: ErrImagePull"}},
		Conditions: []metav1.Condition{
			cond(schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonImagePull, "service api: image shop/api:2.1 cannot be pulled"),
			cond(schedv1.ConditionDegraded, metav1.ConditionTrue, schedv1.ReasonImagePull, "service api: image shop/api:2.1 cannot be pulled"),
		}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-db", Namespace: ns}, StringData: map[string]string{"password": "s3cr3t-value"}}
	deployment := func(service string) *appsv1.Deployment {
		l := labels(schedv1.LabelUserDeployment, "shop")
		l[schedv1.LabelService] = service
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "shop-" + service, Namespace: ns, Labels: l},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: l},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: service, Image: "nginx:1.27"}}}}},
		}
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-web", Namespace: ns, Labels: labels(schedv1.LabelUserDeployment, "shop")},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.0.0.80", Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	pathType := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns, Labels: labels(schedv1.LabelUserDeployment, "shop")},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("nginx"), Rules: []networkingv1.IngressRule{{Host: "shop.example.com",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: &pathType, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "shop-web", Port: networkingv1.ServiceBackendPort{Number: 80}}},
			}}}}}}},
	}
	env.CreateWithStatus(t, ud, secret, deployment("web"), deployment("api"), svc, ing)

	// SchedExt with its DaemonSet's pods in the scheduler namespace.
	scx := builders.MakeSchedExt("lavd").Scheduler("scx_lavd").NodeSelector("node.kubectl-sched.dev/pool", "batch").Args("--performance").Obj()
	scx.Status = schedv1.SchedExtStatus{ResolvedImage: "ghcr.io/sched-ext/scx_lavd:1.0", DaemonSetName: "scx-lavd", DesiredNodes: 3, ReadyNodes: 1, AvailableNodes: 1, UnavailableNodes: 2,
		ConflictingNodes: []string{"node-3"}, UnsupportedNodes: []string{"node-4"},
		Conditions: []metav1.Condition{
			cond(schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonUnsupportedKernel, "attached on 1 of 3 nodes; node-4 runs a kernel without sched_ext"),
			cond(schedv1.ConditionDegraded, metav1.ConditionTrue, schedv1.ReasonSchedulerConflict, "node-3 runs SchedExt rusty"),
		}}
	scxLabels := labels(schedv1.LabelSchedExt, "lavd")
	env.CreateWithStatus(t, scx,
		pod("scx-lavd-aaaaa", "kubectl-sched-schedulers", "node-1", scxLabels, true, corev1.PodRunning),
		pod("scx-lavd-bbbbb", "kubectl-sched-schedulers", "node-4", scxLabels, false, corev1.PodRunning))
	event(t, scx, "SchedExt", corev1.EventTypeWarning, schedv1.ReasonSchedulerConflict, "node-3 already runs SchedExt rusty", 0, 1)

	// CronWorkflow in Berlin with a scheduled run that failed and a manual
	// one running.
	cw := builders.MakeCronWorkflow("nightly-cron", ns, "0 2 * * *").TimeZone("Europe/Berlin").Concurrency(schedv1.ConcurrencyForbid).
		Deadline(600).History(5, 2).Step("fetch", "alpine/git:2").Step("build", "busybox:1.37").Obj()
	cw.Spec.WorkflowSpec.Params = []schedv1.WorkflowParam{{Name: "repo", Value: "https://example.com/shop.git"}}
	cw.Spec.WorkflowSpec.Steps[1].DependsOn = []string{"fetch"}
	cw.Spec.WorkflowSpec.Timeout = &metav1.Duration{Duration: 30 * time.Minute}
	cw.Status = schedv1.CronWorkflowStatus{
		LastScheduleTime: at(0), NextScheduleTime: at(24 * time.Hour), ActiveCount: 1,
		Active:     []schedv1.CronWorkflowRun{{Name: "nightly-cron-manual-981173406"}},
		Conditions: []metav1.Condition{cond(schedv1.ConditionReady, metav1.ConditionTrue, schedv1.ReasonScheduled, "runs start on schedule; the next at 2001-02-04 05:05:06 CET")},
	}
	env.CreateWithStatus(t, cw)
	scheduled := builders.MakeWorkflow("nightly-cron-981173106", ns).Step("fetch", "alpine/git:2").Obj()
	scheduled.Annotations = map[string]string{schedv1.AnnotationScheduledTime: past.Format(time.RFC3339)}
	scheduled.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowFailed, Progress: "0/1", StartTime: at(time.Second), CompletionTime: at(46 * time.Second)}
	manual := builders.MakeWorkflow("nightly-cron-manual-981173406", ns).Step("fetch", "alpine/git:2").Obj()
	manual.Annotations = map[string]string{schedv1.AnnotationManualRun: "true"}
	manual.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Progress: "0/1", StartTime: at(5 * time.Minute)}
	other := builders.MakeWorkflow("not-a-run", ns).Step("fetch", "alpine/git:2").Obj()
	for _, r := range []*schedv1.Workflow{scheduled, manual} {
		r.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(cw, schedv1.GroupVersion.WithKind("CronWorkflow"))}
	}
	env.CreateWithStatus(t, scheduled, manual, other)
	event(t, cw, "CronWorkflow", corev1.EventTypeNormal, schedv1.ReasonCreated, "created run nightly-cron-981173106 for 2001-02-03 05:05:06 CET", 0, 1)

	cases := map[string]struct {
		args   []string
		golden string
	}{
		"cronworkflow":   {args: []string{"describe", "cwf", "nightly-cron", "-n", ns}, golden: "cronworkflow"},
		"agenttask":      {args: []string{"describe", "at", "hello", "-n", ns}, golden: "agenttask"},
		"backing off":    {args: []string{"describe", "at", "flaky", "-n", ns}, golden: "agenttask-backoff"},
		"workflow":       {args: []string{"describe", "workflow/nightly", "-n", ns}, golden: "workflow"},
		"userdeployment": {args: []string{"describe", "userdeployments", "shop", "-n", ns}, golden: "userdeployment"},
		"schedext":       {args: []string{"describe", "scx", "lavd"}, golden: "schedext"},
		"no events":      {args: []string{"describe", "at", "nightly-0-fetch", "-n", ns, "--show-events=false"}, golden: "step-task"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := env.Run(tc.args...)
			if res.Code != 0 {
				t.Fatalf("exit %d: %s", res.Code, res.Stderr)
			}
			if strings.Contains(res.Stdout, "s3cr3t") {
				t.Errorf("a secret value was printed:\n%s", res.Stdout)
			}
			plugintest.Golden(t, tc.golden, normalise(res.Stdout))
		})
	}

	t.Run("every task matching a selector", func(t *testing.T) {
		res := env.Run("describe", "at", "-n", ns, "-l", schedv1.LabelWorkflow+"=nightly")
		if res.Code != 0 || strings.Count(res.Stdout, "\nKind:") != 2 || !strings.Contains(res.Stdout, "Name:         nightly-0-fetch") {
			t.Errorf("exit %d, want both step tasks:\n%s%s", res.Code, res.Stdout, res.Stderr)
		}
	})
}

func TestDescribeErrors(t *testing.T) {
	nobody, err := env.UserKubeconfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]plugintest.ErrorCase{
		"no kind":      {Args: []string{"describe"}, Code: cmdutil.ExitUsage, Stderr: []string{"name a kind"}},
		"unknown kind": {Args: []string{"describe", "deployment", "x"}, Code: cmdutil.ExitUsage, Stderr: []string{"agenttask (at)"}},
		"not found":    {Args: []string{"describe", "wf", "missing", "-n", ns}, Code: cmdutil.ExitNotFound, Stderr: []string{`workflows.sched.kubectl-sched.dev "missing" not found`}},
		"forbidden":    {Args: []string{"describe", "ud", "shop", "-n", ns}, As: nobody, Code: cmdutil.ExitForbidden, Stderr: []string{`user "nobody" may not get userdeployments.sched.kubectl-sched.dev "shop" in namespace "describe-test"`}},
	}
	env.RunErrorCases(t, cases, nil)
}

// TestDescribeVolumes: an app with volumes shows its StatefulSets and the
// claims that keep its data.
func TestDescribeVolumes(t *testing.T) {
	const vns = "describe-volumes"
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: vns}}); err != nil {
		t.Fatal(err)
	}
	ud := builders.MakeUserDeployment("db", vns).Service("postgres", "postgres:17", 5432, schedv1.ExposureInternal).
		EditService("postgres", func(s *schedv1.ServiceSpec) {
			s.Volumes = []schedv1.ServiceVolume{{Name: "data", Size: resource.MustParse("5Gi"), MountPath: "/var/lib/postgresql/data"}}
		}).Obj()
	l := labels(schedv1.LabelUserDeployment, "db")
	l[schedv1.LabelService] = "postgres"
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db-postgres", Namespace: vns, Labels: l},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: l}, ServiceName: "db-postgres",
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "postgres", Image: "postgres:17"}}}}},
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data-db-postgres-0", Namespace: vns, Labels: l},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To("fast"),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}}},
	}
	env.CreateWithStatus(t, ud, sts, claim)
	res := env.Run("describe", "ud", "db", "-n", vns)
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^StatefulSets:\n\s+Name\s+Ready\s+Up-to-date\s+Available\n[ -]+\n\s+db-postgres\s+0/1\s`),
		regexp.MustCompile(`(?m)^Volume Claims:\n\s+Name\s+Status\s+Capacity\s+Storage Class\s+Volume\n[ -]+\n\s+data-db-postgres-0\s+Pending\s+5Gi\s+fast\s+<none>`),
	} {
		if !want.MatchString(res.Stdout) {
			t.Errorf("output does not match %s:\n%s", want, res.Stdout)
		}
	}
}

// TestDescribeBranches: a workflow whose steps run side by side shows what
// each step waits for.
func TestDescribeBranches(t *testing.T) {
	const bns = "describe-branches"
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bns}}); err != nil {
		t.Fatal(err)
	}
	wf := builders.MakeWorkflow("dia", bns).Step("fetch", "busybox").
		Step("lint", "busybox").DependsOn("fetch").Step("test", "busybox").DependsOn("fetch").
		Step("ship", "busybox").DependsOn("lint", "test").Obj()
	env.CreateWithStatus(t, wf)
	res := env.Run("describe", "wf", "dia", "-n", bns)
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	want := regexp.MustCompile(`(?m)^\s+#\s+Name\s+After\s+Phase.*\n[ -]+\n\s+0\s+fetch\s+-\s+Waiting.*\n\s+1\s+lint\s+fetch\s+Waiting.*\n\s+2\s+test\s+fetch\s+Waiting.*\n\s+3\s+ship\s+lint,test\s+Waiting`)
	if !want.MatchString(res.Stdout) {
		t.Errorf("output does not match %s:\n%s", want, res.Stdout)
	}
}

// TestDescribeGatesAndFinally: a skipped step with its when, a step waiting
// for approval with the command and its approvers, a decision and who made
// it, who asked for the run, suspension,
// how the steps ended and the finally steps in a section of their own.
func TestDescribeGatesAndFinally(t *testing.T) {
	const gns = "describe-gates"
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gns}}); err != nil {
		t.Fatal(err)
	}
	me, err := kubernetes.NewForConfigOrDie(env.Config).AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	user := me.Status.UserInfo.Username
	wf := builders.MakeWorkflow("gated", gns).Param("channel", "stable").
		Step("test", "busybox").
		Step("canary", "busybox").DependsOn("test").When("params.channel == 'canary'").
		Approval("review", "ship it?").DependsOn("test").
		Approval("deploy", "really?").DependsOn("review").Approvers([]string{"alice", "bob"}, []string{"release"}).
		Finally("notify", schedv1.AgentTaskSpec{Image: "busybox", Args: []string{"${workflow.phase}"}}).
		Decide("review", schedv1.Approved, user, "CHG-1").Suspend(true).RequestedBy(user).Obj()
	wf.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Progress: "2/4", StartTime: at(0), Reason: schedv1.ReasonWaitingForApproval,
		Message: "step deploy is waiting for approval: kubectl sched workflow approve gated deploy",
		Steps: []schedv1.StepStatus{
			{Name: "test", TaskName: "gated-0-test", Phase: schedv1.StepSucceeded, StartTime: at(0), CompletionTime: at(10 * time.Second)},
			{Name: "canary", Phase: schedv1.StepSkipped, Reason: schedv1.ReasonWhenFalse, Message: `skipped: when "params.channel == 'canary'" was false`},
			{Name: "review", Phase: schedv1.StepSucceeded, Reason: schedv1.ReasonApproved, StartTime: at(10 * time.Second), CompletionTime: at(40 * time.Second),
				Message: "approved by " + user + ": CHG-1", Outputs: map[string]string{"approvedBy": user}},
			{Name: "deploy", Phase: schedv1.StepWaitingForApproval, Reason: schedv1.ReasonWaitingForApproval, StartTime: at(40 * time.Second),
				Message: "really? (waiting for approval by alice, bob or a member of group release: kubectl sched workflow approve gated deploy (or deny))"},
		},
		Finally:    []schedv1.StepStatus{{Name: "notify", Phase: schedv1.StepWaiting}},
		Conditions: []metav1.Condition{cond(schedv1.ConditionSuspended, metav1.ConditionTrue, schedv1.ReasonSuspended, "no new step starts until it is resumed: kubectl sched workflow resume gated")},
	}
	env.CreateWithStatus(t, wf)
	res := env.Run("describe", "wf", "gated", "-n", gns)
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	plugintest.Golden(t, "workflow-gates", strings.ReplaceAll(normalise(res.Stdout), user, "USER"))
}

// TestDescribeLoop: a forEach step's progress in its row, the items that
// did not succeed with their task and why, and the item tasks by item.
func TestDescribeLoop(t *testing.T) {
	const lns = "describe-loop"
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: lns}}); err != nil {
		t.Fatal(err)
	}
	items := make([]string, 11)
	for k := range items {
		items[k] = fmt.Sprintf("r%d", k)
	}
	wf := builders.MakeWorkflow("rollout", lns).
		Step("plan", "busybox").
		Step("deploy", "busybox", "${item}").ForEach(items, "", 3).Obj()
	done := func(k int32, phase schedv1.StepPhase, msg string) schedv1.ItemStatus {
		return schedv1.ItemStatus{Index: k, Phase: phase, StartTime: at(10 * time.Second), CompletionTime: at(20 * time.Second), Message: msg}
	}
	wf.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Progress: "1/2", CurrentStep: 1, StartTime: at(0), Reason: schedv1.ReasonRunning,
		Message: "step 1 (deploy) runs its items: 9/11 items succeeded, 1 running, 1 failed; no more items start, as one did not succeed",
		Steps: []schedv1.StepStatus{
			{Name: "plan", TaskName: "rollout-0-plan", Phase: schedv1.StepSucceeded, StartTime: at(0), CompletionTime: at(10 * time.Second)},
			{Name: "deploy", Phase: schedv1.StepRunning, StartTime: at(10 * time.Second), Message: "9/11 items succeeded, 1 running, 1 failed; no more items start, as one did not succeed",
				Outputs: map[string]string{"url": `["https://r0",null]`},
				ForEach: &schedv1.ForEachStatus{Total: 11, Succeeded: 9, Running: 1, Failed: 1}},
		}}
	fe := wf.Status.Steps[1].ForEach
	for k := range int32(9) {
		fe.Items = append(fe.Items, done(k, schedv1.StepSucceeded, ""))
	}
	fe.Items = append(fe.Items, done(9, schedv1.StepFailed, "exited with code 3 after 1 attempt(s): no quota in r9"),
		schedv1.ItemStatus{Index: 10, Phase: schedv1.StepRunning, StartTime: at(15 * time.Second)})
	env.CreateWithStatus(t, wf)
	task := func(name, step, item string, phase schedv1.AgentTaskPhase) *schedv1.AgentTask {
		st := builders.MakeAgentTask(name, lns).Image("busybox").Obj()
		st.Labels = map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelWorkflow: "rollout", schedv1.LabelWorkflowStep: step}
		if item != "" {
			st.Labels[schedv1.LabelWorkflowItem] = item
		}
		st.Status = schedv1.AgentTaskStatus{Phase: phase, Attempts: 1, JobName: name}
		return st
	}
	env.CreateWithStatus(t, task("rollout-1-deploy-10", "1", "10", schedv1.TaskRunning), task("rollout-1-deploy-9", "1", "9", schedv1.TaskFailed),
		task("rollout-1-deploy-2", "1", "2", schedv1.TaskSucceeded), task("rollout-0-plan", "0", "", schedv1.TaskSucceeded))
	res := env.Run("describe", "wf", "rollout", "-n", lns)
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	plugintest.Golden(t, "workflow-loop", normalise(res.Stdout))
}

// TestDescribeWorkspaces: each workspace with what it asks, its claim's
// phase once made, the node a ReadWriteOnce one keeps its pods on, and
// whether it goes with the run.
func TestDescribeWorkspaces(t *testing.T) {
	const wns = "describe-workspaces"
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: wns}}); err != nil {
		t.Fatal(err)
	}
	wf := builders.MakeWorkflow("ci", wns).Workspace("src", "1Gi").Workspace("cache", "5Gi").
		Spec(func(s *schedv1.WorkflowSpec) {
			s.Workspaces[1].AccessMode, s.Workspaces[1].StorageClass, s.Workspaces[1].Keep = schedv1.ReadWriteMany, "nfs", true
		}).
		Step("checkout", "git").Mount("src", "/src", false).
		Step("build", "builder").Mount("src", "/src", true).Mount("cache", "/cache", false).Obj()
	wf.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Progress: "1/2", StartTime: at(0),
		Steps: []schedv1.StepStatus{
			{Name: "checkout", TaskName: "ci-0-checkout", Phase: schedv1.StepSucceeded, StartTime: at(0), CompletionTime: at(10 * time.Second)},
			{Name: "build", Phase: schedv1.StepWaiting},
		},
		Workspaces: []schedv1.WorkspaceStatus{{Name: "src", ClaimName: "ci-ws-src", Node: "node-a"}},
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "ci-ws-src", Namespace: wns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
	env.CreateWithStatus(t, wf, claim)
	res := env.Run("describe", "wf", "ci", "-n", wns)
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	want := regexp.MustCompile(`(?m)^Workspaces:\n\s+Name\s+Size\s+Access\s+Storage Class\s+Claim\s+Phase\s+Node\s+Deleted\n[ -]+\n` +
		`\s+src\s+1Gi\s+ReadWriteOnce\s+<none>\s+ci-ws-src\s+Bound\s+node-a\s+with the run\n` +
		`\s+cache\s+5Gi\s+ReadWriteMany\s+nfs\s+-\s+-\s+-\s+kept\n`)
	if !want.MatchString(res.Stdout) {
		t.Errorf("output does not match %s:\n%s", want, res.Stdout)
	}
}
