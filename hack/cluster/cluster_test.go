package cluster

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// One cluster for the package; tests use their own namespaces.
var (
	testCluster *Cluster
	client      kubernetes.Interface
)

const pollTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "kubectl-sched-cluster-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Generous: the first run builds the binaries.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Dir: dir, Log: os.Stderr})
	if err != nil {
		fmt.Fprintf(os.Stderr, "start cluster: %v\n(state kept in %s)\n", err, dir)
		return 1
	}
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop cluster:", err)
		}
	}()
	cfg, err := c.RESTConfig()
	if err == nil {
		client, err = kubernetes.NewForConfig(cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	testCluster = c

	code := m.Run()
	if code == 0 {
		defer os.RemoveAll(dir) // after Stop
	} else {
		fmt.Fprintf(os.Stderr, "cluster state and logs kept in %s\n", dir)
	}
	return code
}

// namespace creates a namespace for one test and waits for its default
// ServiceAccount, without which pods cannot be created.
func namespace(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	poll(t, "default ServiceAccount in "+name, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	return name
}

func poll(t *testing.T, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, pollTimeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func podTemplate(labels, annotations map[string]string, restart corev1.RestartPolicy) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			RestartPolicy: restart,
			Containers:    []corev1.Container{{Name: "main", Image: "registry.example/app:1"}},
		},
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

type podSummary struct {
	Phase          corev1.PodPhase
	Ready          bool
	ContainerReady []bool
	Running        []bool
}

func summarize(p *corev1.Pod) podSummary {
	s := podSummary{Phase: p.Status.Phase, Ready: podReady(p)}
	for _, cs := range p.Status.ContainerStatuses {
		s.ContainerReady = append(s.ContainerReady, cs.Ready)
		s.Running = append(s.Running, cs.State.Running != nil)
	}
	return s
}

func TestDeploymentPodsRunningAndReady(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels, nil, corev1.RestartPolicyAlways),
		},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []podSummary{
		{Phase: corev1.PodRunning, Ready: true, ContainerReady: []bool{true}, Running: []bool{true}},
		{Phase: corev1.PodRunning, Ready: true, ContainerReady: []bool{true}, Running: []bool{true}},
	}
	var got []podSummary
	poll(t, "2 running, ready pods", func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err
		}
		got = got[:0]
		for i := range pods.Items {
			got = append(got, summarize(&pods.Items[i]))
		}
		return cmp.Equal(want, got), nil
	})
	poll(t, "deployment available", func(ctx context.Context) (bool, error) {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == 2, err
	})
}

func TestJobOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		annotations  map[string]string
		env          []corev1.EnvVar
		backoffLimit int32
		wantJob      batchv1.JobConditionType
		wantPhase    corev1.PodPhase
		want         corev1.ContainerStateTerminated
	}{
		{
			name: "succeeds",
			annotations: map[string]string{
				AnnotationExitCode:           "0",
				AnnotationTerminationMessage: `{"greeting":"hello"}`,
			},
			backoffLimit: 6,
			wantJob:      batchv1.JobComplete,
			wantPhase:    corev1.PodSucceeded,
			want:         corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", Message: `{"greeting":"hello"}`},
		},
		{
			name:         "fails",
			annotations:  map[string]string{AnnotationExitCode: "3"},
			backoffLimit: 0,
			wantJob:      batchv1.JobFailed,
			wantPhase:    corev1.PodFailed,
			want:         corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error"},
		},
		{
			name:         "env wins over the annotations",
			annotations:  map[string]string{AnnotationExitCode: "0", AnnotationTerminationMessage: "from=annotation"},
			env:          []corev1.EnvVar{{Name: "A", Value: "x"}, {Name: EnvExitCode, Value: "4"}, {Name: EnvTerminationMessage, Value: "region=eu"}},
			backoffLimit: 0,
			wantJob:      batchv1.JobFailed,
			wantPhase:    corev1.PodFailed,
			want:         corev1.ContainerStateTerminated{ExitCode: 4, Reason: "Error", Message: "region=eu"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := namespace(t)
			job := &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: "step"},
				Spec: batchv1.JobSpec{
					BackoffLimit: ptr.To(tt.backoffLimit),
					Template:     podTemplate(nil, tt.annotations, corev1.RestartPolicyNever),
				},
			}
			job.Spec.Template.Spec.Containers[0].Env = tt.env
			if _, err := client.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			poll(t, "job condition "+string(tt.wantJob), func(ctx context.Context) (bool, error) {
				j, err := client.BatchV1().Jobs(ns).Get(ctx, "step", metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				for _, c := range j.Status.Conditions {
					if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
						if c.Type != tt.wantJob {
							return false, fmt.Errorf("job ended %s (%s: %s), want %s", c.Type, c.Reason, c.Message, tt.wantJob)
						}
						return true, nil
					}
				}
				return false, nil
			})

			pods, err := client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=step"})
			if err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) != 1 {
				t.Fatalf("got %d pods, want 1", len(pods.Items))
			}
			pod := pods.Items[0]
			if pod.Status.Phase != tt.wantPhase {
				t.Errorf("pod phase = %s, want %s", pod.Status.Phase, tt.wantPhase)
			}
			if len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].State.Terminated == nil {
				t.Fatalf("container not terminated: %+v", pod.Status.ContainerStatuses)
			}
			got := *pod.Status.ContainerStatuses[0].State.Terminated
			// Times are the simulation's; only check they are set.
			if got.StartedAt.IsZero() || got.FinishedAt.IsZero() {
				t.Errorf("terminated times not set: %+v", got)
			}
			got.StartedAt, got.FinishedAt = metav1.Time{}, metav1.Time{}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("terminated state (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImagePullErrorKeepsPodPending(t *testing.T) {
	t.Parallel()
	for _, reason := range []string{"ErrImagePull", "ImagePullBackOff"} {
		t.Run(reason, func(t *testing.T) {
			t.Parallel()
			ns := namespace(t)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pull"}}
			tpl := podTemplate(nil, map[string]string{AnnotationImagePullError: reason}, corev1.RestartPolicyAlways)
			pod.Annotations, pod.Spec = tpl.Annotations, tpl.Spec
			if _, err := client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			var got *corev1.Pod
			poll(t, "container waiting with "+reason, func(ctx context.Context) (bool, error) {
				p, err := client.CoreV1().Pods(ns).Get(ctx, "pull", metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				got = p
				cs := p.Status.ContainerStatuses
				return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == reason, nil
			})
			if got.Status.Phase != corev1.PodPending || podReady(got) {
				t.Errorf("phase %s, ready %v; want Pending and not ready", got.Status.Phase, podReady(got))
			}
			if msg := got.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, "registry.example/app:1") {
				t.Errorf("waiting message %q does not name the image", msg)
			}
		})
	}
}

func TestReadyAnnotationKeepsPodUnready(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	tpl := podTemplate(nil, map[string]string{AnnotationReady: "false"}, corev1.RestartPolicyAlways)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Annotations: tpl.Annotations}, Spec: tpl.Spec}
	if _, err := client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect := func(want podSummary) {
		t.Helper()
		var got podSummary
		poll(t, fmt.Sprintf("pod %+v", want), func(ctx context.Context) (bool, error) {
			p, err := client.CoreV1().Pods(ns).Get(ctx, "probe", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			got = summarize(p)
			return cmp.Equal(want, got), nil
		})
	}
	expect(podSummary{Phase: corev1.PodRunning, Ready: false, ContainerReady: []bool{false}, Running: []bool{true}})

	// The probe "recovers" when the annotation changes.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, AnnotationReady)
	if _, err := client.CoreV1().Pods(ns).Patch(t.Context(), "probe", "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(podSummary{Phase: corev1.PodRunning, Ready: true, ContainerReady: []bool{true}, Running: []bool{true}})
}

func TestDefaultNodes(t *testing.T) {
	t.Parallel()
	type nodeView struct {
		Zone, Pool, Spot, GPU string
		Ready                 bool
		Taints                []string
	}
	want := map[string]nodeView{
		"sim-general-a": {Zone: "zone-a", Pool: "general", Ready: true},
		"sim-general-b": {Zone: "zone-b", Pool: "general", Ready: true},
		"sim-general-c": {Zone: "zone-c", Pool: "general", Ready: true},
		"sim-highmem-a": {Zone: "zone-a", Pool: "highmem", Ready: true},
		"sim-spot-b": {Zone: "zone-b", Pool: "spot", Spot: "true", Ready: true,
			Taints: []string{"node.kubectl-sched.dev/spot=true:NoSchedule"}},
		"sim-gpu-c": {Zone: "zone-c", Pool: "gpu", GPU: "true", Ready: true,
			Taints: []string{"nvidia.com/gpu=present:NoSchedule"}},
	}
	nodes, err := client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]nodeView{}
	for _, n := range nodes.Items {
		v := nodeView{
			Zone: n.Labels[LabelZone], Pool: n.Labels[LabelPool],
			Spot: n.Labels[LabelSpot], GPU: n.Labels[LabelGPU],
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				v.Ready = c.Status == corev1.ConditionTrue
			}
		}
		for _, taint := range n.Spec.Taints {
			v.Taints = append(v.Taints, taint.ToString())
		}
		got[n.Name] = v
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
}

func TestStartReusesRunningCluster(t *testing.T) {
	t.Parallel()
	c, err := Start(t.Context(), Options{Dir: testCluster.Dir})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(testCluster.PIDs(), c.PIDs()); diff != "" {
		t.Errorf("second Start restarted processes (-first +second):\n%s", diff)
	}
	if c.Kubeconfig != testCluster.Kubeconfig || c.Server != testCluster.Server {
		t.Errorf("second Start: kubeconfig %s server %s, want %s %s", c.Kubeconfig, c.Server, testCluster.Kubeconfig, testCluster.Server)
	}
}

// TestDeletedPodKeepsForeignFinalizers: a running pod that is deleted stops
// (exit 137, phase Failed) and stays until its finalizers are removed, as on
// a real node. The operator's outputs finalizer relies on this.
func TestDeletedPodKeepsForeignFinalizers(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	const hold = "test.kubectl-sched.dev/hold"
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{hold}}}
	tpl := podTemplate(nil, nil, corev1.RestartPolicyAlways)
	pod.Spec = tpl.Spec
	if _, err := client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "pod running", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "held", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	if err := client.CoreV1().Pods(ns).Delete(t.Context(), "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	poll(t, "pod stopped", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "held", metav1.GetOptions{})
		got = p
		return err == nil && p.Status.Phase == corev1.PodFailed, err
	})
	if cs := got.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 137 {
		t.Errorf("container statuses %+v, want one terminated with exit code 137", cs)
	}
	if diff := cmp.Diff([]string{hold}, got.Finalizers); diff != "" {
		t.Errorf("finalizers (-want +got):\n%s", diff)
	}
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := client.CoreV1().Pods(ns).Patch(t.Context(), "held", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "pod gone", func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods(ns).Get(ctx, "held", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
