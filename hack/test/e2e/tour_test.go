package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/tour"
)

// TestTour runs `make demo`'s tour, asserted: the real kubectl finds the
// plugin on PATH, and the operator runs as its own process with only its
// generated RBAC. Then it checks kubectl's own verbs on every kind.
func TestTour(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := startCluster(t, os.Getenv("REAL_NODE") != "false")
	t.Cleanup(func() {
		_ = e.StopOperator()
		if t.Failed() {
			if log, err := os.ReadFile(filepath.Join(e.Dir, "operator.log")); err == nil {
				t.Logf("operator log:\n%s", tail(string(log), 60))
			}
		}
	})

	out, _, code, err := e.KubectlRun(ctx, "plugin", "list")
	if err != nil || code != 0 || !strings.Contains(out, filepath.Join(e.BinDir, "kubectl-sched")) {
		t.Fatalf("kubectl plugin list does not find our plugin (exit %d, %v):\n%s", code, err, out)
	}

	if e.Cluster.RealNode == "" && os.Getenv("REQUIRE_REAL_NODE") != "" {
		t.Fatal("REQUIRE_REAL_NODE is set, but the cluster has no real node; its log says why")
	}
	steps := tour.Steps(e.Cluster.RealNode != "")
	for i, s := range steps {
		r, err := e.RunStep(ctx, s, nil)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if err := r.Check(); err != nil {
			t.Fatalf("step %d (%s): %v", i, s.Title, err)
		}
		if i == 0 {
			if err := e.StartOperator(ctx, false); err != nil {
				t.Fatal(err)
			}
		}
	}

	scaleSurvives(t, e)

	// kubectl's own verbs on every kind.
	out, _, _, _ = e.KubectlRun(ctx, "get", "sched", "-A")
	for _, want := range []string{"userdeployment.sched.kubectl-sched.dev/shop", "agenttask.sched.kubectl-sched.dev/broken",
		"workflow.sched.kubectl-sched.dev/release", "schedext.sched.kubectl-sched.dev/lavd"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get sched lacks %s:\n%s", want, out)
		}
	}
	waits := map[string]string{
		"userdeployment/shop": "--for=jsonpath={.status.phase}=Running",
		"agenttask/broken":    "--for=jsonpath={.status.reason}=NonZeroExit",
		"workflow/release":    "--for=condition=Succeeded",
		"schedext/lavd":       "--for=condition=Ready",
	}
	for obj, cond := range waits {
		if out, errOut, code, _ := e.KubectlRun(ctx, "wait", cond, obj, "--timeout=60s"); code != 0 {
			t.Errorf("kubectl wait %s %s: exit %d\n%s%s", cond, obj, code, out, errOut)
		}
	}
	for _, path := range []string{"userdeployment.spec", "agenttask.spec", "workflow.spec.steps", "schedext.spec.scheduler"} {
		if out, errOut, code, _ := e.KubectlRun(ctx, "explain", path); code != 0 || !strings.Contains(out, "FIELDS") {
			t.Errorf("kubectl explain %s: exit %d\n%s%s", path, code, out, errOut)
		}
	}
}

// scaleSurvives: the tour's app hello, scaled with kubectl sched scale,
// keeps its replicas when its Deployment is scaled out of band (the
// operator repairs it to the app's scale, not the deploy's) and when it is
// deployed again from a template that does not set them.
func scaleSurvives(t *testing.T, e *tour.Env) {
	t.Helper()
	ctx := context.Background()
	kubectl := func(args ...string) string {
		t.Helper()
		out, errOut, code, err := e.KubectlRun(ctx, args...)
		if err != nil || code != 0 {
			t.Fatalf("kubectl %s: exit %d, %v\n%s%s", strings.Join(args, " "), code, err, out, errOut)
		}
		return out + errOut
	}
	// replicasAre waits until the Deployment of hello's web runs n.
	replicasAre := func(n string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			got := kubectl("get", "deployment", "hello-web", "-o", "jsonpath={.spec.replicas}/{.status.readyReplicas}")
			if got == n+"/"+n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Deployment hello-web: replicas/ready %s, want %s/%s", got, n, n)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	kubectl("sched", "scale", "hello", "--replicas", "3", "--wait", "--timeout", "2m")
	replicasAre("3")
	kubectl("scale", "deployment", "hello-web", "--replicas", "5")
	replicasAre("3")

	template := filepath.Join(e.Dir, "hello.yaml")
	if err := os.WriteFile(template, []byte(`apiVersion: templates.kubectl-sched.dev/v1
kind: Template
metadata:
  name: hello
description: nginx, its replicas left to kubectl sched scale.
object:
  kind: UserDeployment
  spec:
    services:
      - name: web
        image: nginx:1.27
        exposure: Public
        ports:
          - name: http
            port: 80
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out := kubectl("sched", "deploy", "hello", "--template", template, "--wait", "--timeout", "2m")
	if !strings.Contains(out, "note: service web keeps its 3 replicas") {
		t.Errorf("deploy from a template:\n%s", out)
	}
	if got := kubectl("get", "ud", "hello", "-o", "jsonpath={.spec.services[0].replicas} {.spec.services[0].image}"); got != "3 nginx:1.27" {
		t.Errorf("after the redeploy: replicas and image %q, want 3 nginx:1.27", got)
	}
	replicasAre("3")
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// startCluster starts a simulated cluster (with the real node when asked
// and the host can) and builds the plugin and the operator for it; the
// cluster stops with the test.
func startCluster(t *testing.T, realNode bool) *tour.Env {
	t.Helper()
	ctx := context.Background()
	kubectl := needKubectl(t)
	dir := t.TempDir()
	c, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(dir, "cluster"), Log: os.Stderr, RealNode: realNode})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	bin, err := tour.SharedBinDir(nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &tour.Env{Root: repoRoot(t), Dir: dir, BinDir: bin, Kubeconfig: c.Kubeconfig, Kubectl: kubectl, Cluster: c, Log: os.Stderr}
	if err := e.Build(ctx); err != nil {
		t.Fatal(err)
	}
	return e
}
