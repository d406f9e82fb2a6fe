package logs_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/testing"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/plugintest"
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
// finds no kubelet there.
func simulatedPod(t *testing.T, ns, name string, labels map[string]string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: "kwok-logs", Containers: []corev1.Container{{Name: "main", Image: "web:1"}}},
	}
	create(t, pod)
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
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
	)
	simulatedPod(t, ns, "shop-web-1", map[string]string{schedv1.LabelUserDeployment: "shop", schedv1.LabelService: "web"})
	nobody, err := env.UserKubeconfig("nobody")
	if err != nil {
		t.Fatal(err)
	}

	cases := map[string]struct {
		args         []string
		noKubeconfig bool
		wantCode     int
		wantErr      []string
	}{
		"no name":             {args: []string{"logs"}, wantCode: cmdutil.ExitUsage, wantErr: []string{"accepts between 1 and 2 arg(s), received 0"}},
		"a kind without pods": {args: []string{"logs", "schedext/lavd"}, wantCode: cmdutil.ExitUsage, wantErr: []string{`logs cannot show "schedext"`, "ud/shop"}},
		"an unknown kind":     {args: []string{"logs", "pods/x"}, wantCode: cmdutil.ExitUsage, wantErr: []string{`logs cannot show "pods"`}},
		"bad tail":            {args: []string{"logs", "shop", "--tail", "-2"}, wantCode: cmdutil.ExitUsage, wantErr: []string{"--tail must be -1 or more"}},
		"bad since":           {args: []string{"logs", "shop", "--since", "-1m"}, wantCode: cmdutil.ExitUsage, wantErr: []string{"--since must not be negative"}},
		"service of a task":   {args: []string{"logs", "at/dup", "web"}, wantCode: cmdutil.ExitUsage, wantErr: []string{"agenttask/dup has no services"}},
		"not found":           {args: []string{"logs", "nope", "-n", ns}, wantCode: cmdutil.ExitNotFound, wantErr: []string{`no app, task or workflow named "nope" in namespace "logs-errors"`}},
		"not found by kind":   {args: []string{"logs", "wf/nope", "-n", ns}, wantCode: cmdutil.ExitNotFound, wantErr: []string{`workflows.sched.kubectl-sched.dev "nope" not found`}},
		"no such service":     {args: []string{"logs", "shop", "db", "-n", ns}, wantCode: cmdutil.ExitNotFound, wantErr: []string{`userdeployment shop has no service "db"`, "Its services: web."}},
		"two kinds":           {args: []string{"logs", "dup", "-n", ns}, wantCode: cmdutil.ExitUsage, wantErr: []string{`"dup" names more than one kind`, "userdeployment/dup, agenttask/dup"}},
		"no pods":             {args: []string{"logs", "empty", "-n", ns}, wantCode: cmdutil.ExitError, wantErr: []string{"userdeployment empty has no pods", "-f waits for them"}},
		"a simulated pod": {args: []string{"logs", "shop", "-n", ns}, wantCode: cmdutil.ExitNoLogs,
			wantErr: []string{"pod shop-web-1 runs on simulated node kwok-logs (kwok): simulated pods have no logs", "no pod of userdeployment shop has logs to show"}},
		"forbidden":  {args: []string{"logs", "shop", "-n", ns, "--kubeconfig", nobody}, noKubeconfig: true, wantCode: cmdutil.ExitForbidden, wantErr: []string{"forbidden"}},
		"no cluster": {args: []string{"logs", "shop", "--server", "https://127.0.0.1:1", "--insecure-skip-tls-verify"}, noKubeconfig: true, wantCode: cmdutil.ExitUnreachable, wantErr: []string{"cannot reach the cluster"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var r plugintest.Result
			if tc.noKubeconfig {
				r = plugintest.RunWithInput("", tc.args...)
			} else {
				r = env.Run(tc.args...)
			}
			if r.Code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr %q", r.Code, tc.wantCode, r.Stderr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(r.Stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.Stderr)
				}
			}
		})
	}

	t.Run("no CRDs", func(t *testing.T) {
		env.RemoveCRD(t, "userdeployments.sched.kubectl-sched.dev", &schedv1.UserDeploymentList{})
		r := env.Run("logs", "ud/shop", "-n", ns)
		if r.Code != cmdutil.ExitNotInstalled || !strings.Contains(r.Stderr, "kubectl sched install") {
			t.Errorf("exit %d, want %d; stderr %q", r.Code, cmdutil.ExitNotInstalled, r.Stderr)
		}
	})
}
