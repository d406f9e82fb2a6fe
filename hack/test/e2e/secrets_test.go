package e2e

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
)

// TestSecretValuesNeverShow deploys an app with --secret values and a task
// that reads them and ends with a termination message, then searches
// everything the plugin printed, every kubectl-sched object and its
// status, the events, the workloads and the operator's log for the values.
func TestSecretValuesNeverShow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := startCluster(t, false)
	dir := e.Dir
	t.Cleanup(func() { _ = e.StopOperator() })

	var produced strings.Builder
	run := func(args ...string) string {
		t.Helper()
		out, errOut, code, err := e.KubectlRun(ctx, args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
		}
		// The command line is ours, not something produced: leave it out.
		produced.WriteString("$ kubectl " + args[0] + " ...\n" + out + errOut)
		if code != 0 {
			t.Fatalf("kubectl %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}
	run("sched", "install", "--without-operator")
	if err := e.StartOperator(ctx, false); err != nil {
		t.Fatal(err)
	}

	const password = "pw-Zq8#not-for-your-eyes"
	const token = "tok-Xr5-also-secret"
	deploy := []string{"sched", "deploy", "leaky", "--template", "api-postgres", "--set", "image=registry.example/api:1",
		"--secret", "POSTGRES_PASSWORD=" + password}
	run(append(deploy, "--dry-run=client", "-o", "yaml")...)
	run(append(deploy, "--dry-run=server", "-o", "json")...)
	run(append(deploy, "-o", "yaml")...)
	run(append(deploy, "-o", "name")...)
	run("create", "secret", "generic", "agent-token", "--from-literal=TOKEN="+token)
	task := `apiVersion: sched.kubectl-sched.dev/v1alpha1
kind: AgentTask
metadata:
  name: reader
spec:
  image: registry.example/agent:1
  env:
    - name: TOKEN
      valueFrom:
        secretKeyRef: {name: agent-token, key: TOKEN}
    - name: PASSWORD
      valueFrom:
        secretKeyRef: {name: leaky-secrets, key: POSTGRES_PASSWORD}
  podMetadata:
    annotations:
      ` + cluster.AnnotationTerminationMessage + `: '{"result":"done"}'
`
	taskFile := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(taskFile, []byte(task), 0o600); err != nil {
		t.Fatal(err)
	}
	run("apply", "-f", taskFile)
	run("wait", "--for=jsonpath={.status.phase}=Succeeded", "agenttask/reader", "--timeout=60s")
	run("wait", "--for=jsonpath={.status.observedGeneration}=1", "userdeployment/leaky", "--timeout=60s")
	run("sched", "get", "all")
	run("sched", "get", "ud", "leaky", "-o", "yaml")
	run("sched", "describe", "ud", "leaky")
	run("sched", "describe", "at", "reader")
	run("sched", "get", "at", "reader", "-o", "json")
	run("get", "sched", "-A", "-o", "yaml")
	run("get", "events", "-A", "-o", "yaml")
	run("get", "deployments,statefulsets,jobs,pods,configmaps", "-A", "-o", "yaml")
	if err := e.StopOperator(); err != nil {
		t.Logf("stop operator: %v", err)
	}
	opLog, err := os.ReadFile(filepath.Join(dir, "operator.log"))
	if err != nil {
		t.Fatal(err)
	}
	produced.WriteString("\n--- operator log\n" + string(opLog))

	all := produced.String()
	if !strings.Contains(all, `"result":"done"`) && !strings.Contains(all, "result: done") {
		t.Fatalf("the task's outputs are not in what was collected; the search would prove nothing")
	}
	for _, v := range []string{password, token} {
		for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v))} {
			if i := strings.Index(all, form); i >= 0 {
				t.Errorf("a secret value (%q) shows:\n%s", form, all[max(0, i-600):min(len(all), i+200)])
			}
		}
	}
}
