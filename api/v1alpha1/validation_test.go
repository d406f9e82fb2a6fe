package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

const ns = "default"

func validTask() *AgentTaskWrapper { return MakeAgentTask("t", ns).Image("busybox") }

func validApp() *UserDeploymentWrapper {
	return MakeUserDeployment("shop", ns).Service("web", "nginx", 80, schedv1.ExposurePublic)
}

func validWorkflow() *WorkflowWrapper {
	return MakeWorkflow("wf", ns).Step("fetch", "busybox").Step("build", "busybox")
}

// TestInvalidObjectsRefused creates each object against the real API server
// and expects it refused with a message naming the bad field.
func TestInvalidObjectsRefused(t *testing.T) {
	cases := map[string]struct {
		obj client.Object
		// wantField and wantMsg must both appear in the server's message.
		wantField string
		wantMsg   string
	}{
		// UserDeployment
		"ud: no services": {
			obj:       MakeUserDeployment("a", ns).Obj(),
			wantField: "spec.services", wantMsg: "Required value",
		},
		"ud: duplicate service names": {
			obj:       validApp().Service("web", "other", 81, schedv1.ExposureInternal).Obj(),
			wantField: "spec.services[1]", wantMsg: "Duplicate value",
		},
		"ud: service name not a DNS label": {
			obj:       MakeUserDeployment("a", ns).Service("Web_1", "nginx", 80, schedv1.ExposureInternal).Obj(),
			wantField: "spec.services[0].name", wantMsg: "should match",
		},
		"ud: negative replicas": {
			obj:       validApp().Spec(func(s *schedv1.UserDeploymentSpec) { s.Services[0].Replicas = ptr.To[int32](-1) }).Obj(),
			wantField: "spec.services[0].replicas", wantMsg: "greater than or equal to 0",
		},
		"ud: restartedAt names an unknown service": {
			obj:       validApp().Spec(func(s *schedv1.UserDeploymentSpec) { s.RestartedAt = map[string]string{"db": "2026-11-24T20:00:00Z"} }).Obj(),
			wantField: "spec.restartedAt", wantMsg: "names a service that is not in spec.services",
		},
		"ud: allowFrom on an Open app": {
			obj: validApp().Spec(func(s *schedv1.UserDeploymentSpec) {
				s.NetworkIsolation = schedv1.IsolationOpen
				s.AllowFrom = &schedv1.AllowFrom{Tasks: true}
			}).Obj(),
			wantField: "spec.allowFrom", wantMsg: "remove allowFrom or set networkIsolation: Isolated",
		},
		"ud: allowFrom names an app that is no DNS label": {
			obj:       validApp().Spec(func(s *schedv1.UserDeploymentSpec) { s.AllowFrom = &schedv1.AllowFrom{Apps: []string{"Billing_API"}} }).Obj(),
			wantField: "spec.allowFrom.apps[0]", wantMsg: "should match",
		},
		"ud: allowFrom metrics port out of range": {
			obj:       validApp().Spec(func(s *schedv1.UserDeploymentSpec) { s.AllowFrom = &schedv1.AllowFrom{MetricsPorts: []int32{70000}} }).Obj(),
			wantField: "spec.allowFrom.metricsPorts[0]", wantMsg: "less than or equal to 65535",
		},
		"ud: allowFrom namespace selector without labels": {
			obj: validApp().Spec(func(s *schedv1.UserDeploymentSpec) {
				s.AllowFrom = &schedv1.AllowFrom{Namespaces: []schedv1.NamespaceLabels{{MatchLabels: map[string]string{}}}}
			}).Obj(),
			wantField: "spec.allowFrom.namespaces[0].matchLabels", wantMsg: "should have at least 1 properties",
		},
		"ud: unknown egress": {
			obj:       validApp().Spec(func(s *schedv1.UserDeploymentSpec) { s.Egress = "Anywhere" }).Obj(),
			wantField: "spec.egress", wantMsg: "supported values",
		},
		"ud: unknown exposure": {
			obj:       MakeUserDeployment("a", ns).Service("web", "nginx", 80, "Everywhere").Obj(),
			wantField: "spec.services[0].exposure", wantMsg: "Unsupported value",
		},
		"ud: public service without a port": {
			obj:       MakeUserDeployment("a", ns).Service("web", "nginx", 0, schedv1.ExposurePublic).Obj(),
			wantField: "spec.services[0]", wantMsg: "needs at least one port",
		},
		"ud: port out of range": {
			obj:       MakeUserDeployment("a", ns).Service("web", "nginx", 70000, schedv1.ExposureInternal).Obj(),
			wantField: "spec.services[0].ports[0].port", wantMsg: "less than or equal to 65535",
		},
		"ud: secret with both a Secret and an external key": {
			obj: validApp().Spec(func(s *schedv1.UserDeploymentSpec) {
				s.Secrets = []schedv1.SecretReference{{Name: "db", SecretName: "db", External: &schedv1.ExternalSecretSource{Key: "k"}}}
			}).Obj(),
			wantField: "spec.secrets[0]", wantMsg: "exactly one of secretName or external",
		},
		"ud: secret for an unknown service": {
			obj: validApp().Spec(func(s *schedv1.UserDeploymentSpec) {
				s.Secrets = []schedv1.SecretReference{{Name: "db", SecretName: "db", Services: []string{"nope"}}}
			}).Obj(),
			wantField: "spec.secrets", wantMsg: "not in spec.services",
		},
		"ud: ingress without a public service": {
			obj:       MakeUserDeployment("a", ns).Service("web", "nginx", 80, schedv1.ExposureInternal).Ingress("a.example.com").Obj(),
			wantField: "spec.ingress", wantMsg: "no service has exposure: Public",
		},
		"ud: derived name over 63 characters": {
			obj:       MakeUserDeployment(strings.Repeat("a", 30), ns).Service(strings.Repeat("b", 35), "nginx", 80, schedv1.ExposureInternal).Obj(),
			wantField: "<nil>", wantMsg: "must fit in 63 characters",
		},
		"ud: unknown state": {
			obj:       validApp().State("Paused").Obj(),
			wantField: "spec.state", wantMsg: "Unsupported value",
		},
		"ud: no revision kept": {
			obj:       validApp().Spec(func(s *schedv1.UserDeploymentSpec) { s.RevisionHistoryLimit = ptr.To[int32](0) }).Obj(),
			wantField: "spec.revisionHistoryLimit", wantMsg: "greater than or equal to 1",
		},
		"ud: too many revisions kept": {
			obj:       validApp().Spec(func(s *schedv1.UserDeploymentSpec) { s.RevisionHistoryLimit = ptr.To[int32](101) }).Obj(),
			wantField: "spec.revisionHistoryLimit", wantMsg: "less than or equal to 100",
		},
		"ud: unknown rollback": {
			obj:       validApp().Spec(func(s *schedv1.UserDeploymentSpec) { s.Rollback = "Always" }).Obj(),
			wantField: "spec.rollback", wantMsg: "Unsupported value",
		},
		"ud: repeated node pool": {
			obj:       validApp().Placement(schedv1.Placement{NodePools: []string{"general", "general"}}).Obj(),
			wantField: "spec.placement.nodePools", wantMsg: "must not repeat a pool",
		},
		"ud: spot required with GPU": {
			obj:       validApp().Placement(schedv1.Placement{WorkloadType: schedv1.WorkloadGPU, Spot: schedv1.SpotRequired}).Obj(),
			wantField: "spec.placement", wantMsg: "spot: Required cannot be combined",
		},
		"ud: progress deadline too short": {
			obj:       validApp().Spec(func(s *schedv1.UserDeploymentSpec) { s.ProgressDeadline = &metav1.Duration{Duration: 9 * time.Second} }).Obj(),
			wantField: "spec.progressDeadline", wantMsg: "progressDeadline must be between 10s and 24h",
		},
		"ud: progress deadline too long": {
			obj:       validApp().Spec(func(s *schedv1.UserDeploymentSpec) { s.ProgressDeadline = &metav1.Duration{Duration: 25 * time.Hour} }).Obj(),
			wantField: "spec.progressDeadline", wantMsg: "progressDeadline must be between 10s and 24h",
		},
		"ud: negative progress deadline": {
			obj:       validApp().Spec(func(s *schedv1.UserDeploymentSpec) { s.ProgressDeadline = &metav1.Duration{Duration: -time.Minute} }).Obj(),
			wantField: "spec.progressDeadline", wantMsg: "should match",
		},

		// AgentTask
		"at: no image": {
			obj:       MakeAgentTask("t", ns).Args("x").Obj(),
			wantField: "spec.image", wantMsg: "at least 1 chars long",
		},
		"at: too many retries": {
			obj:       validTask().Retries(11).Obj(),
			wantField: "spec.retries", wantMsg: "less than or equal to 10",
		},
		"at: retry and retries": {
			obj:       validTask().Retries(2).Retry(2, 30*time.Second).Obj(),
			wantField: "spec.retries", wantMsg: "set retry or retries, not both: retries: N is short for retry: {limit: N}",
		},
		"at: a backoff the Job controller cannot keep": {
			obj:       validTask().Retry(2, 5*time.Second).Obj(),
			wantField: "spec.retry.backoff", wantMsg: "backoff must be at least 10s: the Job controller already waits 10s",
		},
		"at: a backoff past the cap": {
			obj:       validTask().Retry(2, 11*time.Minute).Obj(),
			wantField: "spec.retry.backoff", wantMsg: "backoff must be at most 10m",
		},
		"at: a backoff that is no duration": {
			obj: validTask().Retry(2, 0).Spec(func(s *schedv1.AgentTaskSpec) {
				s.Retry.Backoff = &metav1.Duration{Duration: -time.Minute}
			}).Obj(),
			wantField: "spec.retry.backoff", wantMsg: "should match",
		},
		"at: too many retries in retry": {
			obj:       validTask().Retry(11, 0).Obj(),
			wantField: "spec.retry.limit", wantMsg: "less than or equal to 10",
		},
		"at: exit code 0 to retry": {
			obj:       validTask().Retry(2, 0, 0).Obj(),
			wantField: "spec.retry.onExitCodes[0]", wantMsg: "greater than or equal to 1",
		},
		"at: exit code past 255": {
			obj:       validTask().Retry(2, 0, 2, 256).Obj(),
			wantField: "spec.retry.onExitCodes[1]", wantMsg: "less than or equal to 255",
		},
		"at: an exit code twice": {
			obj:       validTask().Retry(2, 0, 2, 2).Obj(),
			wantField: "spec.retry.onExitCodes[1]", wantMsg: "Duplicate value",
		},
		"at: 33 exit codes": {
			obj: validTask().Retry(2, 0).Spec(func(s *schedv1.AgentTaskSpec) {
				for c := range int32(33) {
					s.Retry.OnExitCodes = append(s.Retry.OnExitCodes, c+1)
				}
			}).Obj(),
			wantField: "spec.retry.onExitCodes", wantMsg: "must have at most 32 items",
		},
		"wf: a step's backoff the Job controller cannot keep": {
			obj: MakeWorkflow("wf", ns).StepTask("a", schedv1.AgentTaskSpec{Image: "busybox",
				Retry: &schedv1.RetryPolicy{Limit: 1, Backoff: &metav1.Duration{Duration: time.Second}}}).Obj(),
			wantField: "spec.steps[0].task.retry.backoff", wantMsg: "backoff must be at least 10s",
		},
		"at: zero timeout": {
			obj:       validTask().Timeout(0).Obj(),
			wantField: "spec.timeout", wantMsg: "timeout must be between 1s and 168h",
		},
		"at: cleanup without a TTL": {
			obj:       validTask().Spec(func(s *schedv1.AgentTaskSpec) { s.Cleanup = schedv1.CleanupTask }).Obj(),
			wantField: "spec.cleanup", wantMsg: "cleanup needs ttlAfterFinished",
		},
		"at: env with value and valueFrom": {
			obj: validTask().Spec(func(s *schedv1.AgentTaskSpec) {
				s.Env = []schedv1.EnvVar{{Name: "A", Value: "x", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
			}).Obj(),
			wantField: "spec.env[0]", wantMsg: "not both",
		},
		"at: unknown workload type": {
			obj:       validTask().Placement(schedv1.Placement{WorkloadType: "Quantum"}).Obj(),
			wantField: "spec.placement.workloadType", wantMsg: "Unsupported value",
		},
		"at: cpuScheduler not an scx scheduler": {
			obj:       validTask().Placement(schedv1.Placement{CPUScheduler: "lavd"}).Obj(),
			wantField: "spec.placement.cpuScheduler", wantMsg: "should match",
		},
		"ud: cpuScheduler not an scx scheduler": {
			obj:       validApp().Placement(schedv1.Placement{CPUScheduler: "scx_LAVD"}).Obj(),
			wantField: "spec.placement.cpuScheduler", wantMsg: "should match",
		},
		"scx: selects by the CPU scheduler label": {
			obj:       MakeSchedExt("s").Scheduler("scx_lavd").NodeSelector(schedv1.NodeLabelCPUScheduler, "scx_rusty").Obj(),
			wantField: "spec.nodeSelector", wantMsg: "set by the operator from what SchedExts attach",
		},
		"at: bad env name": {
			obj:       validTask().Env("1 bad", "x").Obj(),
			wantField: "spec.env[0].name", wantMsg: "should match",
		},

		// Workflow
		"wf: no steps": {
			obj:       MakeWorkflow("wf", ns).Obj(),
			wantField: "spec", wantMsg: "a workflow runs steps: set spec.steps, or spec.workflowTemplateRef",
		},
		"wf: duplicate step names": {
			obj:       validWorkflow().Step("fetch", "busybox").Obj(),
			wantField: "spec.steps[2]", wantMsg: "Duplicate value",
		},
		"wf: dependsOn a later step (a cycle)": {
			obj:       MakeWorkflow("wf", ns).Step("a", "busybox").DependsOn("b").Step("b", "busybox").DependsOn("a").Obj(),
			wantField: "spec.steps[].dependsOn", wantMsg: "may only depend on steps listed before it",
		},
		"wf: dependsOn an unknown step": {
			obj:       MakeWorkflow("wf", ns).Step("a", "busybox").Step("b", "busybox").DependsOn("nope").Obj(),
			wantField: "spec.steps[].dependsOn", wantMsg: "may only depend on steps listed before it",
		},
		"wf: forward reference by index": {
			obj:       MakeWorkflow("wf", ns).Step("a", "busybox", "${steps.1.output.x}").Step("b", "busybox").Obj(),
			wantField: "spec.steps", wantMsg: "only use the outputs of steps before it",
		},
		"wf: forward reference by name": {
			obj:       MakeWorkflow("wf", ns).Step("a", "busybox").Step("b", "busybox", "--in=${steps.c.output.x}").Step("c", "busybox").Obj(),
			wantField: "spec.steps", wantMsg: "only use the outputs of steps before it",
		},
		"wf: a step referencing itself": {
			obj:       MakeWorkflow("wf", ns).StepTask("a", schedv1.AgentTaskSpec{Image: "busybox", Env: []schedv1.EnvVar{{Name: "X", Value: "${steps.a.output.x}"}}}).Obj(),
			wantField: "spec.steps", wantMsg: "only use the outputs of steps before it",
		},
		"wf: unknown step in the image": {
			obj:       MakeWorkflow("wf", ns).Step("a", "busybox").Step("b", "${steps.zzz.output.image}").Obj(),
			wantField: "spec.steps", wantMsg: "only use the outputs of steps before it",
		},
		"wf: unknown param": {
			obj:       validWorkflow().Param("repo", "x").Step("c", "busybox", "${params.branch}").Obj(),
			wantField: "spec.steps", wantMsg: "not in spec.params",
		},
		"wf: a second param right after the first": {
			obj:       validWorkflow().Param("tag", "x").Step("c", "busybox", "${params.tag}${params.branch}").Obj(),
			wantField: "spec.steps", wantMsg: "not in spec.params",
		},
		"wf: malformed reference": {
			obj:       validWorkflow().Step("c", "busybox", "--sha=${steps.fetch.outputs.sha}").Obj(),
			wantField: "spec.steps", wantMsg: `step "c" holds "${steps.fetch.outputs.sha}", which is not a valid reference; references are ${steps.N.output.KEY}`,
		},
		"wf: unterminated reference, quoted short with its line break": {
			obj:       validWorkflow().Step("c", "busybox", "${params.a\n"+strings.Repeat("x", 100)).Obj(),
			wantField: "spec.steps", wantMsg: `step "c" holds "${params.a\n` + strings.Repeat("x", 53) + `...", which is not a valid reference`,
		},
		"wf: a step with a task and an approval": {
			obj: validWorkflow().Spec(func(s *schedv1.WorkflowSpec) {
				s.Steps[1].Approval = &schedv1.StepApproval{Message: "ship?"}
			}).Obj(),
			wantField: "spec.steps[1]", wantMsg: "set exactly one of task and approval",
		},
		"wf: a step with neither a task nor an approval": {
			obj:       validWorkflow().StepTask("empty", schedv1.AgentTaskSpec{}).Obj(),
			wantField: "spec.steps[2]", wantMsg: "set exactly one of task and approval",
		},
		"wf: when written as a reference": {
			obj:       validWorkflow().When("${steps.fetch.output.ok} == 'yes'").Obj(),
			wantField: "spec.steps[1].when", wantMsg: "when is a CEL expression, not a string with ${...} references",
		},
		"wf: when too long": {
			obj:       validWorkflow().When("params.a == '" + strings.Repeat("x", 1024) + "'").Obj(),
			wantField: "spec.steps[1].when", wantMsg: "may not be more than 1024 bytes",
		},
		"wf: a finally step named like a step": {
			obj:       validWorkflow().Finally("fetch", schedv1.AgentTaskSpec{Image: "busybox"}).Obj(),
			wantField: "spec.finally", wantMsg: "a finally step cannot have the name of a step in spec.steps",
		},
		"wf: approvers naming no one": {
			obj:       validWorkflow().Approval("gate", "").Approvers(nil, nil).Obj(),
			wantField: "spec.steps[2].approval.approvers", wantMsg: "approvers names no one: list users or groups",
		},
		"wf: requestedBy too long": {
			obj:       validWorkflow().RequestedBy(strings.Repeat("u", 257)).Obj(),
			wantField: "spec.requestedBy", wantMsg: "may not be more than 256 bytes",
		},
		"wf: a finally approval": {
			obj: validWorkflow().Spec(func(s *schedv1.WorkflowSpec) {
				s.Finally = []schedv1.WorkflowStep{{Name: "ok", Approval: &schedv1.StepApproval{}}}
			}).Obj(),
			wantField: "spec.finally", wantMsg: "a finally step cannot be an approval",
		},
		"wf: too many finally steps": {
			obj: validWorkflow().Spec(func(s *schedv1.WorkflowSpec) {
				for i := range 9 {
					s.Finally = append(s.Finally, schedv1.WorkflowStep{Name: fmt.Sprintf("f%d", i), Task: schedv1.AgentTaskSpec{Image: "busybox"}})
				}
			}).Obj(),
			wantField: "spec.finally", wantMsg: "must have at most 8 items",
		},
		"wf: a decision on a step without an approval": {
			obj:       validWorkflow().Decide("build", schedv1.Approved, "admin", "").Obj(),
			wantField: "spec.approvals", wantMsg: "may only name steps that have an approval",
		},
		"wf: a decision that is neither": {
			obj:       validWorkflow().Approval("gate", "").Decide("gate", "Maybe", "admin", "").Obj(),
			wantField: "spec.approvals[0].decision", wantMsg: "Unsupported value",
		},
		"wf: a finally step depends on a later one": {
			obj: validWorkflow().Finally("a", schedv1.AgentTaskSpec{Image: "busybox"}).DependsOn("b").
				Finally("b", schedv1.AgentTaskSpec{Image: "busybox"}).Obj(),
			wantField: "spec.finally[].dependsOn", wantMsg: "a finally step may only depend on finally steps listed before it",
		},
		"wf: forEach with items and from": {
			obj:       validWorkflow().ForEach([]string{"eu"}, "${steps.fetch.output.regions}", 0).Obj(),
			wantField: "spec.steps[1].forEach", wantMsg: "set exactly one of items (the items written out) and from",
		},
		"wf: forEach without a list": {
			obj:       validWorkflow().ForEach(nil, "", 2).Obj(),
			wantField: "spec.steps[1].forEach", wantMsg: "forEach takes a list: set exactly one of items",
		},
		"wf: forEach of 101 items": {
			obj:       validWorkflow().ForEach(make([]string, 101), "", 0).Obj(),
			wantField: "spec.steps[1].forEach.items", wantMsg: "must have at most 100 items",
		},
		"wf: a forEach item too long": {
			obj:       validWorkflow().ForEach([]string{strings.Repeat("x", 1025)}, "", 0).Obj(),
			wantField: "spec.steps[1].forEach.items[0]", wantMsg: "may not be more than 1024",
		},
		"wf: maxParallel past 100": {
			obj:       validWorkflow().ForEach([]string{"a"}, "", 101).Obj(),
			wantField: "spec.steps[1].forEach.maxParallel", wantMsg: "less than or equal to 100",
		},
		"wf: maxParallel below 1": {
			obj:       validWorkflow().ForEach([]string{"a"}, "", -1).Obj(),
			wantField: "spec.steps[1].forEach.maxParallel", wantMsg: "greater than or equal to 1",
		},
		"wf: a forEach approval": {
			obj:       validWorkflow().Approval("gate", "ship?").ForEach([]string{"eu"}, "", 0).Obj(),
			wantField: "spec.steps[2].forEach", wantMsg: "a forEach step runs its task once per item; it cannot be an approval",
		},
		"wf: a cache on a forEach step": {
			obj: validWorkflow().ForEach([]string{"eu"}, "", 0).Spec(func(s *schedv1.WorkflowSpec) {
				s.Steps[1].Cache = &schedv1.StepCache{Key: "k"}
			}).Obj(),
			wantField: "spec.steps[1].cache", wantMsg: "cache is for a step that runs one task",
		},
		"wf: a cache key over 1024 characters": {
			obj: validWorkflow().Spec(func(s *schedv1.WorkflowSpec) {
				s.Steps[1].Cache = &schedv1.StepCache{Key: strings.Repeat("k", schedv1.MaxCacheKeyLength+1)}
			}).Obj(),
			wantField: "spec.steps[1].cache.key", wantMsg: "Too long",
		},
		"wf: a cache maxAge under 1s": {
			obj: validWorkflow().Spec(func(s *schedv1.WorkflowSpec) {
				s.Steps[1].Cache = &schedv1.StepCache{Key: "k", MaxAge: &metav1.Duration{Duration: time.Millisecond}}
			}).Obj(),
			wantField: "spec.steps[1].cache.maxAge", wantMsg: "cache.maxAge must be between 1s and 8760h",
		},
		"wf: ${item} in a step without forEach": {
			obj:       validWorkflow().Step("c", "busybox", "--region=${item}").Obj(),
			wantField: "spec.steps", wantMsg: `step "c" uses ${item}, which only the task of a forEach step may use (the item it runs for)`,
		},
		"wf: ${item} in a finally step without forEach": {
			obj:       validWorkflow().Finally("notify", schedv1.AgentTaskSpec{Image: "busybox", Args: []string{"${item}"}}).Obj(),
			wantField: "spec.finally", wantMsg: `finally step "notify" uses ${item}, which only the task of a forEach step may use`,
		},
		"wf: forEach.from with text around the reference": {
			obj:       validWorkflow().Step("c", "busybox", "${item}").ForEach(nil, `["${steps.fetch.output.region}"]`, 0).Obj(),
			wantField: "spec.steps", wantMsg: `step "c" has forEach.from "["${steps.fetch.output.region}"]", which must be one reference and nothing else`,
		},
		"wf: forEach.from a later step": {
			obj:       validWorkflow().Step("c", "busybox", "${item}").ForEach(nil, "${steps.later.output.list}", 0).Step("later", "busybox").Obj(),
			wantField: "spec.steps", wantMsg: "a step may only use the outputs of steps before it",
		},
		"wf: forEach.from an undeclared param": {
			obj:       validWorkflow().Step("c", "busybox", "${item}").ForEach(nil, "${params.regions}", 0).Obj(),
			wantField: "spec.steps", wantMsg: "a step uses ${params.NAME} for a NAME that is not in spec.params",
		},
		"wf: a forEach.from too long": {
			// No reference is that long: 143 characters at most.
			obj:       validWorkflow().Step("c", "busybox", "${item}").ForEach(nil, "${params."+strings.Repeat("p", 248)+"}", 0).Obj(),
			wantField: "spec.steps[2].forEach.from", wantMsg: "may not be more than 256",
		},
		"wf: a malformed forEach.from": {
			obj:       validWorkflow().Step("c", "busybox", "${item}").ForEach(nil, "${steps.fetch.outputs.regions}", 0).Obj(),
			wantField: "spec.steps", wantMsg: `step "c" holds "${steps.fetch.outputs.regions}", which is not a valid reference`,
		},
		"wf: workflow.phase in a step": {
			obj:       validWorkflow().Step("c", "busybox", "${workflow.phase}").Obj(),
			wantField: "spec.steps", wantMsg: "only finally steps may use ${workflow.phase}",
		},
		"wf: a finally step uses a later finally step": {
			obj: validWorkflow().Finally("a", schedv1.AgentTaskSpec{Image: "busybox", Args: []string{"${steps.b.output.x}"}}).
				Finally("b", schedv1.AgentTaskSpec{Image: "busybox"}).Obj(),
			wantField: "spec.finally", wantMsg: "a finally step may only use the outputs of the steps of spec.steps",
		},
		"wf: a malformed reference in a finally step": {
			obj:       validWorkflow().Finally("report", schedv1.AgentTaskSpec{Image: "busybox", Args: []string{"${workflow.name}"}}).Obj(),
			wantField: "spec.finally", wantMsg: `finally step "report" holds "${workflow.name}", which is not a valid reference`,
		},
		"wf: bad timeout": {
			obj:       validWorkflow().Spec(func(s *schedv1.WorkflowSpec) { s.Timeout = &metav1.Duration{Duration: -time.Second} }).Obj(),
			wantField: "spec.timeout", wantMsg: "should match",
		},

		// SchedExt
		"scx: name, image and opsName": {
			obj:       MakeSchedExt("s").Scheduler("scx_lavd").Image("example.com/scx:1", "lavd").Obj(),
			wantField: "spec.scheduler.opsName", wantMsg: "only needed with scheduler.image alone",
		},
		"scx: neither name nor image": {
			obj:       MakeSchedExt("s").Obj(),
			wantField: "spec.scheduler", wantMsg: "set scheduler.name",
		},
		"scx: name not an scx scheduler": {
			obj:       MakeSchedExt("s").Scheduler("lavd").Obj(),
			wantField: "spec.scheduler.name", wantMsg: "should match",
		},
		"scx: opsName without image": {
			obj:       MakeSchedExt("s").Scheduler("scx_lavd").Spec(func(s *schedv1.SchedExtSpec) { s.Scheduler.OpsName = "lavd" }).Obj(),
			wantField: "spec.scheduler.opsName", wantMsg: "only needed with scheduler.image",
		},
		"ud: a volume's StatefulSet name too long": {
			obj: MakeUserDeployment(strings.Repeat("a", 30), ns).Service(strings.Repeat("b", 30), "postgres", 5432, schedv1.ExposureInternal).
				EditService(strings.Repeat("b", 30), func(s *schedv1.ServiceSpec) {
					s.Volumes = []schedv1.ServiceVolume{{Name: "data", Size: resource.MustParse("1Gi"), MountPath: "/data"}}
				}).Obj(),
			wantField: "<nil>", wantMsg: "must fit in 52 characters",
		},
		"ud: a volume named like a mounted secret": {
			obj: validApp().EditService("web", func(s *schedv1.ServiceSpec) {
				s.Volumes = []schedv1.ServiceVolume{{Name: "secret-db", Size: resource.MustParse("1Gi"), MountPath: "/data"}}
			}).Obj(),
			wantField: "spec.services[0].volumes[0].name", wantMsg: "taken by mounted secrets",
		},
		"wf: a step mounts an undeclared workspace": {
			obj:       validWorkflow().Workspace("src", "1Gi").Mount("cache", "/cache", false).Obj(),
			wantField: "spec.steps", wantMsg: "declare the workspace in spec.workspaces",
		},
		"wf: a finally step mounts an undeclared workspace": {
			obj: validWorkflow().Finally("report", schedv1.AgentTaskSpec{Image: "busybox",
				Workspaces: []schedv1.WorkspaceMount{{Name: "out", MountPath: "/out"}}}).Obj(),
			wantField: "spec.finally", wantMsg: "declare the workspace in spec.workspaces",
		},
		"wf: a workspace over 1Ti": {
			obj:       validWorkflow().Workspace("src", "2Ti").Obj(),
			wantField: "spec.workspaces[0].size", wantMsg: "at most 1Ti",
		},
		"wf: an empty workspace": {
			obj:       validWorkflow().Workspace("src", "0").Obj(),
			wantField: "spec.workspaces[0].size", wantMsg: "more than 0",
		},
		"wf: five workspaces": {
			obj:       validWorkflow().Workspace("a", "1Gi").Workspace("b", "1Gi").Workspace("c", "1Gi").Workspace("d", "1Gi").Workspace("e", "1Gi").Obj(),
			wantField: "spec.workspaces", wantMsg: "must have at most 4 items",
		},
		"wf: a ReadOnlyMany workspace": {
			obj: validWorkflow().Spec(func(s *schedv1.WorkflowSpec) {
				s.Workspaces = []schedv1.Workspace{{Name: "a", Size: resource.MustParse("1Gi"), AccessMode: "ReadOnlyMany"}}
			}).Obj(),
			wantField: "spec.workspaces[0].accessMode", wantMsg: "Unsupported value",
		},
		"at: a workspace without a claim": {
			obj: validTask().Spec(func(s *schedv1.AgentTaskSpec) {
				s.Workspaces = []schedv1.WorkspaceMount{{Name: "src", MountPath: "/src"}}
			}).Obj(),
			wantField: "spec.workspaces", wantMsg: "set claimName",
		},
		"at: two workspaces at one path": {
			obj:       validTask().Workspace("a", "/w", "a").Workspace("b", "/w", "b").Obj(),
			wantField: "spec.workspaces", wantMsg: "a mountPath of its own",
		},
		"at: a relative mount path": {
			obj:       validTask().Workspace("a", "work", "a").Obj(),
			wantField: "spec.workspaces[0].mountPath", wantMsg: "should match",
		},
		"at: a claim in another namespace's form": {
			obj:       validTask().Workspace("a", "/w", "other/claim").Obj(),
			wantField: "spec.workspaces[0].claimName", wantMsg: "should match",
		},
		"at: five workspaces": {
			obj:       validTask().Workspace("a", "/a", "a").Workspace("b", "/b", "b").Workspace("c", "/c", "c").Workspace("d", "/d", "d").Workspace("e", "/e", "e").Obj(),
			wantField: "spec.workspaces", wantMsg: "must have at most 4 items",
		},
		"at: a repository over ssh": {
			obj:       validTask().Repo(schedv1.Repo{Name: "app", URL: "ssh://git@example.com/app.git"}).Obj(),
			wantField: "spec.repos[0].url", wantMsg: "must start with https:// or http://",
		},
		"at: a repository on the node's disk": {
			obj:       validTask().Repo(schedv1.Repo{Name: "app", URL: "file:///etc/kubernetes"}).Obj(),
			wantField: "spec.repos[0].url", wantMsg: "file://, ssh:// and git:// are not supported",
		},
		"at: credentials in a repository's url": {
			obj:       validTask().Repo(schedv1.Repo{Name: "app", URL: "https://me:token@example.com/app.git"}).Obj(),
			wantField: "spec.repos[0].url", wantMsg: "name a Secret in secretRef",
		},
		"at: credentials over http": {
			obj:       validTask().Repo(schedv1.Repo{Name: "app", URL: "http://example.com/app.git", SecretRef: &schedv1.RepoSecretRef{Name: "git"}}).Obj(),
			wantField: "spec.repos[0].secretRef", wantMsg: "credentials are never sent in clear text",
		},
		"at: a ref that is an option": {
			obj:       validTask().Repo(schedv1.Repo{Name: "app", URL: "https://example.com/app.git", Ref: "--upload-pack=sh"}).Obj(),
			wantField: "spec.repos[0].ref", wantMsg: "should match",
		},
		"at: a path that climbs out": {
			obj:       validTask().Repo(schedv1.Repo{Name: "app", URL: "https://example.com/app.git", Path: "/src/../etc"}).Obj(),
			wantField: "spec.repos[0].path", wantMsg: "without .. or //",
		},
		"at: two repositories at one path": {
			obj: validTask().Repo(schedv1.Repo{Name: "app", URL: "https://example.com/a.git", Path: "/workspace/lib"}).
				Repo(schedv1.Repo{Name: "lib", URL: "https://example.com/b.git"}).Obj(),
			wantField: "spec.repos", wantMsg: "each repository needs a path of its own",
		},
		"at: a repository in a read-only workspace": {
			obj: validTask().Spec(func(s *schedv1.AgentTaskSpec) {
				s.Workspaces = []schedv1.WorkspaceMount{{Name: "src", MountPath: "/src", ClaimName: "c", ReadOnly: true}}
			}).Repo(schedv1.Repo{Name: "app", URL: "https://example.com/a.git", Path: "/src/app"}).Obj(),
			wantField: "spec.repos", wantMsg: "cannot be cloned into a read-only workspace",
		},
		"at: nine repositories": {
			obj: validTask().Spec(func(s *schedv1.AgentTaskSpec) {
				for i := range 9 {
					s.Repos = append(s.Repos, schedv1.Repo{Name: fmt.Sprintf("r%d", i), URL: "https://example.com/r.git"})
				}
			}).Obj(),
			wantField: "spec.repos", wantMsg: "must have at most 8 items",
		},
		"at: a repository url over 2048 characters": {
			obj:       validTask().Repo(schedv1.Repo{Name: "app", URL: "https://example.com/" + strings.Repeat("a", 2040)}).Obj(),
			wantField: "spec.repos[0].url", wantMsg: "2048",
		},
		"wf: a step's repository over git://": {
			obj: validWorkflow().Spec(func(s *schedv1.WorkflowSpec) {
				s.Steps[0].Task.Repos = []schedv1.Repo{{Name: "app", URL: "git://example.com/app.git"}}
			}).Obj(),
			wantField: "spec.steps[0].task.repos[0].url", wantMsg: "must start with https:// or http://",
		},
		"at: a relative outputs directory": {
			obj:       validTask().Spec(func(s *schedv1.AgentTaskSpec) { s.Outputs = &schedv1.TaskOutputs{FromDir: "out"} }).Obj(),
			wantField: "spec.outputs.fromDir", wantMsg: "should match",
		},
		"at: an outputs directory that climbs out": {
			obj:       validTask().Spec(func(s *schedv1.AgentTaskSpec) { s.Outputs = &schedv1.TaskOutputs{FromDir: "/out/../etc"} }).Obj(),
			wantField: "spec.outputs.fromDir", wantMsg: "fromDir may not hold . or .. parts",
		},
		"at: the root as the outputs directory": {
			obj:       validTask().Spec(func(s *schedv1.AgentTaskSpec) { s.Outputs = &schedv1.TaskOutputs{FromDir: "/"} }).Obj(),
			wantField: "spec.outputs.fromDir", wantMsg: "at least 2 chars",
		},
		"at: an outputs directory too long": {
			obj: validTask().Spec(func(s *schedv1.AgentTaskSpec) {
				s.Outputs = &schedv1.TaskOutputs{FromDir: "/" + strings.Repeat("o", 256)}
			}).Obj(),
			wantField: "spec.outputs.fromDir", wantMsg: "may not be more than 256 bytes",
		},
		"scx: name too long for the DaemonSet": {
			obj:       MakeSchedExt(strings.Repeat("s", 51)).Scheduler("scx_lavd").Obj(),
			wantField: "<nil>", wantMsg: "at most 50 characters",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := env.Client.Create(ctx, tc.obj, client.DryRunAll)
			if err == nil {
				t.Fatalf("the API server accepted the object; want it refused on %s", tc.wantField)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.wantField) || !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("message does not name %q with %q:\n%s", tc.wantField, tc.wantMsg, msg)
			}
		})
	}
}

// TestValidObjectsAccepted guards the rules against refusing what is legal.
func TestValidObjectsAccepted(t *testing.T) {
	cases := map[string]client.Object{
		"ud: minimal":       MakeUserDeployment("a", ns).Service("worker", "busybox", 0, schedv1.ExposureNone).Obj(),
		"ud: full":          validApp().Service("api", "api:1", 8080, schedv1.ExposureInternal).Config("LOG", "debug").SecretRef("db", "db-creds").Ingress("shop.example.com").Placement(schedv1.Placement{WorkloadType: schedv1.WorkloadMemory, Priority: schedv1.PriorityHigh, NodePools: []string{"highmem", "general"}, Spot: schedv1.SpotPreferred, MultiZone: true}).Obj(),
		"ud: 63 characters": MakeUserDeployment(strings.Repeat("a", 30), ns).Service(strings.Repeat("b", 32), "nginx", 80, schedv1.ExposureInternal).Obj(),
		"ud: every allowFrom and egress": validApp().Spec(func(s *schedv1.UserDeploymentSpec) {
			s.AllowFrom = &schedv1.AllowFrom{
				Apps: []string{"billing", "web"}, Tasks: true, MetricsPorts: []int32{9090, 9100},
				Namespaces: []schedv1.NamespaceLabels{{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "payments"}}},
			}
			s.Egress = schedv1.EgressNamespace
		}).Obj(),
		"ud: the shortest progress deadline": validApp().Spec(func(s *schedv1.UserDeploymentSpec) { s.ProgressDeadline = &metav1.Duration{Duration: 10 * time.Second} }).Obj(),
		"ud: a day's progress deadline":      validApp().Spec(func(s *schedv1.UserDeploymentSpec) { s.ProgressDeadline = &metav1.Duration{Duration: 24 * time.Hour} }).Obj(),
		"ud: revisions and rollback": validApp().Spec(func(s *schedv1.UserDeploymentSpec) {
			s.RevisionHistoryLimit, s.Rollback = ptr.To[int32](100), schedv1.RollbackOnDegraded
		}).Obj(),
		"ud: one revision, never rolled back": validApp().Spec(func(s *schedv1.UserDeploymentSpec) {
			s.RevisionHistoryLimit, s.Rollback = ptr.To[int32](1), schedv1.RollbackNever
		}).Obj(),
		"ud: volumes, service account and pull secrets": validApp().EditService("web", func(s *schedv1.ServiceSpec) {
			s.Volumes = []schedv1.ServiceVolume{{Name: "data", Size: resource.MustParse("10Gi"), MountPath: "/data", StorageClass: "fast"}}
			s.ServiceAccountName = "web"
			s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
		}).Obj(),
		"at: full":  validTask().Args("run").Env("A", "1").Timeout(time.Minute).Retries(2).TTL(0, schedv1.CleanupTask).PodAnnotation("k", "v").Obj(),
		"at: retry": validTask().Timeout(time.Hour).Retry(3, 30*time.Second, 2, 75).Obj(),
		"at: repositories at their bounds": validTask().Spec(func(s *schedv1.AgentTaskSpec) {
			s.Workspaces = []schedv1.WorkspaceMount{{Name: "src", MountPath: "/src", ClaimName: "c"}, {Name: "ro", MountPath: "/ro", ClaimName: "r", ReadOnly: true}}
			s.Repos = []schedv1.Repo{
				{Name: "app", URL: "https://git.example.com/" + strings.Repeat("a", 2024), Ref: "release/v1.2", Path: "/src/app", SecretRef: &schedv1.RepoSecretRef{Name: "git-token"}},
				{Name: "lib", URL: "http://git.local/lib.git", Ref: strings.Repeat("0123456789", 4)},
				{Name: "tools", URL: "https://git.example.com/tools", Path: "/src"},
			}
			for i := range 5 {
				s.Repos = append(s.Repos, schedv1.Repo{Name: fmt.Sprintf("r%d", i), URL: "https://git.example.com/r.git", Path: fmt.Sprintf("/opt/r%d", i)})
			}
		}).Obj(),
		"at: retry at its bounds": validTask().Retry(10, 10*time.Minute, 1, 255).Spec(func(s *schedv1.AgentTaskSpec) {
			for c := range int32(30) {
				s.Retry.OnExitCodes = append(s.Retry.OnExitCodes, c+2)
			}
		}).Obj(),
		"at: the shortest backoff, no exit codes": validTask().Retry(0, 10*time.Second).Obj(),
		"wf: a step that retries": MakeWorkflow("wf", ns).StepTask("flaky", schedv1.AgentTaskSpec{Image: "busybox",
			Retry: &schedv1.RetryPolicy{Limit: 2, Backoff: &metav1.Duration{Duration: time.Minute}, OnExitCodes: []int32{75}}}).Obj(),
		"wf: references back by index, name and param": MakeWorkflow("wf", ns).Param("repo", "x").
			Step("fetch", "busybox", "${params.repo}").
			Step("build", "busybox", "${steps.0.output.sha}").
			StepTask("test", schedv1.AgentTaskSpec{Image: "busybox", Env: []schedv1.EnvVar{{Name: "S", Value: "${steps.build.output.image} ${steps.fetch.output.sha}"}}}).Obj(),
		"wf: escaped references are text": MakeWorkflow("wf", ns).Step("a", "busybox", "$${steps.9.output.x}", "$${params.nope}").Obj(),
		"wf: when, an approval, finally steps and suspend": MakeWorkflow("wf", ns).Param("env", "prod").
			Step("test", "busybox").
			Approval("gate", "ship to ${params.env}?").When("steps.test.outputs.result == 'passed' && params.env == 'prod'").
			Step("deploy", "busybox", "${steps.test.output.result}").
			Finally("collect", schedv1.AgentTaskSpec{Image: "busybox", Args: []string{"${steps.0.output.result}"}}).When("workflow.phase != 'Succeeded'").
			Finally("notify", schedv1.AgentTaskSpec{Image: "busybox", Args: []string{"${workflow.phase}", "${steps.collect.output.url}", "${steps.deploy.output.url}"}}).DependsOn("collect").
			Suspend(true).Obj(),
		"wf: forEach over items, an output, a param; in a finally step": MakeWorkflow("wf", ns).Param("regions", `["eu","us"]`).
			Step("plan", "busybox").
			Step("deploy", "busybox", "--region=${item}", "$${item}").ForEach(append(make([]string, 99), strings.Repeat("x", 1024)), "", 100).
			Step("verify", "busybox", "${item}", "${steps.deploy.output.url}").ForEach(nil, "${steps.plan.output.regions}", 1).
			Step("check", "busybox", "${item}").ForEach(nil, "${params.regions}", 0).
			Finally("report", schedv1.AgentTaskSpec{Image: "busybox", Args: []string{"${item}", "${workflow.phase}"}}).ForEach(nil, "${steps.0.output.regions}", 2).Obj(),
		"wf: workspaces mounted by steps, a finally step and a loop": MakeWorkflow("wf", ns).Workspace("src", "1Gi").Workspace("cache", "1Ti").
			Spec(func(s *schedv1.WorkflowSpec) {
				s.Workspaces[1].AccessMode, s.Workspaces[1].StorageClass, s.Workspaces[1].Keep = schedv1.ReadWriteMany, "nfs", true
			}).
			Step("fetch", "busybox").Mount("src", "/src", false).Mount("cache", "/cache", false).
			Step("build", "busybox", "${item}").ForEach([]string{"a", "b"}, "", 0).Mount("src", "/src", true).
			StepTask("own", schedv1.AgentTaskSpec{Image: "busybox", Workspaces: []schedv1.WorkspaceMount{{Name: "mine", MountPath: "/m", ClaimName: "existing"}}}).
			Finally("report", schedv1.AgentTaskSpec{Image: "busybox", Workspaces: []schedv1.WorkspaceMount{{Name: "src", MountPath: "/src", ReadOnly: true}}}).Obj(),
		"at: workspaces of existing claims": validTask().Workspace("src", "/src", "checkout").Workspace("out", "/out", "results").Obj(),
		"scx: well-known":                   MakeSchedExt("s").Scheduler("scx_lavd").NodeSelector(schedv1.NodeLabelPool, "general").Obj(),
		"scx: own image":                    MakeSchedExt("s").Image("example.com/scx:1", "rusty").Obj(),
		"scx: well-known from own image":    MakeSchedExt("s").Scheduler("scx_lavd").Image("example.com/scx:v1.0.13", "").Obj(),
		"at: a CPU scheduler":               validTask().Placement(schedv1.Placement{CPUScheduler: "scx_lavd", NodePools: []string{"general"}}).Obj(),
		"wf: a step's CPU scheduler": MakeWorkflow("wf", ns).StepTask("a", schedv1.AgentTaskSpec{Image: "busybox",
			Placement: &schedv1.Placement{CPUScheduler: "scx_bpfland"}}).Obj(),
		"ud: a CPU scheduler": validApp().Placement(schedv1.Placement{CPUScheduler: "scx_" + strings.Repeat("a", 59)}).Obj(),
	}
	for name, obj := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := env.Client.Create(ctx, obj, client.DryRunAll); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

// TestWorkflowSpecImmutable: steps may already have run, so the spec is
// fixed once created (a CEL transition rule).
func TestWorkflowSpecImmutable(t *testing.T) {
	ctx := context.Background()
	wf := MakeWorkflow("immutable", ns).Step("a", "busybox").Obj()
	if err := env.Client.Create(ctx, wf); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Client.Delete(ctx, wf) }()
	for name, change := range map[string]func(*schedv1.WorkflowSpec){
		"a step":   func(s *schedv1.WorkflowSpec) { s.Steps[0].Task.Image = "alpine" },
		"a param":  func(s *schedv1.WorkflowSpec) { s.Params = []schedv1.WorkflowParam{{Name: "x", Value: "1"}} },
		"timeout":  func(s *schedv1.WorkflowSpec) { s.Timeout = &metav1.Duration{Duration: time.Hour} },
		"ttl":      func(s *schedv1.WorkflowSpec) { s.TTLAfterFinished = &metav1.Duration{Duration: time.Hour} },
		"a cancel": func(s *schedv1.WorkflowSpec) { s.Cancel = true; s.Steps[0].Name = "b" },
		"failFast": func(s *schedv1.WorkflowSpec) { s.FailFast = true },
		"retryOf":  func(s *schedv1.WorkflowSpec) { s.RetryOf = &schedv1.WorkflowRetry{Workflow: "earlier", FromStep: "a"} },
		"workspaces": func(s *schedv1.WorkflowSpec) {
			s.Workspaces = []schedv1.Workspace{{Name: "src", Size: resource.MustParse("1Gi")}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			changed := wf.DeepCopy()
			change(&changed.Spec)
			err := env.Client.Update(ctx, changed)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec cannot change once it is created") {
				t.Fatalf("want the update refused as invalid, got %v", err)
			}
		})
	}
	// The finally steps cannot change either.
	withFinally := MakeWorkflow("immutable-finally", ns).Approval("gate", "").Step("b", "busybox").
		Finally("notify", schedv1.AgentTaskSpec{Image: "busybox"}).Obj()
	if err := env.Client.Create(ctx, withFinally); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Client.Delete(ctx, withFinally) }()
	for name, change := range map[string]func(*schedv1.WorkflowSpec){
		"a finally step":       func(s *schedv1.WorkflowSpec) { s.Finally[0].Task.Image = "alpine" },
		"no finally steps":     func(s *schedv1.WorkflowSpec) { s.Finally = nil },
		"a step's when":        func(s *schedv1.WorkflowSpec) { s.Steps[1].When = "true" },
		"an approval's prompt": func(s *schedv1.WorkflowSpec) { s.Steps[0].Approval.Message = "now?" },
	} {
		t.Run(name, func(t *testing.T) {
			changed := withFinally.DeepCopy()
			change(&changed.Spec)
			err := env.Client.Update(ctx, changed)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec cannot change once it is created") {
				t.Fatalf("want the update refused as invalid, got %v", err)
			}
		})
	}
	// suspend may be switched both ways.
	for _, on := range []bool{true, false} {
		withFinally.Spec.Suspend = on
		if err := env.Client.Update(ctx, withFinally); err != nil {
			t.Fatalf("setting spec.suspend to %v refused: %v", on, err)
		}
	}

	// Only cancel may be set, and then not unset.
	wf.Spec.Cancel = true
	if err := env.Client.Update(ctx, wf); err != nil {
		t.Fatalf("setting spec.cancel refused: %v", err)
	}
	wf.Spec.Cancel = false
	if err := env.Client.Update(ctx, wf); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.cancel cannot be unset") {
		t.Fatalf("want unsetting spec.cancel refused, got %v", err)
	}
}

// TestServiceVolumesImmutable: a StatefulSet's claim templates cannot
// change, so the API refuses a change of a service's volumes up front.
func TestServiceVolumesImmutable(t *testing.T) {
	ctx := context.Background()
	ud := validApp().EditService("web", func(s *schedv1.ServiceSpec) {
		s.Volumes = []schedv1.ServiceVolume{{Name: "data", Size: resource.MustParse("1Gi"), MountPath: "/data"}}
	}).Obj()
	ud.Name = "volumes-immutable"
	if err := env.Client.Create(ctx, ud); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Client.Delete(ctx, ud) }()
	changed := ud.DeepCopy()
	changed.Spec.Services[0].Volumes[0].Size = resource.MustParse("2Gi")
	if err := env.Client.Update(ctx, changed); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "volumes cannot change once it has them") {
		t.Fatalf("want a size change refused, got %v", err)
	}
	// Other fields of the service still change.
	ud.Spec.Services[0].Image = "nginx:2"
	if err := env.Client.Update(ctx, ud); err != nil {
		t.Fatalf("an image change refused: %v", err)
	}
}
