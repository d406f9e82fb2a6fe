// Package plugintest runs whole kubectl sched commands in-process against a
// real API server, as kubectl would run the plugin, and compares output
// with golden files.
package plugintest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/watchtest"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd"
)

var update = flag.Bool("update", false, "rewrite golden files with the current output")

// Env is an API server with the CRDs and a kubeconfig for it.
type Env struct {
	*testenv.Env
	Kubeconfig string
	dir        string
}

// Start runs etcd and kube-apiserver with the CRDs and writes an admin
// kubeconfig. Call it once per package from TestMain.
func Start() (*Env, error) {
	env, err := testenv.Start()
	if err != nil {
		return nil, err
	}
	e := &Env{Env: env}
	if e.Kubeconfig, e.dir, err = writeKubeconfig(env, "admin", []string{"system:masters"}); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return e, nil
}

// UserKubeconfig writes a kubeconfig for a user with the given groups, for
// tests of what a user without rights sees.
func (e *Env) UserKubeconfig(name string, groups ...string) (string, error) {
	path, _, err := writeKubeconfig(e.Env, name, groups)
	return path, err
}

func writeKubeconfig(env *testenv.Env, name string, groups []string) (path, dir string, err error) {
	dir, err = os.MkdirTemp("", "plugintest-")
	if err != nil {
		return "", "", err
	}
	path = filepath.Join(dir, "kubeconfig")
	return path, dir, testenv.WriteKubeconfig(&env.ControlPlane, path, envtest.User{Name: name, Groups: groups})
}

// BareKubeconfig starts an API server of its own, without the CRDs or
// anything else installed, for the test, and returns the path of a
// kubeconfig for user in system:masters: what every command meets on a
// cluster where kubectl-sched was never installed.
func BareKubeconfig(t *testing.T, user string) string {
	t.Helper()
	bin, err := cluster.BinDir(context.Background(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	bare := &envtest.Environment{BinaryAssetsDirectory: bin}
	if _, err := bare.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bare.Stop() })
	return testenv.AdminKubeconfig(t, &bare.ControlPlane, user)
}

// Stop stops the API server.
func (e *Env) Stop() error {
	_ = os.RemoveAll(e.dir)
	return e.Env.Stop()
}

// Result is what a command printed and its exit code.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Run executes `kubectl sched ARGS --kubeconfig <test server>` in-process.
func (e *Env) Run(args ...string) Result {
	return RunWithInput("", append(args, "--kubeconfig", e.Kubeconfig)...)
}

// MustRun is Run, failing the test unless the command exits 0.
func (e *Env) MustRun(t testing.TB, args ...string) Result {
	t.Helper()
	r := e.Run(args...)
	if r.Code != 0 {
		t.Fatalf("kubectl sched %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	return r
}

// RunWithInput executes `kubectl sched ARGS` with stdin, without adding a
// kubeconfig.
func RunWithInput(stdin string, args ...string) Result {
	return RunWith(cmd.RootOptions{}, stdin, args...)
}

// RunWith executes `kubectl sched ARGS` with stdin, built with o's flags
// and client getter (its streams are the Result's): the seam through
// which a test gives every command its clients.
func RunWith(o cmd.RootOptions, stdin string, args ...string) Result {
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}
	o.IOStreams = streams
	root := cmd.NewRootCommandWithOptions(o)
	root.SetArgs(args)
	code := cmd.Execute(root, streams)
	return Result{Stdout: out.String(), Stderr: errOut.String(), Code: code}
}

// Golden compares got with testdata/<name>.golden; `go test -update`
// rewrites the file instead.
func Golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", path, diff)
	}
}

// Main is a package's TestMain: it starts the API server into *env, runs
// the tests and stops it.
//
//	func TestMain(m *testing.M) { plugintest.Main(m, &env) }
func Main(m *testing.M, env **Env) {
	e, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	_ = e.Stop()
	os.Exit(code)
}

// RemoveCRD deletes the CRD name for the rest of the test, for tests of what
// users see when kubectl-sched is not installed, and installs it again at
// the end. It returns once listing list, the CRD's kind, fails as not
// installed: the API server stops serving a resource a moment after its
// CRD goes.
func (e *Env) RemoveCRD(t *testing.T, name string, list client.ObjectList) {
	t.Helper()
	ctx := context.Background()
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	crd.SetName(name)
	if err := e.Client.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		root, err := testenv.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{
			Paths: []string{filepath.Join(root, "config", "crd", "bases")}, MaxTime: time.Minute,
		}); err != nil {
			t.Fatal(err)
		}
	})
	watchtest.Eventually(t, "the CRD to be gone", func() bool {
		return apierrors.IsNotFound(e.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd))
	})
	// A request for the resource, as the plugin sends it, then gets a 404.
	watchtest.Eventually(t, "the resource to be gone", func() bool {
		err := e.Client.List(ctx, list, client.InNamespace("default"))
		return meta.IsNoMatchError(err) || apierrors.IsNotFound(err)
	})
}

// WaitAllowed waits until the API server's authorizer lets user do what
// attrs says: it learns of new RBAC from its informers, a moment after the
// writes, so a test that grants and then runs a command must wait.
func (e *Env) WaitAllowed(t *testing.T, user string, attrs authorizationv1.ResourceAttributes) {
	t.Helper()
	watchtest.Eventually(t, fmt.Sprintf("%s to be allowed to %s %s", user, attrs.Verb, attrs.Resource), func() bool {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &attrs}}
		return e.Client.Create(context.Background(), review) == nil && review.Status.Allowed
	})
}
