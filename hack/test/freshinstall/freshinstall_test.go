package freshinstall_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd"
)

var sim *testenv.Sim

// A simulated cluster with nothing of kubectl-sched installed, and
// kube-controller-manager's quota flags left at their defaults.
func TestMain(m *testing.M) {
	// Quiet: the operator's log is not what these tests read.
	ctrl.SetLogger(logr.Discard())
	s, err := testenv.StartBareSim(cluster.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sim = s
	code := m.Run()
	_ = sim.Stop(code != 0)
	os.Exit(code)
}

// quotaDiscovered waits until kube-controller-manager's quota controller
// has found resource (a CRD's group resource) and made it an evaluator:
// its discovery runs every 30s, and logs each kind it finds.
func quotaDiscovered(t *testing.T, resource string, timeout time.Duration) {
	t.Helper()
	log := filepath.Join(sim.Dir, "logs", "kube-controller-manager.log")
	want := fmt.Sprintf(`"QuotaMonitor created object count evaluator" resource=%q`, resource)
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		f, err := os.Open(log)
		if err != nil {
			return false, err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), want) {
				return true, nil
			}
		}
		return false, sc.Err()
	})
	if err != nil {
		t.Fatalf("kube-controller-manager did not log %s within %s (%s): %v", want, timeout, log, err)
	}
}

// TestTenantUsableRightAfterInstall: install the CRDs just after the
// cluster's quota controller looked for new kinds (so its next look is
// 30s away), make a tenant at once, and create an AgentTask in it as a
// member. The tier quota is counted first without the CRDs' count/
// resources; without the operator asking for a recount, every AgentTask
// create there is refused ("status unknown for quota") until the quota
// controller's full resync, 5 minutes later, and `tenant create` times
// out. With it, `tenant create` returns as soon as the quota controller
// has found the CRDs, and the member's create passes.
func TestTenantUsableRightAfterInstall(t *testing.T) {
	ctx := t.Context()
	// A throwaway CRD tells when the quota controller's discovery ran.
	probe := &apiextensionsv1.CustomResourceDefinition{}
	probe.Name = "probes.freshinstall.kubectl-sched.dev"
	probe.Spec = apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "freshinstall.kubectl-sched.dev", Scope: apiextensionsv1.NamespaceScoped,
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "probes", Singular: "probe", Kind: "Probe", ListKind: "ProbeList"},
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}},
	}
	scheme := app.Scheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(sim.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, probe); err != nil {
		t.Fatal(err)
	}
	quotaDiscovered(t, "probes.freshinstall.kubectl-sched.dev", 90*time.Second)
	discovered := time.Now()

	// The install, as `kubectl sched install` does it: CRDs, policies and
	// roles, the operator (its tenant controller), tiers and classes.
	if err := testenv.InstallCRDs(sim.Config); err != nil {
		t.Fatal(err)
	}
	// A client made now finds the new kinds.
	if c, err = client.New(sim.Config, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	if err := testenv.InstallPolicies(ctx, c); err != nil {
		t.Fatal(err)
	}
	stop, _, err := testenv.StartOperator(context.Background(), sim.Config, func(o *app.Options) { o.Controllers = []string{"tenant"} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("operator: %v", err)
		}
	})
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tiers.yaml", "priorityclasses.yaml"} {
		if err := testenv.ApplyFile(ctx, c, filepath.Join(root, "config", "manager", f)); err != nil {
			t.Fatal(err)
		}
	}
	installed := time.Since(discovered)
	// Seven CRDs, 22 policies and the operator take up to about 21 s
	// with make test's other packages beside this one; the tenant's
	// quota is made within a second of the install, still before the
	// quota controller's next look.
	if installed > 25*time.Second {
		t.Fatalf("the install took %s after the quota controller's discovery; the test needs the tenant made well before its next one (30s)", installed)
	}

	start := time.Now()
	code, stdout, stderr := sched("tenant", "create", "fresh", "--tier", "free", "--user", "alice", "--timeout", "90s", "--kubeconfig", sim.Kubeconfig)
	took := time.Since(start)
	t.Logf("tenant create took %s (install done %s after the quota controller's discovery):\n%s%s", took.Round(100*time.Millisecond), installed.Round(100*time.Millisecond), stdout, stderr)
	if code != 0 {
		t.Fatalf("tenant create: exit %d", code)
	}
	// It waited for the quota controller to count the CRDs: the quota was
	// counted without them first, which is the case this test is about.
	if !strings.Contains(stdout, "waiting for the cluster's quota controller to count count/agenttasks.sched.kubectl-sched.dev") {
		t.Errorf("tenant create did not wait for the CRDs to be counted; stdout:\n%s", stdout)
	}
	if !strings.Contains(stdout, "tenant fresh ready") {
		t.Errorf("tenant create did not say the tenant is ready; stdout:\n%s", stdout)
	}

	alice := rest.CopyConfig(sim.Config)
	alice.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
	ac, err := client.New(alice, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// RBAC reaches the API server's authorizer a moment after the binding.
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		last = ac.Create(ctx, MakeAgentTask("first", "fresh").Image("busybox").Obj())
		return last == nil || !strings.Contains(last.Error(), "cannot create resource"), nil
	}); err != nil || last != nil {
		t.Fatalf("alice's first AgentTask in the new tenant: %v", last)
	}
	if total := time.Since(start); total > time.Minute {
		t.Errorf("the tenant took %s to be usable, want well under the quota controller's 5m resync", total)
	}
}

// sched runs `kubectl sched ARGS` in-process.
func sched(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	root := cmd.NewRootCommand(streams)
	root.SetArgs(args)
	code = cmd.Execute(root, streams)
	return code, out.String(), errOut.String()
}
