package appedit_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
)

var env *plugintest.Env

func TestMain(m *testing.M) { plugintest.Main(m, &env) }

var ctx = context.Background()

// read returns the app, and what each field manager applied to it.
func read(t *testing.T, ns, name string) (*schedv1.UserDeployment, map[string]map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schedv1.GroupVersion.WithKind("UserDeployment"))
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	applied := map[string]map[string]any{}
	for _, m := range []string{kube.FieldManager, "gitops"} {
		a, err := kube.Applied(u, m)
		if err != nil {
			t.Fatal(err)
		}
		applied[m] = a.Object
	}
	ud := &schedv1.UserDeployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ud); err != nil {
		t.Fatal(err)
	}
	return ud, applied
}

func svc(ud *schedv1.UserDeployment, name string) *schedv1.ServiceSpec {
	for i := range ud.Spec.Services {
		if ud.Spec.Services[i].Name == name {
			return &ud.Spec.Services[i]
		}
	}
	return nil
}

// appliedService is service name of an applied object, not a copy.
func appliedService(obj map[string]any, name string) map[string]any {
	items, _, _ := unstructured.NestedFieldNoCopy(obj, "spec", "services")
	list, _ := items.([]any)
	for _, item := range list {
		if m := item.(map[string]any); m["name"] == name {
			return m
		}
	}
	return nil
}

// TestPartialChangesKeepEverythingElse: scale, set image and set env each
// change one field of an app that deploy applied with most fields a
// UserDeployment has, which another manager (gitops, with server-side
// apply) and a merge patch (stop) changed too. Each leaves every other
// field, and what each manager owns, as it was; a redeploy from the
// template then restores what the template says but keeps the scale,
// gitops' variable and the stop.
func TestPartialChangesKeepEverythingElse(t *testing.T) {
	const ns = "appedit-keep"
	env.Namespace(t, ns)
	deploy := []string{"deploy", "rich", "-n", ns, "--template", "testdata/rich.yaml", "--secret", "TOKEN=t0k3n"}
	env.MustRun(t, deploy...)
	gitops := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": schedv1.GroupVersion.String(), "kind": "UserDeployment",
		"metadata": map[string]any{"name": "rich", "namespace": ns, "labels": map[string]any{"synced": "yes"}},
		"spec":     map[string]any{"services": []any{map[string]any{"name": "web", "env": []any{map[string]any{"name": "X", "value": "from-gitops"}}}}},
	}}
	if err := env.Client.Patch(ctx, gitops, client.Apply, client.FieldOwner("gitops")); err != nil {
		t.Fatal(err)
	}
	env.MustRun(t, "stop", "rich", "-n", ns)
	before, applied := read(t, ns, "rich")
	if svc(before, "web").Replicas == nil || *svc(before, "web").Replicas != 1 || len(svc(before, "web").Env) != 4 || before.Spec.State != schedv1.StateStopped {
		t.Fatalf("the app to start from: %+v", before.Spec)
	}

	// step runs a command and checks that it changed the spec as change
	// says, and what kubectl-sched applied as changeApplied says, nothing
	// else; gitops keeps what it applied.
	step := func(t *testing.T, args []string, change func(*schedv1.UserDeployment), changeApplied func(web, api map[string]any)) plugintest.Result {
		t.Helper()
		r := env.MustRun(t, append(args, "-n", ns)...)
		after, appliedAfter := read(t, ns, "rich")
		want := &schedv1.UserDeployment{Spec: *before.Spec.DeepCopy()}
		change(want)
		if diff := cmp.Diff(want.Spec, after.Spec); diff != "" {
			t.Errorf("spec (-want +got):\n%s", diff)
		}
		wantApplied := runtimeCopy(applied[kube.FieldManager])
		changeApplied(appliedService(wantApplied, "web"), appliedService(wantApplied, "api"))
		if diff := cmp.Diff(wantApplied, appliedAfter[kube.FieldManager]); diff != "" {
			t.Errorf("what kubectl-sched applied (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(applied["gitops"], appliedAfter["gitops"]); diff != "" {
			t.Errorf("what gitops applied (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(before.Labels, after.Labels); diff != "" {
			t.Errorf("labels (-want +got):\n%s", diff)
		}
		before, applied = after, appliedAfter
		return r
	}

	t.Run("scale", func(t *testing.T) {
		r := step(t, []string{"scale", "rich", "web", "--replicas", "4"},
			func(ud *schedv1.UserDeployment) { svc(ud, "web").Replicas = ptr.To[int32](4) },
			func(web, _ map[string]any) { web["replicas"] = int64(4) })
		if want := "userdeployment.sched.kubectl-sched.dev/rich service web scaled to 4\n"; r.Stdout != want {
			t.Errorf("stdout %q, want %q", r.Stdout, want)
		}
		if !strings.Contains(r.Stderr, "note: app rich is stopped: service web runs its 4 replicas once 'kubectl sched start rich -n appedit-keep' starts it.") {
			t.Errorf("stderr:\n%s", r.Stderr)
		}
	})
	t.Run("set image", func(t *testing.T) {
		step(t, []string{"set", "image", "rich", "api=ghcr.io/example/api:2"},
			func(ud *schedv1.UserDeployment) { svc(ud, "api").Image = "ghcr.io/example/api:2" },
			func(_, api map[string]any) { api["image"] = "ghcr.io/example/api:2" })
	})
	t.Run("set env", func(t *testing.T) {
		step(t, []string{"set", "env", "rich", "web", "A=2", "NEW=3", "API_URL-"},
			func(ud *schedv1.UserDeployment) {
				w := svc(ud, "web")
				w.Env = []schedv1.EnvVar{{Name: "A", Value: "2"}, w.Env[2], w.Env[3], {Name: "NEW", Value: "3"}}
			},
			func(web, _ map[string]any) {
				env := web["env"].([]any)
				env[0] = map[string]any{"name": "A", "value": "2"}
				web["env"] = []any{env[0], env[2], map[string]any{"name": "NEW", "value": "3"}}
			})
	})
	t.Run("another manager's variable is not removed", func(t *testing.T) {
		r := env.Run("set", "env", "rich", "web", "X-", "-n", ns)
		if r.Code != cmdutil.ExitError || !strings.Contains(r.Stderr, "env X of service web is also set by gitops, so set env cannot remove it") {
			t.Errorf("exit %d:\n%s", r.Code, r.Stderr)
		}
	})

	t.Run("a redeploy keeps the scale, and the rest is the template's", func(t *testing.T) {
		r := env.MustRun(t, slices.Clone(deploy[:len(deploy)-2])...)
		if !strings.Contains(r.Stderr, "note: service web keeps its 4 replicas (kubectl sched scale changes them)") {
			t.Errorf("stderr:\n%s", r.Stderr)
		}
		after, _ := read(t, ns, "rich")
		web, api := svc(after, "web"), svc(after, "api")
		var names []string
		for _, e := range web.Env {
			names = append(names, e.Name+"="+e.Value)
		}
		if *web.Replicas != 4 || api.Image != "ghcr.io/example/api:1" || after.Spec.State != schedv1.StateStopped ||
			strings.Join(names, " ") != "A=1 API_URL=http://rich-api:8080 POD= X=from-gitops" || after.Labels["synced"] != "yes" {
			t.Errorf("after the redeploy: replicas %d, api image %s, state %s, env %v, labels %v", *web.Replicas, api.Image, after.Spec.State, names, after.Labels)
		}
		secret := &corev1.Secret{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rich-secrets"}, secret); err != nil || string(secret.Data["TOKEN"]) != "t0k3n" {
			t.Errorf("the Secret: %v, %v", err, secret.Data)
		}
	})
}

func runtimeCopy(m map[string]any) map[string]any {
	u := &unstructured.Unstructured{Object: m}
	return u.DeepCopy().Object
}

// Changes made at once are all made: each applies only onto the app as it
// read it, and reads again when the app changed in between.
func TestConcurrentChangesAreAllMade(t *testing.T) {
	const ns = "appedit-concurrent"
	env.Namespace(t, ns)
	env.MustRun(t, "deploy", "hello", "-n", ns, "--image", "nginx:1.27", "--internal", "--dry-run=none")
	var wg sync.WaitGroup
	results := make([]plugintest.Result, 6)
	for i := range results {
		wg.Go(func() {
			if i == 0 {
				results[i] = env.Run("scale", "hello", "--replicas", "3", "-n", ns)
				return
			}
			results[i] = env.Run("set", "env", "hello", fmt.Sprintf("V%d=%d", i, i), "-n", ns)
		})
	}
	wg.Wait()
	for i, r := range results {
		if r.Code != 0 {
			t.Errorf("change %d: exit %d\n%s", i, r.Code, r.Stderr)
		}
	}
	ud, _ := read(t, ns, "hello")
	web := svc(ud, "web")
	if len(web.Env) != 5 || ptr.Deref(web.Replicas, 0) != 3 {
		t.Errorf("replicas %v, env %+v: a change was lost", ptr.Deref(web.Replicas, 0), web.Env)
	}
}
