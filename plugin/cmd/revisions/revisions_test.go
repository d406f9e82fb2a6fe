package revisions_test

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/revision"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/revisions"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

var env *plugintest.Env

func TestMain(m *testing.M) { plugintest.Main(m, &env) }

var ctx = context.Background()

// deployed is app shop as `kubectl sched deploy` applies it: with
// server-side apply as kubectl-sched, a label and the secret hash
// included.
func deployed(t *testing.T, ns string) *schedv1.UserDeployment {
	t.Helper()
	env.Namespace(t, ns)
	ud := MakeUserDeployment("shop", ns).
		Service("web", "nginx:1.25", 80, schedv1.ExposurePublic).
		EditService("web", func(s *schedv1.ServiceSpec) { s.Env = []schedv1.EnvVar{{Name: "LOG", Value: "info"}} }).
		Service("api", "api:1", 8080, schedv1.ExposureInternal).
		EditService("api", func(s *schedv1.ServiceSpec) { s.Command = []string{"serve"} }).
		Config("MODE", "fast").
		Meta(func(m *metav1.ObjectMeta) {
			m.Labels = map[string]string{"team": "shop"}
			m.Annotations = map[string]string{schedv1.AnnotationSecretHash: "h1"}
		}).Obj()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ud)
	if err != nil {
		t.Fatal(err)
	}
	delete(u, "status")
	obj := &unstructured.Unstructured{Object: u}
	obj.SetAPIVersion(schedv1.GroupVersion.String())
	obj.SetKind("UserDeployment")
	if err := env.Client.Patch(ctx, obj, client.Apply, client.FieldOwner("kubectl-sched"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	return env.App(t, ns, "shop")
}

// record makes revision n of the app as it is, as the operator does, and
// reports it in the status with every service on it.
func record(t *testing.T, ns string, n int64, by string) {
	t.Helper()
	ud := env.App(t, ns, "shop")
	if err := env.Client.Create(ctx, revision.New(ud, n, revision.Of(ud), by)); err != nil {
		t.Fatal(err)
	}
	ud.Status = schedv1.UserDeploymentStatus{ObservedGeneration: ud.Generation, Phase: schedv1.UserDeploymentRunning,
		CurrentRevision: n, LastRunningRevision: n}
	for _, s := range ud.Spec.Services {
		ud.Status.Services = append(ud.Status.Services, schedv1.ServiceStatus{Name: s.Name, Revision: n})
	}
	if err := env.Client.Status().Update(ctx, ud); err != nil {
		t.Fatal(err)
	}
}

// edited changes web's image and adds an env variable as kubectl edit
// does (an update as manager kubectl-edit), and scales it as another
// manager.
func edited(t *testing.T, ns string) {
	t.Helper()
	ud := env.App(t, ns, "shop")
	ud.Spec.Services[0].Image = "nginx:1.27"
	ud.Spec.Services[0].Env = append(ud.Spec.Services[0].Env, schedv1.EnvVar{Name: "DEBUG", Value: "1"})
	if err := env.Client.Update(ctx, ud, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	scale := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": schedv1.GroupVersion.String(), "kind": "UserDeployment",
		"metadata": map[string]any{"name": "shop", "namespace": ns},
		"spec":     map[string]any{"services": []any{map[string]any{"name": "web", "replicas": int64(5)}}},
	}}
	if err := env.Client.Patch(ctx, scale, client.Apply, client.FieldOwner("scaler"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
}

// ages hides the AGE column, which depends on when the test runs.
var ages = regexp.MustCompile(`(?m)^(\d+ +)\d+s( +)`)

func hideAges(s string) string { return ages.ReplaceAllString(s, "${1}AGE${2}") }

func TestHistory(t *testing.T) {
	const ns = "history"
	deployed(t, ns)
	record(t, ns, 1, "kubectl-sched")
	edited(t, ns)
	record(t, ns, 2, "kubectl-edit")

	res := env.Run("history", "shop", "-n", ns)
	if res.Code != 0 || res.Stderr != "" {
		t.Fatalf("history: exit %d, stderr %q", res.Code, res.Stderr)
	}
	plugintest.Golden(t, "history", hideAges(res.Stdout))
	res = env.Run("history", "shop", "-n", ns, "-o", "wide")
	plugintest.Golden(t, "history-wide", hideAges(res.Stdout))

	res = env.Run("history", "shop", "-n", ns, "-o", "name")
	if res.Code != 0 || res.Stdout != "controllerrevision.apps/shop.v1\ncontrollerrevision.apps/shop.v2\n" {
		t.Errorf("-o name: exit %d, stdout %q", res.Code, res.Stdout)
	}
	res = env.Run("history", "shop", "-n", ns, "-o", "json")
	var h revisions.History
	if err := json.Unmarshal([]byte(res.Stdout), &h); err != nil || res.Code != 0 {
		t.Fatalf("-o json: exit %d, %v:\n%s", res.Code, err, res.Stdout)
	}
	if len(h.Revisions) != 2 || h.CurrentRevision != 2 || h.Revisions[1].ChangedBy != "kubectl-edit" ||
		h.Revisions[1].Change != "web: image nginx:1.25 → nginx:1.27, env (DEBUG added)" ||
		!slices.Equal(h.Revisions[1].Services, []string{"web", "api"}) || h.Revisions[0].Template.Spec.Services[0].Image != "nginx:1.25" {
		t.Errorf("-o json: %+v", h)
	}
	res = env.Run("history", "shop", "-n", ns, "-o", "yaml")
	if res.Code != 0 || !strings.Contains(res.Stdout, "currentRevision: 2") || !strings.Contains(res.Stdout, "changedBy: kubectl-edit") {
		t.Errorf("-o yaml: exit %d\n%s", res.Code, res.Stdout)
	}

	res = env.Run("history", "shop", "-n", ns, "--revision", "1")
	for _, want := range []string{"Revision:    1 (ControllerRevision shop.v1)", "Changed by:  kubectl-sched", "Change:      first revision: web nginx:1.25, api api:1",
		"Template:\n  metadata:\n    annotations:\n      sched.kubectl-sched.dev/secret-hash: h1\n  spec:", "      image: nginx:1.25"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("--revision 1 lacks %q:\n%s", want, res.Stdout)
		}
	}
	if strings.Contains(res.Stdout, "replicas") || strings.Contains(res.Stdout, "exposure") {
		t.Errorf("--revision 1 shows what a revision does not record:\n%s", res.Stdout)
	}

	// A ControllerRevision labelled as the app's that another app's UID
	// controls: ignored, and said so.
	other := env.App(t, ns, "shop")
	other.UID = "not-shop"
	forged := revision.New(other, 7, revision.Of(other), "mallory")
	forged.Namespace = ns
	if err := env.Client.Create(ctx, forged); err != nil {
		t.Fatal(err)
	}
	res = env.Run("history", "shop", "-n", ns)
	if res.Code != 0 || strings.Contains(res.Stdout, "mallory") || !strings.Contains(res.Stderr, "Warning: ignored ControllerRevision shop.v7: not controlled by this UserDeployment") {
		t.Errorf("a forged revision: exit %d\nstdout:\n%s\nstderr:\n%s", res.Code, res.Stdout, res.Stderr)
	}
	res = env.Run("rollback", "shop", "-n", ns, "--to-revision", "7")
	if res.Code != cmdutil.ExitNotFound || !strings.Contains(res.Stderr, `userdeployment "shop" has no revision 7`) || !strings.Contains(res.Stderr, "Its revisions: 1, 2;") {
		t.Errorf("rollback to a forged revision: exit %d, stderr %q", res.Code, res.Stderr)
	}
}

// TestRollback: back to revision 1 with one server-side apply as
// kubectl-sched, keeping every field it did not restore (the replicas
// another manager set, kubectl-sched's own label, config and secret
// hash), and removing the env variable kubectl edit added, which the
// apply could not without taking it over first.
func TestRollback(t *testing.T) {
	const ns = "rollback"
	deployed(t, ns)
	record(t, ns, 1, "kubectl-sched")
	edited(t, ns)
	record(t, ns, 2, "kubectl-edit")
	before := env.App(t, ns, "shop")

	for _, dry := range []string{"client", "server"} {
		res := env.Run("rollback", "shop", "-n", ns, "--dry-run="+dry)
		if res.Code != 0 || !strings.Contains(res.Stdout, "rolled back to revision 1 (") {
			t.Errorf("--dry-run=%s: exit %d\n%s%s", dry, res.Code, res.Stdout, res.Stderr)
		}
		if got := env.App(t, ns, "shop"); got.ResourceVersion != before.ResourceVersion {
			t.Errorf("--dry-run=%s changed the app", dry)
		}
	}

	res := env.Run("rollback", "shop", "-n", ns)
	if res.Code != 0 {
		t.Fatalf("rollback: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	plugintest.Golden(t, "rollback", res.Stdout)
	if res.Stderr != "Other field managers set service web image (kubectl-edit) and service web env (kubectl-edit): kubectl-sched takes them over, so that the rollback sets them to revision 1's.\n" {
		t.Errorf("stderr %q", res.Stderr)
	}
	// One change, so one revision: the generation moved once.
	if after := env.App(t, ns, "shop"); after.Generation != before.Generation+1 {
		t.Errorf("generation %d after the rollback, was %d: the spec changed more than once", after.Generation, before.Generation)
	}
	after := env.App(t, ns, "shop")
	want := before.DeepCopy()
	want.Spec.Services[0].Image = "nginx:1.25"
	want.Spec.Services[0].Env = want.Spec.Services[0].Env[:1]
	if diff := cmp.Diff(want.Spec, after.Spec); diff != "" {
		t.Errorf("spec after the rollback (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before.Labels, after.Labels); diff != "" || after.Annotations[schedv1.AnnotationSecretHash] != "h1" {
		t.Errorf("metadata changed: labels %s, annotations %v", diff, after.Annotations)
	}
	if ptr.Deref(after.Spec.Services[0].Replicas, 0) != 5 {
		t.Errorf("web's replicas, another manager's, are %v", after.Spec.Services[0].Replicas)
	}
	// kubectl-sched still applies what it applied before, and now web's
	// image.
	owned := map[string]bool{}
	for _, e := range after.ManagedFields {
		if e.Manager == "kubectl-sched" && e.Operation == metav1.ManagedFieldsOperationApply {
			raw := e.FieldsV1.GetRawString()
			for _, f := range []string{`"f:team"`, `"f:sched.kubectl-sched.dev/secret-hash"`, `"f:MODE"`, `"k:{\"name\":\"api\"}"`, `"f:command"`} {
				owned[f] = strings.Contains(raw, f)
			}
			owned["web image"] = strings.Contains(raw, `"k:{\"name\":\"web\"}":{".":{},"f:env"`) || strings.Contains(raw, `"f:image"`)
		}
	}
	for f, ok := range owned {
		if !ok {
			t.Errorf("kubectl-sched no longer owns %s", f)
		}
	}
	if len(owned) == 0 {
		t.Errorf("kubectl-sched has no apply entry: %+v", after.ManagedFields)
	}
	if !revision.Equal(revision.Of(after), revision.Of(getRevision(t, ns, 1))) {
		t.Errorf("the app does not run revision 1's template")
	}

	// The operator records it as revision 3; history says it is 1 again.
	record(t, ns, 3, "kubectl-sched")
	res = env.Run("history", "shop", "-n", ns)
	if !strings.Contains(res.Stdout, "web: image nginx:1.27 → nginx:1.25, env (DEBUG removed) (as revision 1)") {
		t.Errorf("history after the rollback:\n%s", res.Stdout)
	}
	// Nothing to do to go back to what runs; the default goes to 2.
	res = env.Run("rollback", "shop", "-n", ns, "--to-revision", "1")
	if res.Code != 0 || res.Stdout != "userdeployment.sched.kubectl-sched.dev/shop already runs what revision 1 ran: nothing to do\n" {
		t.Errorf("rollback to what runs: exit %d, stdout %q", res.Code, res.Stdout)
	}
	res = env.Run("rollback", "shop", "-n", ns, "--dry-run")
	if res.Code != 0 || !strings.HasPrefix(res.Stdout, "userdeployment.sched.kubectl-sched.dev/shop rolled back to revision 2 (dry run): web: image nginx:1.25 → nginx:1.27, env (DEBUG added)") {
		t.Errorf("default target after a rollback: exit %d, stdout %q", res.Code, res.Stdout)
	}
}

func getRevision(t *testing.T, ns string, n int64) *schedv1.UserDeployment {
	t.Helper()
	cr := &appsv1.ControllerRevision{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: revision.Name("shop", n)}, cr); err != nil {
		t.Fatal(err)
	}
	tmpl, err := revision.Read(cr)
	if err != nil {
		t.Fatal(err)
	}
	return &schedv1.UserDeployment{Spec: tmpl.Spec}
}

// TestRollbackNotes: services added since the revision are left, those
// removed since are not added back, and the secret values stay.
func TestRollbackNotes(t *testing.T) {
	const ns = "rollback-notes"
	deployed(t, ns)
	record(t, ns, 1, "kubectl-sched")
	ud := env.App(t, ns, "shop")
	ud.Spec.Services = []schedv1.ServiceSpec{ud.Spec.Services[0], {Name: "worker", Image: "worker:1", Exposure: schedv1.ExposureNone}}
	ud.Spec.Services[0].Image = "nginx:1.27"
	ud.Annotations[schedv1.AnnotationSecretHash] = "h2"
	if err := env.Client.Update(ctx, ud); err != nil {
		t.Fatal(err)
	}
	record(t, ns, 2, "kubectl-edit")
	res := env.Run("rollback", "shop", "-n", ns)
	want := `userdeployment.sched.kubectl-sched.dev/shop rolled back to revision 1: web: image nginx:1.27 → nginx:1.25
  service worker is not in revision 1: left as it is
  service api of revision 1 is no longer in the app: not added back
  the secrets' values stay as they are: a revision does not hold them (kubectl sched deploy --secret sets them)
`
	if res.Code != 0 || res.Stdout != want {
		t.Errorf("exit %d, stderr %q, stdout (-want +got):\n%s", res.Code, res.Stderr, cmp.Diff(want, res.Stdout))
	}
	got := env.App(t, ns, "shop")
	if len(got.Spec.Services) != 2 || got.Spec.Services[1].Name != "worker" || got.Spec.Services[0].Image != "nginx:1.25" || got.Annotations[schedv1.AnnotationSecretHash] != "h2" {
		t.Errorf("spec %+v, annotations %v", got.Spec.Services, got.Annotations)
	}
}

// TestRollbackWait: --wait follows the app to Running, and fails when the
// operator rolled the new revision back (spec.rollback: OnDegraded).
func TestRollbackWait(t *testing.T) {
	const ns = "rollback-wait"
	deployed(t, ns)
	record(t, ns, 1, "kubectl-sched")
	edited(t, ns)
	record(t, ns, 2, "kubectl-edit")
	g := env.App(t, ns, "shop").Generation

	// The operator's part: once the spec changes, report revision 3.
	report := func(st func(*schedv1.UserDeployment)) chan error {
		done := make(chan error, 1)
		go func() {
			done <- wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				ud := env.App(t, ns, "shop")
				if ud.Generation == g {
					return false, nil
				}
				g = ud.Generation
				ud.Status.ObservedGeneration, ud.Status.CurrentRevision = ud.Generation, 3
				st(ud)
				return true, env.Client.Status().Update(ctx, ud)
			})
		}()
		return done
	}
	done := report(func(ud *schedv1.UserDeployment) {
		ud.Status.Phase, ud.Status.Ready = schedv1.UserDeploymentRunning, "2/2"
	})
	res := env.Run("rollback", "shop", "-n", ns, "--wait", "--timeout", "20s")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res.Code != 0 || !strings.Contains(res.Stdout, `userdeployment "shop": Running (2/2 services ready)`) {
		t.Errorf("--wait: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}

	done = report(func(ud *schedv1.UserDeployment) {
		ud.Status.CurrentRevision = 4
		ud.Status.Phase = schedv1.UserDeploymentRunning
		ud.Status.RolledBack = &schedv1.RolledBack{FromRevision: 4, ToRevision: 3, Time: metav1.Now()}
		ud.Status.Conditions = []metav1.Condition{{Type: schedv1.ConditionRolledBack, Status: metav1.ConditionTrue, Reason: schedv1.ReasonRolledBack,
			Message: "revision 4, the spec's, did not become Running within 10m0s", LastTransitionTime: metav1.Now()}}
	})
	res = env.Run("rollback", "shop", "-n", ns, "--to-revision", "2", "--wait", "--timeout", "20s")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res.Code != cmdutil.ExitFailed || !strings.Contains(res.Stderr, `userdeployment "shop" was rolled back (spec.rollback: OnDegraded): revision 4, the spec's, did not become Running`) {
		t.Errorf("--wait on a rolled back revision: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
}

func TestErrors(t *testing.T) {
	const ns = "revisions-errors"
	deployed(t, ns)
	nobody, err := env.UserKubeconfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]plugintest.ErrorCase{
		"no name":          {Args: []string{"history"}, Code: cmdutil.ExitUsage, Stderr: []string{"takes one userdeployment name, got 0 arguments"}},
		"not found":        {Args: []string{"history", "nope", "-n", ns}, Code: cmdutil.ExitNotFound, Stderr: []string{`userdeployments.sched.kubectl-sched.dev "nope" not found`}},
		"bad output":       {Args: []string{"history", "shop", "-n", ns, "-o", "table"}, Code: cmdutil.ExitUsage, Stderr: []string{"--output must be wide, json, yaml or name"}},
		"no such revision": {Args: []string{"history", "shop", "-n", ns, "--revision", "3"}, Code: cmdutil.ExitNotFound, Stderr: []string{`userdeployment "shop" has no revision 3`, "Its revisions: none."}},
		"nothing earlier":  {Args: []string{"rollback", "shop", "-n", ns}, Code: cmdutil.ExitNotFound, Stderr: []string{`userdeployment "shop" has no earlier revision to roll back to`}},
		"wait, dry run":    {Args: []string{"rollback", "shop", "-n", ns, "--dry-run", "--wait"}, Code: cmdutil.ExitUsage, Stderr: []string{"--wait cannot follow a --dry-run"}},
		"forbidden":        {Args: []string{"history", "shop", "-n", ns, "--kubeconfig", nobody}, NoKubeconfig: true, Code: cmdutil.ExitForbidden, Stderr: []string{"forbidden"}},
	}
	env.RunErrorCases(t, cases, nil)
	res := env.Run("history", "shop", "-n", ns)
	if res.Code != 0 || !strings.Contains(res.Stderr, `No revisions of userdeployment "shop" found`) {
		t.Errorf("no revisions yet: exit %d, stderr %q", res.Code, res.Stderr)
	}
}
