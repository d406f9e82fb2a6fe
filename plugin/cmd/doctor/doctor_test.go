package doctor_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/operatorstatus"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/doctor"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/buildinfo"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/manifests"
)

// env has the CRDs, the admission policies and the users' roles, and no
// operator: what 'kubectl sched install --without-operator' leaves.
var env *plugintest.Env

func TestMain(m *testing.M) { plugintest.Main(m, &env) }

// A fresh API server: no CRDs, nothing installed. doctor says to install
// and exits 4, as every command does there.
func TestNotInstalled(t *testing.T) {
	kc := plugintest.BareKubeconfig(t, "doctor-admin")

	r := plugintest.RunWithInput("", "doctor", "--kubeconfig", kc)
	if r.Code != cmdutil.ExitNotInstalled {
		t.Errorf("exit %d, want %d\nstderr: %s", r.Code, cmdutil.ExitNotInstalled, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "Run 'kubectl sched install'") {
		t.Errorf("stderr does not say to install:\n%s", r.Stderr)
	}
	plugintest.Golden(t, "not-installed", r.Stdout)
}

// The CRDs and policies, no operator: the operator and its leader FAIL
// with the fix, and doctor exits 1.
func TestNoOperator(t *testing.T) {
	r := env.Run("doctor")
	if r.Code != cmdutil.ExitError {
		t.Errorf("exit %d, want 1\nstderr: %s", r.Code, r.Stderr)
	}
	if want := "error: 2 check(s) failed: operator, leader\nEach FAIL line above says how to fix it.\n"; r.Stderr != want {
		t.Errorf("stderr (-want +got):\n%s", cmp.Diff(want, r.Stderr))
	}
	plugintest.Golden(t, "no-operator", r.Stdout)

	// -o json has the same checks, in a stable struct.
	r = env.Run("doctor", "-o", "json")
	var rep doctor.Report
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || r.Code != cmdutil.ExitError {
		t.Fatalf("exit %d, %v:\n%s", r.Code, err, r.Stdout)
	}
	got := map[string]doctor.Status{}
	for _, c := range rep.Checks {
		got[c.Name] = c.Status
	}
	want := map[string]doctor.Status{"crds": doctor.OK, "operator": doctor.Fail, "leader": doctor.Fail, "policies": doctor.OK,
		"webhook": doctor.OK, "optional-apis": doctor.Warn, "settings": doctor.Warn, "nodes": doctor.Warn, "rbac": doctor.OK}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON statuses (-want +got):\n%s", diff)
	}
	if len(rep.Commands) != len(doctor.Commands) || !rep.Commands[0].Allowed {
		t.Errorf("JSON commands: %+v", rep.Commands)
	}
}

// A tenant's member, with only kubectl-sched-tenant in their namespace:
// what they may not read is skipped, not an error, and the RBAC table
// shows which commands they may run.
func TestTenantMember(t *testing.T) {
	ctx := context.Background()
	const ns, user = "doctor-team", "doctor-alice"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.BindUser(ctx, env.Client, env.Config, ns, user, "kubectl-sched-tenant",
		authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupName, Resource: "agenttasks"},
		authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Subresource: "log"}); err != nil {
		t.Fatal(err)
	}
	r := env.Run("doctor", "-n", ns, "--as", user)
	if r.Code != 0 {
		t.Errorf("exit %d, want 0\nstderr: %s", r.Code, r.Stderr)
	}
	plugintest.Golden(t, "tenant-member", r.Stdout)
}

// An operator that runs and leads, as its Deployment, Leases and settings
// show it: those checks pass. A plugin a minor release behind it warns, in
// doctor and on version's stderr.
func TestRunningOperator(t *testing.T) {
	ctx := context.Background()
	const ns = schedv1.DefaultOperatorNamespace
	env.Namespace(t, ns)
	labels := map[string]string{"app.kubernetes.io/name": "kubectl-sched-operator", "app.kubernetes.io/version": "v1.3.0"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "kubectl-sched-operator", Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "operator"}}},
			},
		},
	}
	leader := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: doctor.LeaderElectionID, Namespace: ns},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("operator-0_1234"), LeaseDurationSeconds: ptr.To[int32](3600),
			RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	status := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: operatorstatus.LeaseName, Namespace: ns,
		Annotations: map[string]string{operatorstatus.AnnotationOptionalAPIs: operatorstatus.Encode([]operatorstatus.OptionalAPI{
			{Name: "cert-manager", API: "cert-manager.io/v1 Certificate", State: operatorstatus.NotInstalled}})}}}
	settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: manifests.ConfigMapName, Namespace: ns},
		Data: map[string]string{"INGRESS_DOMAIN": "apps.example.org"}}
	// Nodes of two pools, one simulated, and a SchedExt on one pool that
	// found a node without sched_ext.
	node := func(name, pool string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{schedv1.NodeLabelPool: pool},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}}}
	}
	scx := &schedv1.SchedExt{ObjectMeta: metav1.ObjectMeta{Name: "doctor-lavd"},
		Spec: schedv1.SchedExtSpec{Scheduler: schedv1.SchedulerSource{Name: "scx_lavd"}, NodeSelector: map[string]string{schedv1.NodeLabelPool: "general"}}}
	objs := []client.Object{dep, leader, status, settings, node("doctor-g1", "general"), node("doctor-g2", "general"), node("doctor-gpu1", "gpu"), scx}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	// No controller manager runs here: the status is written by hand.
	dep.Status = appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	if err := env.Client.Status().Update(ctx, dep); err != nil {
		t.Fatal(err)
	}
	scx.Status = schedv1.SchedExtStatus{DesiredNodes: 2, ReadyNodes: 1, UnsupportedNodes: []string{"doctor-g2"}}
	if err := env.Client.Status().Update(ctx, scx); err != nil {
		t.Fatal(err)
	}

	statuses := func(args ...string) (map[string]doctor.Check, int) {
		t.Helper()
		r := env.Run(append([]string{"doctor", "-o", "json"}, args...)...)
		var rep doctor.Report
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
			t.Fatalf("%v:\n%s\nstderr: %s", err, r.Stdout, r.Stderr)
		}
		got := map[string]doctor.Check{}
		for _, c := range rep.Checks {
			got[c.Name] = c
		}
		return got, r.Code
	}
	got, code := statuses()
	for _, name := range []string{"crds", "operator", "leader", "policies", "optional-apis", "settings", "rbac"} {
		if got[name].Status != doctor.OK {
			t.Errorf("%s: %+v, want OK", name, got[name])
		}
	}
	if code != 0 {
		t.Errorf("exit %d, want 0 (only nodes warn)", code)
	}
	wantNodes := doctor.Check{Name: "nodes", Status: doctor.Warn, Message: "3 node(s) in 2 pool(s); nodes without sched_ext in pool general",
		Fix: "'kubectl sched schedext status' names them; run SchedExts only on pools whose kernels have sched_ext (6.12+)",
		Details: []string{
			"pool general: 2 node(s) (2 simulated); SchedExt doctor-lavd 1/2 ready; 1 without sched_ext",
			"pool gpu: 1 node(s) (1 simulated); no SchedExt selects them (sched_ext support unknown)",
		}}
	if diff := cmp.Diff(wantNodes, got["nodes"]); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	if want := []string{"INGRESS_DOMAIN=apps.example.org"}; !cmp.Equal(got["settings"].Details, want) {
		t.Errorf("settings details %q, want %q", got["settings"].Details, want)
	}

	old := buildinfo.Version
	buildinfo.Version = "v1.2.4"
	t.Cleanup(func() { buildinfo.Version = old })
	got, code = statuses()
	if c := got["operator"]; c.Status != doctor.Warn || c.Fix != "kubectl krew upgrade sched" || code != 0 {
		t.Errorf("a plugin behind the operator: exit %d, %+v", code, c)
	}
	r := env.Run("version")
	if want := "Warning: the plugin (v1.2.4) is older than the operator (v1.3.0): upgrade it with 'kubectl krew upgrade sched'.\n"; r.Stderr != want || r.Code != 0 {
		t.Errorf("version: exit %d, stderr %q, want %q", r.Code, r.Stderr, want)
	}
	buildinfo.Version = "v1.3.9"
	if r := env.Run("version"); r.Stderr != "" {
		t.Errorf("a patch apart: stderr %q, want none", r.Stderr)
	}
}

func TestErrors(t *testing.T) {
	env.RunErrorCases(t, map[string]plugintest.ErrorCase{
		"unreachable": {Args: []string{"doctor", "--server", "https://127.0.0.1:1", "--request-timeout", "2s"}, NoKubeconfig: true,
			Code: cmdutil.ExitUnreachable, Stderr: []string{"cannot reach the cluster", "kubectl cluster-info"}},
		"bad output":  {Args: []string{"doctor", "-o", "wide"}, Code: cmdutil.ExitUsage, Stderr: []string{`--output must be json or yaml, got "wide"`}},
		"an argument": {Args: []string{"doctor", "extra"}, Code: cmdutil.ExitUsage},
	}, func(t *testing.T, r plugintest.Result) {
		if r.Stdout != "" {
			t.Errorf("stdout %q, want nothing", r.Stdout)
		}
	})
}

// The optional External Secrets policy is checked once part of it is
// there: a policy without its binding checks nothing.
func TestOptionalPolicyUnbound(t *testing.T) {
	ctx := context.Background()
	objs, err := manifests.ExternalSecretsPolicy("{{namespace}}/", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "ValidatingAdmissionPolicy" {
			continue
		}
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	r := env.Run("doctor", "-o", "json")
	var rep doctor.Report
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, r.Stdout)
	}
	want := doctor.Check{Name: "policies", Status: doctor.Fail, Message: "1 of 22 not bound and active", Fix: "kubectl sched install",
		Details: []string{"binding kubectl-sched-external-secret-keys missing"}}
	if diff := cmp.Diff(want, rep.Checks[3]); diff != "" {
		t.Errorf("policies (-want +got):\n%s", diff)
	}
}
