package userdeployment_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	plugincmd "github.com/kubectl-sched/kubectl-sched/plugin/cmd"
)

// Health that waits like `kubectl rollout status`: what may clear by
// itself keeps an app Progressing, named, until its progress deadline.

// shortDeadline is the smallest spec.progressDeadline the API accepts.
var shortDeadline = &metav1.Duration{Duration: 10 * time.Second}

// waitingOn is true when the app, at its generation, is Progressing and
// its Ready condition names reason with a message holding want.
func waitingOn(reason, want string) func(*schedv1.UserDeployment) bool {
	return func(ud *schedv1.UserDeployment) bool {
		c := condition(ud, schedv1.ConditionReady)
		return phase(schedv1.UserDeploymentProgressing)(ud) && c.Reason == reason && strings.Contains(c.Message, want)
	}
}

// TestUnschedulableWaitsUntilTheDeadline: a pod no node can run keeps the
// app Progressing with the scheduler's verdict until the app's progress
// deadline; then it is Degraded (ProgressDeadlineExceeded, the verdict
// named), and its Deployment, given the same deadline, agrees.
func TestUnschedulableWaitsUntilTheDeadline(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, MakeUserDeployment("app", ns).Service("api", "api:1", 8080, schedv1.ExposureInternal).
		Placement(schedv1.Placement{NodePools: []string{"nowhere"}}).
		Spec(func(s *schedv1.UserDeploymentSpec) { s.ProgressDeadline = shortDeadline }).Obj())

	ud := waitUD(t, ns, "app", "Progressing, waiting for a node", waitingOn(schedv1.ReasonUnschedulable, "no node can run the pod: 0/"))
	if c := condition(ud, schedv1.ConditionDegraded); c.Status != metav1.ConditionFalse {
		t.Errorf("Degraded %+v while waiting within the deadline", c)
	}
	if c := condition(ud, schedv1.ConditionProgressing); !strings.Contains(c.Message, "Degraded after 10s without progress (spec.progressDeadline)") {
		t.Errorf("Progressing %+v, want it to say when the wait ends", c)
	}

	ud = waitUD(t, ns, "app", "Degraded at the deadline", phase(schedv1.UserDeploymentDegraded))
	c := condition(ud, schedv1.ConditionDegraded)
	if c.Reason != schedv1.ReasonProgressDeadline || !strings.Contains(c.Message, "service api: no progress for 10s (spec.progressDeadline): pod app-api-") ||
		!strings.Contains(c.Message, "no node can run the pod") {
		t.Errorf("Degraded %+v, want %s naming the scheduler's verdict", c, schedv1.ReasonProgressDeadline)
	}
	// Not before the deadline (the status's times are in whole seconds).
	if start := ud.Status.Services[0].LastProgressTime; start == nil || c.LastTransitionTime.Time.Before(start.Add(shortDeadline.Duration)) {
		t.Errorf("Degraded at %v, the service's rollout started at %v: before the %v deadline", c.LastTransitionTime, start, shortDeadline.Duration)
	}
	waitEvent(t, ns, "app", schedv1.ReasonProgressDeadline)

	dep := &appsv1.Deployment{}
	testenv.EventuallyWithin(t, testenv.Timeout, "the Deployment's own deadline to pass", func(ctx context.Context) error {
		if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app-api"}, dep); err != nil {
			return err
		}
		if got := dep.Spec.ProgressDeadlineSeconds; got == nil || *got != 10 {
			return fmt.Errorf("progressDeadlineSeconds %v, want 10", got)
		}
		for _, c := range dep.Status.Conditions {
			if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", dep.Status.Conditions)
	})
}

// TestUnboundClaimPastTheDeadline: a StatefulSet has no deadline of its
// own; the operator keeps the one of a service with volumes. Its claim
// not binding makes the app Degraded at the deadline, and binding later
// brings it back.
func TestUnboundClaimPastTheDeadline(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	class := "sim-" + ns
	create(t, MakeUserDeployment("vol", ns).Service("db", "postgres:17", 5432, schedv1.ExposureInternal).
		EditService("db", func(s *schedv1.ServiceSpec) {
			s.Volumes = []schedv1.ServiceVolume{{Name: "data", Size: resource.MustParse("1Gi"), MountPath: "/var/lib/postgresql", StorageClass: class}}
		}).
		Spec(func(s *schedv1.UserDeploymentSpec) { s.ProgressDeadline = shortDeadline }).Obj())
	waitUD(t, ns, "vol", "Progressing, waiting for the claim", waitingOn(schedv1.ReasonUnschedulable, "unbound immediate PersistentVolumeClaims"))
	ud := waitUD(t, ns, "vol", "Degraded at the deadline", phase(schedv1.UserDeploymentDegraded))
	if c := condition(ud, schedv1.ConditionDegraded); c.Reason != schedv1.ReasonProgressDeadline || !strings.Contains(c.Message, "unbound immediate PersistentVolumeClaims") {
		t.Errorf("Degraded %+v, want %s naming the claim", c, schedv1.ReasonProgressDeadline)
	}
	staticVolume(t, ns, "data-vol-db-0", class)
	ud = waitUD(t, ns, "vol", "Running once the claim binds", phase(schedv1.UserDeploymentRunning))
	if ud.Status.Services[0].LastProgressTime != nil {
		t.Errorf("a rolled-out service keeps a rollout time: %+v", ud.Status.Services[0])
	}
}

// deployRun is `kubectl sched deploy ... --wait` running in the background.
type deployRun struct {
	out  syncBuffer
	done chan int
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startDeploy(args ...string) *deployRun {
	r := &deployRun{done: make(chan int, 1)}
	go func() {
		streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &r.out, ErrOut: &r.out}
		root := plugincmd.NewRootCommand(streams)
		root.SetArgs(append(args, "--kubeconfig", sim.Kubeconfig))
		r.done <- plugincmd.Execute(root, streams)
	}()
	return r
}

// printed waits until the command printed want, and fails if it ended
// first.
func (r *deployRun) printed(t *testing.T, want string) {
	t.Helper()
	testenv.EventuallyWithin(t, testenv.Timeout, fmt.Sprintf("deploy --wait to print %q", want), func(context.Context) error {
		select {
		case code := <-r.done:
			r.done <- code
			t.Fatalf("deploy --wait ended with exit %d before printing %q:\n%s", code, want, r.out.String())
		default:
		}
		if !strings.Contains(r.out.String(), want) {
			return fmt.Errorf("output so far:\n%s", r.out.String())
		}
		return nil
	})
}

func (r *deployRun) exit(t *testing.T) int {
	t.Helper()
	select {
	case code := <-r.done:
		t.Logf("deploy --wait: exit %d\n%s", code, r.out.String())
		return code
	case <-time.After(3 * time.Minute):
		t.Fatalf("deploy --wait did not end:\n%s", r.out.String())
	}
	return 0
}

// TestDeployWaitsForAClaimToBind is the api-postgres template on a cluster
// whose volumes bind later: `deploy --wait` shows what the app waits for
// instead of exiting 10, and succeeds once the claim binds.
func TestDeployWaitsForAClaimToBind(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	run := startDeploy("deploy", "orders", "-n", ns, "--template", "api-postgres", "--set", "image=orders:1", "--secret", "POSTGRES_PASSWORD=pw", "--wait", "--timeout", "3m")
	run.printed(t, "Unschedulable: service postgres: pod orders-postgres-0: no node can run the pod:")
	if !strings.Contains(run.out.String(), "unbound immediate PersistentVolumeClaims") {
		t.Errorf("the progress line does not name the claim:\n%s", run.out.String())
	}
	// The simulated cluster has no provisioner: the volume comes now.
	staticVolume(t, ns, "data-orders-postgres-0", "")
	if code := run.exit(t); code != 0 {
		t.Fatalf("deploy --wait: exit %d\n%s", code, run.out.String())
	}
	if want := `userdeployment "orders": Running (2/2 services ready)`; !strings.Contains(run.out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, run.out.String())
	}
}

// TestDeployWaitsForANode: the app's node pool has no node until one is
// added (as a cluster autoscaler would); `deploy --wait` waits with the
// scheduler's verdict and succeeds once the pod runs there.
func TestDeployWaitsForANode(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	pool := "added-" + ns
	if len(pool) > 63 {
		pool = strings.TrimRight(pool[:63], "-")
	}
	tmpl := filepath.Join(t.TempDir(), "pooled.yaml")
	if err := os.WriteFile(tmpl, []byte(`apiVersion: templates.kubectl-sched.dev/v1
kind: Template
metadata:
  name: pooled
description: One service in one node pool.
parameters:
  - name: pool
    description: The node pool.
    required: true
object:
  kind: UserDeployment
  spec:
    services:
      - name: web
        image: nginx:1.27
        exposure: None
    placement:
      nodePools:
        - ${{ pool }}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	run := startDeploy("deploy", "pooled", "-n", ns, "--template", tmpl, "--set", "pool="+pool, "--wait", "--timeout", "3m")
	run.printed(t, "Unschedulable: service web: pod pooled-web-")

	node := addNode(t, "sim-"+pool, pool)
	// The node goes after the app's pods, which its simulated kubelet ends.
	t.Cleanup(func() {
		ctx := context.Background()
		_ = sim.Client.Delete(ctx, &schedv1.UserDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pooled"}})
		testenv.EventuallyWithin(t, testenv.Timeout, "the app's pods to go", func(ctx context.Context) error {
			var list corev1.PodList
			if err := sim.Client.List(ctx, &list, client.InNamespace(ns), appLabel("pooled")); err != nil {
				return err
			}
			if len(list.Items) > 0 {
				return fmt.Errorf("%d pods left", len(list.Items))
			}
			return nil
		})
		_ = sim.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
	})
	if code := run.exit(t); code != 0 {
		t.Fatalf("deploy --wait: exit %d\n%s", code, run.out.String())
	}
	if want := `userdeployment "pooled": Running (1/1 services ready)`; !strings.Contains(run.out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, run.out.String())
	}
	pods, err := runningPods(t.Context(), ns, "pooled")
	if err != nil || len(pods) != 1 || pods[0].Spec.NodeName != node {
		t.Errorf("pods %v (%v), want one on the new node %s", pods, err, node)
	}
}

// addNode adds a simulated node in pool, reserved for it by the pool's
// taint, as hack/cluster makes its nodes, and returns its name.
func addNode(t *testing.T, name, pool string) string {
	t.Helper()
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")}
	create(t, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{"type": "kwok", corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64", cluster.LabelPool: pool},
			Annotations: map[string]string{cluster.KwokNodeAnnotation: "fake"},
		},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: schedv1.TaintPool, Value: pool, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity: res, Allocatable: res,
			// Loopback, where nothing listens, as the other simulated nodes.
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.1.9.9"}, {Type: corev1.NodeHostName, Address: name}},
		},
	})
	return name
}

// TestTenantsCrashMessageIsBounded: what a tenant's container leaves when
// it crashes (its termination message, or its log's end) reaches the
// app's status bounded, 1 KiB a pod, keeping the end where the reason
// is; the status stays within the API's limits and is written.
func TestTenantsCrashMessageIsBounded(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	alice := tenantClient(t, ns, "alice")
	var b strings.Builder
	for i := 0; b.Len() < 8000; i++ {
		fmt.Fprintf(&b, "retrying step %d of the start-up\n", i)
	}
	b.WriteString("fatal: config key DB_URL is missing")
	if err := alice.Create(t.Context(), MakeUserDeployment("app", ns).
		Service("api", "api:1", 8080, schedv1.ExposureInternal).
		ServicePodAnnotation("api", cluster.AnnotationCrashExitCode, "2").
		ServicePodAnnotation("api", cluster.AnnotationTerminationMessage, b.String()).Obj()); err != nil {
		t.Fatal(err)
	}
	ud := waitUD(t, ns, "app", "Degraded", phase(schedv1.UserDeploymentDegraded))
	c := condition(ud, schedv1.ConditionDegraded)
	if c.Reason != schedv1.ReasonCrashLoop || !strings.HasSuffix(c.Message, "\nfatal: config key DB_URL is missing") || !strings.Contains(c.Message, "last exit code 2: …") {
		t.Errorf("Degraded %+v, want the crash with the message's end", c)
	}
	if n := len(ud.Status.Services[0].Message); n > 1024+200 {
		t.Errorf("the service's message holds %d bytes of the container's text, want at most 1 KiB of it", n)
	}
}
