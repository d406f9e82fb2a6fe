package v1alpha1_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-sched/kubectl-sched/api/celexpr"
	"github.com/kubectl-sched/kubectl-sched/api/substitution"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestSamplesAccepted applies every file in config/samples (server-side dry
// run) so a sample can never drift from the API.
func TestSamplesAccepted(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "sched_*.yaml"))
	if err != nil || len(files) < 5 {
		t.Fatalf("want a sample per kind in config/samples, found %v (%v)", files, err)
	}
	kinds := map[string]bool{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(data, &u.Object); err != nil {
				t.Fatal(err)
			}
			kinds[u.GetKind()] = true
			mapping, err := env.Client.RESTMapper().RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
			if err != nil {
				t.Fatal(err)
			}
			if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
				u.SetNamespace(ns)
			}
			if err := env.Client.Create(context.Background(), u, client.DryRunAll); err != nil {
				t.Fatalf("sample refused: %v", err)
			}
		})
	}
	for _, k := range []string{"UserDeployment", "AgentTask", "Workflow", "CronWorkflow", "SchedExt"} {
		if !kinds[k] {
			t.Errorf("no sample for %s", k)
		}
	}
}

// TestExplain runs kubectl explain against the test API server: the field
// descriptions are how users learn the API.
func TestExplain(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("this test needs kubectl on PATH (kubectl explain reads the CRD schemas): %v", err)
	}
	kubeconfig := writeKubeconfig(t)
	cases := map[string][]string{
		"userdeployment.spec":                          {"services", "Services of the app", "placement", "networkIsolation"},
		"userdeployment.spec.services":                 {"exposure", "None, Internal (the default) or Public"},
		"agenttask.spec":                               {"timeout", "activeDeadlineSeconds", "cancel", "podMetadata"},
		"agenttask.status":                             {"outputs", "termination message", "nextAttemptTime", "BackingOff"},
		"workflow.spec.steps.task":                     {"image"},
		"workflow.spec.steps":                          {"when", "steps.test.outputs.result == 'passed'", "approval", "WaitingForApproval"},
		"workflow.spec.steps.approval":                 {"message"},
		"workflow.spec.steps.forEach":                  {"items", "from", "maxParallel", "${item}", "JSON array", "in item order"},
		"workflow.spec.steps.forEach.from":             {"${steps.NAME.output.KEY}", "InvalidItems", "an empty array"},
		"workflow.spec.finally.forEach":                {"items", "from"},
		"workflow.status.steps.forEach":                {"total", "items", "succeeded"},
		"workflow.status.steps.forEach.items":          {"index", "phase", "message"},
		"cronworkflow.spec.workflowSpec.steps.forEach": {"maxParallel"},
		"workflow.spec.finally":                        {"${workflow.phase}", "whatever happened", "grace of 5 minutes"},
		"workflow.spec":                                {"steps", "${params.NAME}", "suspend", "approvals", "finally"},
		"workflow.spec.approvals":                      {"request.userInfo.username", "decision", "Approved", "Denied"},
		"workflow.status":                              {"finally", "main", "Suspended"},
		"workflow.status.steps":                        {"reason", "WhenFalse", "WaitingForApproval"},
		"workflow.status.main":                         {"phase", "${workflow.phase}"},
		"schedext.spec":                                {"scheduler", "one scheduler per node"},
		"schedext.spec.scheduler":                      {"scx_lavd", "opsName"},
		"schedext.status":                              {"readyNodes", "conflictingNodes"},
		"cronworkflow.spec":                            {"schedule", "day of week (0-6 or SUN-SAT, 0 is Sunday)", "timeZone", "concurrencyPolicy", "startingDeadlineSeconds", "suspend", "workflowSpec"},
		"cronworkflow.spec.workflowSpec":               {"steps", "${params.NAME}"},
		"cronworkflow.status":                          {"lastScheduleTime", "nextScheduleTime", "activeCount", "lastSuccessfulTime"},
		"userdeployment.spec.revisionHistoryLimit":     {"10 when unset, between 1 and 100", "ControllerRevision <name>.v<N>", "kubectl sched history"},
		"userdeployment.spec.rollback":                 {"Never (the", "OnDegraded", "never writes the spec", "once per", "revision"},
		"userdeployment.status":                        {"currentRevision", "lastRunningRevision", "rolledBack"},
		"userdeployment.status.rolledBack":             {"fromRevision", "toRevision"},
		"userdeployment.status.services.revision":      {"rolled out completely"},
		"agenttask.spec.retry":                         {"limit", "backoff", "onExitCodes", "disruption", "Not with", "retries"},
		"agenttask.spec.retry.backoff":                 {"backoff * 2^(n-1)", "most 10m", "Job controller itself waits 10s", "BackingOff", "spec.timeout counts the wait"},
		"agenttask.spec.retry.onExitCodes":             {"fails the task at once", "137"},
		"workflow.spec.steps.task.retry":               {"limit", "backoff", "onExitCodes"},
	}
	for path, want := range cases {
		t.Run(path, func(t *testing.T) {
			out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "explain", path).CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl explain %s: %v\n%s", path, err, out)
			}
			for _, w := range want {
				if !strings.Contains(string(out), w) {
					t.Errorf("kubectl explain %s does not mention %q:\n%s", path, w, out)
				}
			}
		})
	}
}

func writeKubeconfig(t *testing.T) string {
	t.Helper()
	return testenv.AdminKubeconfig(t, &env.ControlPlane, envtestAdmin.Name)
}

var envtestAdmin = envtest.User{Name: "explain-admin", Groups: []string{"system:masters"}}

// TestTourWorkflowsAccepted: the workflows of the tour and of the docs'
// examples (hack/tour) pass the plugin's checks (references, when) and the
// API server's.
func TestTourWorkflowsAccepted(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "hack", "tour", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		wf := &schedv1.Workflow{}
		if err := yaml.UnmarshalStrict(data, wf); err != nil || wf.Kind != "Workflow" {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			errs := append(substitution.ValidateWorkflow(&wf.Spec), celexpr.ValidateWorkflow(&wf.Spec)...)
			if len(errs) > 0 {
				t.Errorf("refused by the plugin's checks: %v", errs)
			}
			wf.Namespace = ns
			if err := env.Client.Create(context.Background(), wf, client.DryRunAll); err != nil {
				t.Errorf("refused by the API server: %v", err)
			}
		})
	}
	if n < 5 {
		t.Errorf("found %d workflows in hack/tour, want at least 5", n)
	}
}
