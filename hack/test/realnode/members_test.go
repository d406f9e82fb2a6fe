package realnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// The bytes of real logs, read by a tenant's member: what hack/test/members
// cannot show on kwok nodes, whose pods have no logs. The member is made
// as an admin makes one (kubectl sched tenant create --user) and runs the
// real kubectl with --as.
func TestMemberReadsLogs(t *testing.T) {
	e := need(t)
	e.operator(t)
	const tenantNS, member = "logs-tenant", "alice"
	realTier(t, e, "real-node")
	if out, errOut, code := e.kubectlRun(t, time.Minute, "sched", "tenant", "create", tenantNS, "--tier", "real-node", "--user", member); code != 0 {
		t.Fatalf("tenant create: exit %d\n%s%s", code, out, errOut)
	}
	t.Cleanup(func() {
		_ = e.client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS}})
	})
	quotaCounts(t, e, tenantNS)
	as := func(timeout time.Duration, args ...string) (string, string, int) {
		t.Helper()
		i := len(args)
		for j, a := range args {
			if a == "--" {
				i = j
				break
			}
		}
		full := append(append(append([]string{"sched"}, args[:i]...), "-n", tenantNS, "--as", member), args[i:]...)
		return e.kubectlRun(t, timeout, full...)
	}
	check := func(what string, out, errOut string, code int, want ...string) {
		t.Helper()
		if code != 0 {
			t.Errorf("%s: exit %d\n%s%s", what, code, out, errOut)
			return
		}
		for _, w := range want {
			if !regexp.MustCompile(w).MatchString(out) {
				t.Errorf("%s: output lacks %q:\n%s%s", what, w, out, errOut)
			}
		}
		if strings.Contains(strings.ToLower(out+errOut), "forbidden") {
			t.Errorf("%s: something was refused:\n%s%s", what, out, errOut)
		}
	}

	out, errOut, code := as(3*time.Minute, "task", "run", "hi", "--image", "busybox:1.36", "--node-pool", "real", "-f", "--",
		"sh", "-c", `echo "hello from $(hostname)"; echo greeting=hi > /dev/termination-log`)
	check("task run -f", out, errOut, code, `(?m)^hello from hi-\S+$`, `(?m)^greeting=hi$`)
	out, errOut, code = as(time.Minute, "task", "logs", "hi")
	check("task logs", out, errOut, code, `(?m)^hello from hi-\S+$`)
	out, errOut, code = as(time.Minute, "logs", "agenttask/hi")
	check("logs agenttask/NAME", out, errOut, code, `(?m)^\[(hi-\S+)\] hello from hi-\S+$`)

	wf := filepath.Join(e.root, "hack", "tour", "workflow.yaml")
	out, errOut, code = as(3*time.Minute, "workflow", "run", "-f", wf, "--watch", "--logs")
	check("workflow run --watch --logs", out, errOut, code, `fetch \| fetched https://example.com/shop.git at [0-9a-f]{12}`, `build \| building shop at [0-9a-f]{12}`, `Workflow release Succeeded`)
	out, errOut, code = as(time.Minute, "logs", "workflow/release", "-f")
	check("logs workflow/NAME -f", out, errOut, code, `(?m)^\[build release-1-build-\S+\] building shop at [0-9a-f]{12}$`)

	template := filepath.Join(t.TempDir(), "echoer.yaml")
	if err := os.WriteFile(template, []byte(`apiVersion: templates.kubectl-sched.dev/v1
kind: Template
metadata:
  name: echoer
description: Says hello, then sleeps.
object:
  apiVersion: sched.kubectl-sched.dev/v1alpha1
  kind: UserDeployment
  spec:
    placement: {nodePools: [real]}
    services:
      - name: web
        image: busybox:1.36
        exposure: None
        command: [sh, -c, 'echo "hello from $(hostname)"; exec sleep 3600']
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = as(3*time.Minute, "deploy", "echoer", "--template", template, "--wait", "--timeout", "2m")
	check("deploy --wait", out, errOut, code, `Running`)
	f := e.follow(t, "sched", "logs", "echoer", "-f", "-n", tenantNS, "--as", member)
	f.waitFor(t, func(s string) bool {
		return regexp.MustCompile(`(?m)^\[web (echoer-\S+)\] hello from echoer-\S+$`).MatchString(s)
	})
	if s := f.String(); strings.Contains(strings.ToLower(s), "forbidden") {
		t.Errorf("logs APP -f: something was refused:\n%s", s)
	}
}

// realTier adds a tier to the installed ones that may use the real node's
// pool (no installed tier may), until the test ends.
func realTier(t *testing.T, e *env, name string) { t.Helper(); realTierWith(t, e, name, "") }

// realTierWith is realTier with more of a tier's YAML (whole top-level
// keys, such as outputs).
func realTierWith(t *testing.T, e *env, name, extra string) {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{}
	key := types.NamespacedName{Namespace: schedv1.DefaultOperatorNamespace, Name: schedv1.TiersConfigMap}
	if err := e.client.Get(ctx, key, cm); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data[name] = `quota: {requests.cpu: "2", requests.memory: 4Gi, pods: "20", count/agenttasks.sched.kubectl-sched.dev: "20", count/workflows.sched.kubectl-sched.dev: "5", count/userdeployments.sched.kubectl-sched.dev: "2", count/configmaps: "10"}
limits: {default: {cpu: 250m, memory: 256Mi}, defaultRequest: {cpu: 50m, memory: 64Mi}}
placement: {maxPriority: Low, nodePools: [general, real]}
` + extra
	if err := e.client.Patch(ctx, cm, patch); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cm := &corev1.ConfigMap{}
		if err := e.client.Get(ctx, key, cm); err == nil {
			patch := client.MergeFrom(cm.DeepCopy())
			delete(cm.Data, name)
			_ = e.client.Patch(ctx, cm, patch)
		}
	})
}

// quotaCounts waits until the namespace's tier quota exists and counts
// everything it limits: until then admission refuses what it counts.
func quotaCounts(t *testing.T, e *env, ns string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		q := &corev1.ResourceQuota{}
		err := e.client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: schedv1.TierObjectName}, q)
		if err == nil {
			err = counted(q)
		}
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tier quota of %s: %v", ns, err)
		}
		time.Sleep(time.Second)
	}
}

func counted(q *corev1.ResourceQuota) error {
	if len(q.Spec.Hard) == 0 {
		return fmt.Errorf("quota %s has no limits yet", q.Name)
	}
	for r := range q.Spec.Hard {
		if _, ok := q.Status.Used[r]; !ok {
			return fmt.Errorf("quota %s does not count %s yet", q.Name, r)
		}
	}
	return nil
}
