package cluster

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// A cluster with a real node runs a pod, is found again by Attach, and
// leaves nothing on the host when it stops (no container, shim, mount,
// cgroup, NAT rule or bridge). It runs here, beside hack/test/realnode's shared
// cluster, rather than after that package's tests.
func TestRealNodeStopsCleanly(t *testing.T) {
	ctx := context.Background()
	needRealNode(t)
	dir := filepath.Join(t.TempDir(), "cluster")
	rulesBefore := natRules(t)
	c, err := Start(ctx, Options{Dir: dir, RealNode: true, Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = c.Stop()
		}
	})
	if c.RealNode == "" {
		t.Fatal("no real node")
	}
	attached, err := Attach(ctx, dir)
	if err != nil || attached.RealNode != c.RealNode {
		t.Fatalf("Attach: %v, real node %q", err, attached.RealNode)
	}

	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	kc := kubernetes.NewForConfigOrDie(cfg)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sleeper", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeSelector:    map[string]string{LabelPool: RealNodePool},
			Tolerations:     []corev1.Toleration{{Key: TaintPool, Value: RealNodePool, Effect: corev1.TaintEffectNoSchedule}},
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532)},
			Containers:      []corev1.Container{{Name: "c", Image: "busybox:1.36", Command: []string{"sleep", "3599"}}},
		},
	}
	if _, err := kc.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		p, err := kc.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pod did not run: %v %+v", err, p.Status)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if !hostHas(dir) {
		t.Fatal("no trace of the running pod on the host; the checks below would prove nothing")
	}
	// The rules this cluster added, which lead to its API server's port:
	// other packages' clusters add and remove their own meanwhile (make
	// test runs packages side by side).
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	var added []string
	for _, r := range strings.Split(natRules(t), "\n") {
		if strings.HasSuffix(r, ":"+u.Port()) && !strings.Contains(rulesBefore, r+"\n") {
			added = append(added, r)
		}
	}
	if len(added) == 0 {
		t.Fatal("the running cluster added no NAT rule; the check below would prove nothing")
	}

	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if hostHas(dir) {
		t.Error("the stopped cluster left processes or mounts of its real node behind")
	}
	after := natRules(t)
	for _, r := range added {
		if strings.Contains(after, r+"\n") {
			t.Errorf("the stopped cluster left its NAT rule %q; rules now:\n%s", r, after)
		}
	}
}

// needRealNode skips when this host cannot run the real node, or fails
// under REQUIRE_REAL_NODE (as CI sets it), as hack/test/realnode's tests do.
func needRealNode(t *testing.T) {
	t.Helper()
	why := "REAL_NODE=false"
	if os.Getenv("REAL_NODE") != "false" {
		bin, err := BinDir(context.Background(), os.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		err = RealNodeUnavailable(bin)
		if err == nil {
			return
		}
		why = err.Error()
	}
	if os.Getenv("REQUIRE_REAL_NODE") != "" {
		t.Fatalf("REQUIRE_REAL_NODE is set, but this host cannot run the real node: %s", why)
	}
	t.Skip("no real node on this host: " + why)
}

func natRules(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("iptables", "-t", "nat", "-S", "PREROUTING").Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// hostHas reports processes (the pod's "sleep 3599", a duration no other
// test's pod sleeps, so it is this cluster's; a shim, the kubelet)
// or mounts that belong to the cluster in dir.
func hostHas(dir string) bool {
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), dir+"/") {
		return true
	}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), dir+"/") || string(b) == "sleep\x003599\x00" {
			return true
		}
	}
	return false
}
