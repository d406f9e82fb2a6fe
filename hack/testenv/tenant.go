package testenv

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd"
)

// Tenant makes the namespace name of tier as an admin does, by running
// `kubectl sched tenant create NAME --tier TIER --user MEMBER` in-process
// with the cluster's admin kubeconfig (it waits until the tier's quota is
// made and counted, at most timeout), and returns a client that acts as
// member. The namespace is deleted when the test ends. The operator's
// tenant controller must run.
func Tenant(t testing.TB, s *Sim, name, tier, member string, timeout time.Duration) client.Client {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	root := cmd.NewRootCommand(streams)
	root.SetArgs([]string{"tenant", "create", name, "--tier", tier, "--user", member, "--timeout", timeout.String(), "--kubeconfig", s.Kubeconfig})
	code := cmd.Execute(root, streams)
	t.Cleanup(func() {
		_ = s.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	if code != 0 {
		t.Fatalf("kubectl sched tenant create %s --tier %s --user %s: exit %d\n%s%s", name, tier, member, code, out.String(), errOut.String())
	}
	// RBAC reaches the API server's authorizer a moment after the binding.
	if err := WaitAllowed(t.Context(), s.Client, member, authorizationv1.ResourceAttributes{
		Namespace: name, Verb: "create", Group: schedv1.GroupVersion.Group, Resource: "agenttasks",
	}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(s.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: member}
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
