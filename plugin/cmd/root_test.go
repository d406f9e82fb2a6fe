package cmd_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

var (
	env        *testenv.Env
	kubeconfig string
)

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer env.Stop()
		user, err := env.ControlPlane.AddUser(envtest.User{Name: "plugin-admin", Groups: []string{"system:masters"}}, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		data, err := user.KubeConfig()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		dir, err := os.MkdirTemp("", "plugin-test")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		kubeconfig = filepath.Join(dir, "kubeconfig")
		if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// run executes `kubectl sched ARGS` in-process, as kubectl would.
func run(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	root := cmd.NewRootCommand(streams)
	root.SetArgs(args)
	code = cmd.Execute(root, streams)
	return out.String(), errOut.String(), code
}

func TestVersion(t *testing.T) {
	stdout, stderr, code := run("version", "--kubeconfig", kubeconfig)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"Client Version: devel", "operator not installed; run 'kubectl sched install'"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}

	// With the operator's Deployment present, its version label is shown.
	labels := map[string]string{"app.kubernetes.io/name": "kubectl-sched-operator", "app.kubernetes.io/version": "v9.8.7"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "kubectl-sched-operator", Namespace: "default", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "operator"}}},
			},
		},
	}
	if err := env.Client.Create(context.Background(), dep); err != nil {
		t.Fatal(err)
	}
	defer env.Client.Delete(context.Background(), dep)
	stdout, _, code = run("version", "--kubeconfig", kubeconfig, "-o", "json")
	if code != 0 || !strings.Contains(stdout, `"operatorVersion": "v9.8.7"`) {
		t.Errorf("exit %d, want the operator version in JSON:\n%s", code, stdout)
	}
}

func TestVersionClientOnlyNeedsNoCluster(t *testing.T) {
	stdout, stderr, code := run("version", "--client", "--server", "https://127.0.0.1:1")
	if code != 0 || stdout != "Client Version: devel\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestExitCodes(t *testing.T) {
	cases := map[string]struct {
		args     []string
		wantCode int
		wantErr  string
	}{
		"unknown flag is a usage error": {
			args: []string{"version", "--bogus"}, wantCode: cmdutil.ExitUsage, wantErr: "unknown flag: --bogus",
		},
		"bad output format": {
			args: []string{"version", "--client", "-o", "xml"}, wantCode: cmdutil.ExitUsage, wantErr: `--output must be json or yaml, got "xml"`,
		},
		"unreachable cluster": {
			args: []string{"version", "--server", "https://127.0.0.1:1", "--request-timeout", "2s"}, wantCode: cmdutil.ExitUnreachable, wantErr: "cannot reach the cluster: connection refused",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, stderr, code := run(tc.args...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("exit %d, stderr %q; want exit %d with %q", code, stderr, tc.wantCode, tc.wantErr)
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
				t.Errorf("want a short error, got:\n%s", stderr)
			}
		})
	}
}
