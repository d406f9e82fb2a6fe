package cmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-sched/kubectl-sched/api/operatorstatus"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/version"
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
		defer func() { _ = env.Stop() }()
		dir, err := os.MkdirTemp("", "plugin-test")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		kubeconfig = filepath.Join(dir, "kubeconfig")
		if err := testenv.WriteKubeconfig(&env.ControlPlane, kubeconfig, testenv.Admin("plugin-admin")); err != nil {
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
	for _, want := range []string{"Client Version: devel", "operator not installed; run 'kubectl sched install'",
		"Optional APIs: unknown (the operator has not reported them: no Lease kubectl-sched-system/kubectl-sched-operator-status; is it running?)"} {
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
	defer func() { _ = env.Client.Delete(context.Background(), dep) }()
	stdout, _, code = run("version", "--kubeconfig", kubeconfig, "-o", "json")
	if code != 0 || !strings.Contains(stdout, `"operatorVersion": "v9.8.7"`) {
		t.Errorf("exit %d, want the operator version in JSON:\n%s", code, stdout)
	}

	// The optional APIs, from the status Lease beside the operator, which
	// is cluster data: a control character in it is shown, not sent.
	reported := []operatorstatus.OptionalAPI{
		{Name: "External Secrets", API: "external-secrets.io/v1 ExternalSecret", State: operatorstatus.NotInstalled, Message: "no CustomResourceDefinition externalsecrets.external-secrets.io"},
		{Name: "cert-manager", API: "cert-manager.io/v1 Certificate", State: operatorstatus.InUse, Message: "public apps get certificates from ClusterIssuer le\x1b[2J"},
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: operatorstatus.LeaseName, Namespace: "default",
		Annotations: map[string]string{operatorstatus.AnnotationOptionalAPIs: operatorstatus.Encode(reported)}}}
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if err := env.Client.Create(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Client.Delete(context.Background(), lease) }()
	stdout, stderr, code = run("version", "--kubeconfig", kubeconfig)
	want := `Client Version: devel
Operator Version: v9.8.7
Optional APIs (as the operator reported at 2026-01-02T03:04:05Z):
  External Secrets (external-secrets.io/v1 ExternalSecret): not installed; no CustomResourceDefinition externalsecrets.external-secrets.io
  cert-manager (cert-manager.io/v1 Certificate): in use; public apps get certificates from ClusterIssuer le^[[2J
`
	if code != 0 || stdout != want {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}
	stdout, _, code = run("version", "--kubeconfig", kubeconfig, "-o", "json")
	var info version.Info
	if err := json.Unmarshal([]byte(stdout), &info); err != nil || code != 0 {
		t.Fatalf("exit %d, %v:\n%s", code, err, stdout)
	}
	if diff := cmp.Diff(reported, info.OptionalAPIs); diff != "" || info.OptionalAPIsReportedAt != "2026-01-02T03:04:05Z" {
		t.Errorf("JSON optional APIs (-want +got):\n%s\nreported at %q", diff, info.OptionalAPIsReportedAt)
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
