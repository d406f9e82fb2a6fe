package deploy_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/templates"
)

var env *plugintest.Env

func TestMain(m *testing.M) { plugintest.Main(m, &env) }

var ctx = context.Background()

func TestDeploy(t *testing.T) {
	r := env.MustRun(t, "deploy", "shop", "-n", "deploy-basic", "--create-namespace",
		"--template", "web-app", "--set", "apiImage=ghcr.io/example/api:1.4.0")
	want := "namespace/deploy-basic created\n" +
		"userdeployment.sched.kubectl-sched.dev/shop applied\n" +
		"Follow it with: kubectl sched get ud shop -n deploy-basic -w\n"
	if r.Stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.Stdout, want)
	}

	ud := env.App(t, "deploy-basic", "shop")
	s := ud.Spec.Services
	if len(s) != 2 || s[0].Image != "nginx:1.27" || s[1].Image != "ghcr.io/example/api:1.4.0" || *s[0].Replicas != 2 ||
		s[0].Exposure != schedv1.ExposurePublic || s[0].Env[0].Value != "http://shop-api:8080" {
		t.Errorf("services = %+v", s)
	}
	if ud.Annotations[templates.AnnotationTemplate] != "web-app" {
		t.Errorf("annotations = %v", ud.Annotations)
	}
	managers := map[string]metav1.ManagedFieldsOperationType{}
	for _, mf := range ud.ManagedFields {
		managers[mf.Manager] = mf.Operation
	}
	if managers["kubectl-sched"] != metav1.ManagedFieldsOperationApply || len(managers) != 1 {
		t.Errorf("managedFields managers = %v, want only kubectl-sched with Apply", managers)
	}

	// Deploying again updates the same object in place.
	env.MustRun(t, "deploy", "shop", "-n", "deploy-basic", "--template", "web-app", "--set", "apiImage=ghcr.io/example/api:1.5.0", "--set", "replicas=3")
	ud = env.App(t, "deploy-basic", "shop")
	if ud.Spec.Services[1].Image != "ghcr.io/example/api:1.5.0" || *ud.Spec.Services[0].Replicas != 3 || ud.Generation != 2 {
		t.Errorf("after redeploy: generation %d, services %+v", ud.Generation, ud.Spec.Services)
	}
}

func TestDeployFromValuesFileAndSources(t *testing.T) {
	env.Namespace(t, "deploy-sources")
	dir := t.TempDir()
	values := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(values, []byte("image: ghcr.io/example/mailer:3\nreplicas: 4\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("values file, and --set wins", func(t *testing.T) {
		env.MustRun(t, "deploy", "mailer", "-n", "deploy-sources", "--template", "worker", "-f", values, "--set", "replicas=5")
		s := env.App(t, "deploy-sources", "mailer").Spec.Services[0]
		if s.Image != "ghcr.io/example/mailer:3" || *s.Replicas != 5 {
			t.Errorf("service = %+v", s)
		}
	})

	t.Run("local file", func(t *testing.T) {
		env.MustRun(t, "deploy", "cache", "-n", "deploy-sources", "--template", "testdata/cache.yaml")
		if got := env.App(t, "deploy-sources", "cache").Spec.Services[0].Image; got != "redis:7" {
			t.Errorf("image = %q", got)
		}
	})

	t.Run("template shared in the cluster", func(t *testing.T) {
		data, err := os.ReadFile("testdata/cache.yaml")
		if err != nil {
			t.Fatal(err)
		}
		shared := strings.ReplaceAll(string(data), "redis:7", "registry.internal/redis:7")
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "deploy-sources", Labels: map[string]string{templates.LabelTemplate: "true"}},
			Data:       map[string]string{templates.ConfigMapKey: shared},
		}
		if err := env.Client.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		env.MustRun(t, "deploy", "cache2", "-n", "deploy-sources", "--template", "cache")
		if got := env.App(t, "deploy-sources", "cache2").Spec.Services[0].Image; got != "registry.internal/redis:7" {
			t.Errorf("image = %q", got)
		}
	})
}

func TestDeploySecret(t *testing.T) {
	const ns, password = "deploy-secret", "correct-horse-battery-staple"
	env.Namespace(t, ns)
	args := []string{"deploy", "orders", "-n", ns, "--template", "api-postgres", "--set", "image=ghcr.io/example/orders:2"}

	r := env.MustRun(t, append(args, "--secret", "POSTGRES_PASSWORD="+password)...)
	if strings.Contains(r.Stdout+r.Stderr, password) {
		t.Fatalf("the password was printed:\n%s\n%s", r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "secret/orders-secrets applied\nuserdeployment.sched.kubectl-sched.dev/orders applied\n") {
		t.Errorf("stdout:\n%s", r.Stdout)
	}

	ud := env.App(t, ns, "orders")
	raw, _ := json.Marshal(ud)
	if strings.Contains(string(raw), password) {
		t.Errorf("the password is in the UserDeployment: %s", raw)
	}
	wantRefs := []schedv1.SecretReference{{Name: templates.SecretRefName, SecretName: "orders-secrets"}}
	if diff := cmp.Diff(wantRefs, ud.Spec.Secrets); diff != "" {
		t.Errorf("spec.secrets (-want +got):\n%s", diff)
	}
	secret := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders-secrets"}, secret); err != nil {
		t.Fatal(err)
	}
	if string(secret.Data["POSTGRES_PASSWORD"]) != password || secret.Labels[templates.LabelPartOf] != "kubectl-sched" || secret.Labels[schedv1.LabelManagedBy] != "" {
		t.Errorf("secret: labels %v, keys %v", secret.Labels, len(secret.Data))
	}
	if len(secret.OwnerReferences) != 1 || secret.OwnerReferences[0].UID != ud.UID || ptr.Deref(secret.OwnerReferences[0].Controller, false) {
		t.Errorf("secret owner references = %+v, want the UserDeployment (not as controller)", secret.OwnerReferences)
	}
	if secret.ManagedFields[0].Manager != "kubectl-sched" {
		t.Errorf("secret managed by %q", secret.ManagedFields[0].Manager)
	}

	// The app carries a digest of the values, which rolls its pods when they
	// change; it is not a plain hash of the value.
	firstHash := ud.Annotations[schedv1.AnnotationSecretHash]
	if len(firstHash) != 16 || strings.Contains(fmt.Sprintf("%x", sha256.Sum256([]byte(password))), firstHash) {
		t.Errorf("secret hash %q", firstHash)
	}

	// A redeploy without the secret keeps it, and keeps the owner.
	r = env.MustRun(t, append(args, "--set", "port=9090")...)
	if h := env.App(t, ns, "orders").Annotations[schedv1.AnnotationSecretHash]; h != firstHash {
		t.Errorf("secret hash %q after a redeploy with the same values, was %q", h, firstHash)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders-secrets"}, secret); err != nil {
		t.Fatal(err)
	}
	if string(secret.Data["POSTGRES_PASSWORD"]) != password || len(secret.OwnerReferences) != 1 {
		t.Errorf("after a redeploy without --secret: value kept %v, owners %+v", string(secret.Data["POSTGRES_PASSWORD"]) == password, secret.OwnerReferences)
	}
	if strings.Contains(r.Stdout+r.Stderr, password) {
		t.Fatalf("the password was printed on redeploy")
	}

	// --secret-file replaces it; -o yaml prints the app but not the Secret.
	file := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(file, []byte("from-a-file-77"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = env.MustRun(t, append(args, "--secret-file", "POSTGRES_PASSWORD="+file, "-o", "yaml")...)
	if strings.Contains(r.Stdout+r.Stderr, "from-a-file-77") || strings.Contains(r.Stdout, "kind: Secret") {
		t.Errorf("the secret was printed:\n%s\n%s", r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "kind: UserDeployment") || strings.Contains(r.Stdout, "managedFields") {
		t.Errorf("want the UserDeployment without managedFields:\n%s", r.Stdout)
	}
	if want := `note: Secret "orders-secrets" (keys POSTGRES_PASSWORD) is not printed: it holds secret values.`; !strings.Contains(r.Stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders-secrets"}, secret); err != nil {
		t.Fatal(err)
	}
	if string(secret.Data["POSTGRES_PASSWORD"]) != "from-a-file-77" {
		t.Errorf("--secret-file did not replace the value")
	}
	if h := env.App(t, ns, "orders").Annotations[schedv1.AnnotationSecretHash]; h == firstHash || h == "" {
		t.Errorf("secret hash %q did not change with the value", h)
	}

	// -o name lists both objects.
	r = env.MustRun(t, append(args, "-o", "name")...)
	if r.Stdout != "secret/orders-secrets\nuserdeployment.sched.kubectl-sched.dev/orders\n" {
		t.Errorf("-o name:\n%s", r.Stdout)
	}
}

func TestDryRunClient(t *testing.T) {
	r := env.MustRun(t, "deploy", "preview", "-n", "deploy-dry-client", "--template", "api-postgres", "--set", "image=api:1",
		"--secret", "POSTGRES_PASSWORD=never-shown-1", "--dry-run=client", "-o", "yaml")
	for _, want := range []string{"kind: UserDeployment", "name: preview", "namespace: deploy-dry-client", "secretName: preview-secrets", "image: api:1"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.Stdout)
		}
	}
	if strings.Contains(r.Stdout+r.Stderr, "never-shown-1") || !strings.Contains(r.Stderr, `Secret "preview-secrets" (keys POSTGRES_PASSWORD) is not printed`) {
		t.Errorf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
	// Nothing was sent: not even the namespace exists.
	err := env.Client.Get(ctx, client.ObjectKey{Name: "deploy-dry-client"}, &corev1.Namespace{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("namespace: %v, want NotFound", err)
	}

	// A bare --dry-run is client's, as in every command (and kubectl's
	// deprecated bare form); none sends.
	for _, dryRun := range []string{"--dry-run=client", "--dry-run"} {
		r = env.MustRun(t, "deploy", "preview", "--template", "worker", "--set", "image=w:1", dryRun)
		if r.Stdout != "userdeployment.sched.kubectl-sched.dev/preview applied (dry run)\n" {
			t.Errorf("%s: stdout:\n%s", dryRun, r.Stdout)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "preview"}, &schedv1.UserDeployment{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: get: %v, want NotFound", dryRun, err)
		}
	}
	r = env.MustRun(t, "deploy", "preview", "-n", "deploy-dry-none", "--create-namespace", "--template", "worker", "--set", "image=w:1", "--dry-run=none")
	if want := "namespace/deploy-dry-none created\nuserdeployment.sched.kubectl-sched.dev/preview applied\n"; !strings.HasPrefix(r.Stdout, want) {
		t.Errorf("--dry-run=none: stdout:\n%s\nwant it to start:\n%s", r.Stdout, want)
	}
	env.App(t, "deploy-dry-none", "preview")
}

func TestDryRunServer(t *testing.T) {
	env.Namespace(t, "deploy-dry-server")
	r := env.MustRun(t, "deploy", "checked", "-n", "deploy-dry-server", "--template", "worker", "--set", "image=w:1", "--dry-run=server")
	if r.Stdout != "userdeployment.sched.kubectl-sched.dev/checked applied (server dry run)\n" {
		t.Errorf("stdout:\n%s", r.Stdout)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "deploy-dry-server", Name: "checked"}, &schedv1.UserDeployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("get: %v, want NotFound", err)
	}

	// The API server's validation refuses a value the template let through.
	r = env.Run("deploy", "checked", "-n", "deploy-dry-server", "--template", "worker", "--set", "image=w:1", "--set", "replicas=1000", "--dry-run=server")
	if r.Code != cmdutil.ExitInvalid || !strings.Contains(r.Stderr, "spec.services[0].replicas") || !strings.Contains(r.Stderr, "100") {
		t.Errorf("exit %d, want %d with the API's message:\n%s", r.Code, cmdutil.ExitInvalid, r.Stderr)
	}
	r = env.Run("deploy", "checked", "-n", "deploy-dry-server", "--template", "worker", "--set", "image=w:1", "--set", "spot=Sometimes", "--dry-run=server")
	if r.Code != cmdutil.ExitInvalid || !strings.Contains(r.Stderr, "spec.placement.spot") {
		t.Errorf("exit %d, want %d naming spec.placement.spot:\n%s", r.Code, cmdutil.ExitInvalid, r.Stderr)
	}
}

func condition(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
}

// deployAndWait runs deploy --wait in the background and returns its result
// once statuses have been written.
func deployAndWait(t *testing.T, ns, name string, statuses ...schedv1.UserDeploymentStatus) plugintest.Result {
	t.Helper()
	env.Namespace(t, ns)
	done := make(chan plugintest.Result, 1)
	go func() {
		done <- env.Run("deploy", name, "-n", ns, "--template", "web-app", "--set", "apiImage=api:1", "--wait", "--timeout", "60s")
	}()
	for _, st := range statuses {
		env.SetAppStatus(t, ns, name, st)
		time.Sleep(200 * time.Millisecond)
	}
	select {
	case r := <-done:
		return r
	case <-time.After(90 * time.Second):
		t.Fatal("deploy --wait did not return")
	}
	return plugintest.Result{}
}

func TestWaitRunning(t *testing.T) {
	r := deployAndWait(t, "deploy-wait-ok", "shop",
		schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentProgressing, Ready: "0/2"},
		schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentProgressing, Ready: "1/2", URLs: []string{"http://shop-deploy-wait-ok.example.com/"}},
		schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentRunning, Ready: "2/2", URLs: []string{"http://shop-deploy-wait-ok.example.com/"},
			Conditions: []metav1.Condition{condition(schedv1.ConditionReady, metav1.ConditionTrue, schedv1.ReasonAvailable, "all services ready")}},
	)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{
		"userdeployment.sched.kubectl-sched.dev/shop applied\n",
		"Waiting for userdeployment \"shop\" to be Running...\n",
		"URL: http://shop-deploy-wait-ok.example.com/\n",
		"userdeployment \"shop\": Running (2/2 services ready)\n",
		"Next: kubectl sched describe ud shop -n deploy-wait-ok\n",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.Stdout)
		}
	}
	if strings.Count(r.Stdout, "URL:") != 1 {
		t.Errorf("want the URL once:\n%s", r.Stdout)
	}
}

func TestWaitDegraded(t *testing.T) {
	const msg = `service api: image "api:1" cannot be pulled`
	r := deployAndWait(t, "deploy-wait-degraded", "shop",
		schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentDegraded, Ready: "1/2",
			Conditions: []metav1.Condition{condition(schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonImagePull, msg)}},
	)
	if r.Code != cmdutil.ExitFailed {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, cmdutil.ExitFailed, r.Stdout, r.Stderr)
	}
	if want := `error: userdeployment "shop" is Degraded: ` + msg; !strings.Contains(r.Stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "kubectl sched describe ud shop -n deploy-wait-degraded") {
		t.Errorf("stderr lacks the next command:\n%s", r.Stderr)
	}
}

// What an app waits out (here a claim binding) is printed as it waits,
// and is not the outcome: the app goes on to Running.
func TestWaitShowsWhatItWaitsFor(t *testing.T) {
	const msg = "service postgres: pod shop-postgres-0: no node can run the pod: 0/6 nodes are available: pod has unbound immediate PersistentVolumeClaims."
	r := deployAndWait(t, "deploy-wait-transient", "shop",
		schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentProgressing, Ready: "1/2",
			Conditions: []metav1.Condition{condition(schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonUnschedulable, msg+"\n\x1b[2J")}},
		schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentRunning, Ready: "2/2",
			Conditions: []metav1.Condition{condition(schedv1.ConditionReady, metav1.ConditionTrue, schedv1.ReasonAvailable, "all services ready")}},
	)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{
		`userdeployment "shop": Progressing (1/2 services ready): Unschedulable: ` + msg + " ^[[2J\n",
		`userdeployment "shop": Running (2/2 services ready)` + "\n",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.Stdout)
		}
	}
}

// A status from before the latest apply is not the outcome: --wait looks
// only at a status whose observedGeneration has caught up.
func TestWaitIgnoresStaleStatus(t *testing.T) {
	const ns = "deploy-wait-stale"
	env.Namespace(t, ns)
	env.MustRun(t, "deploy", "shop", "-n", ns, "--template", "web-app", "--set", "apiImage=api:1")
	env.SetAppStatus(t, ns, "shop", schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentRunning, Ready: "2/2"})
	r := env.Run("deploy", "shop", "-n", ns, "--template", "web-app", "--set", "apiImage=api:2", "--wait", "--timeout", "2s")
	if r.Code != cmdutil.ExitWatchTimeout {
		t.Errorf("exit %d, want %d: the Running status describes the previous spec\n%s%s", r.Code, cmdutil.ExitWatchTimeout, r.Stdout, r.Stderr)
	}
}

func TestWaitTimeout(t *testing.T) {
	env.Namespace(t, "deploy-wait-timeout")
	start := time.Now()
	r := env.Run("deploy", "shop", "-n", "deploy-wait-timeout", "--template", "web-app", "--set", "apiImage=api:1", "--wait", "--timeout", "1s")
	if r.Code != cmdutil.ExitWatchTimeout {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, cmdutil.ExitWatchTimeout, r.Stdout, r.Stderr)
	}
	if want := `timed out after 1s waiting for userdeployment "shop" to be Running (last phase: none reported yet; is the operator running?`; !strings.Contains(r.Stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestErrors(t *testing.T) {
	nobody, err := env.UserKubeconfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"deploy", "shop", "--template", "web-app", "--set", "apiImage=api:1"}
	cases := map[string]plugintest.ErrorCase{
		"unknown template": {
			Args: []string{"deploy", "shop", "--template", "web-ap"}, Code: cmdutil.ExitUsage,
			Stderr: []string{`unknown template "web-ap"`, "Available templates: agent-task, api-postgres, release-workflow, scx-lavd, web-app, worker."},
		},
		"missing required parameter lists the expected ones": {
			Args: []string{"deploy", "shop", "--template", "web-app"}, Code: cmdutil.ExitUsage,
			Stderr: []string{`template web-app: missing required parameter "apiImage"`,
				`Template web-app expects: --set webImage (default "nginx:1.27"), webPort (integer, default "80"), apiImage (required), apiPort (integer, default "8080"), replicas (integer, default "2"), host (default "")`},
		},
		"unknown parameter": {
			Args: append(base, "--set", "replica=3"), Code: cmdutil.ExitUsage,
			Stderr: []string{`unknown parameter "replica" (did you mean "replicas"?)`, "Template web-app expects:"},
		},
		"bad --set without '='": {
			Args: append(base, "--set", "novalue"), Code: cmdutil.ExitUsage,
			Stderr: []string{`bad --set "novalue": want NAME=VALUE`, "Write --set NAME=VALUE"},
		},
		"bad --set without a name": {
			Args: append(base, "--set", "=x"), Code: cmdutil.ExitUsage,
			Stderr: []string{"bad --set item: the name before '=' is empty", "Write --set NAME=VALUE"},
		},
		"bad --secret does not echo it": {
			Args: append(base, "--secret", "s3cr3t-value"), Code: cmdutil.ExitUsage,
			Stderr: []string{"bad --secret item #1: want NAME=VALUE"},
		},
		"a template of another kind": {
			Args: []string{"deploy", "nightly", "--template", "release-workflow", "--set", "repo=x"}, Code: cmdutil.ExitUsage,
			Stderr: []string{"template release-workflow makes a Workflow; deploy applies UserDeployment templates", "kubectl sched workflow run --template release-workflow"},
		},
		"invalid template file": {
			Args: []string{"deploy", "x", "--template", "testdata/invalid.yaml"}, Code: cmdutil.ExitInvalid,
			Stderr: []string{`invalid template file:testdata/invalid.yaml: parameter "image" is declared but the object never uses ${{ image }}`, "template show NAME -o yaml"},
		},
		"a value the kind cannot hold": {
			Args: []string{"deploy", "x", "--template", "testdata/cache.yaml", "--set", "memory=lots"}, Code: cmdutil.ExitInvalid,
			Stderr: []string{"the object does not decode into a UserDeployment", "quantities must match"},
		},
		"no --template": {
			Args: []string{"deploy", "shop"}, Code: cmdutil.ExitUsage, Stderr: []string{"--template or --image is required", "kubectl sched template list", "--image"},
		},
		"invalid name": {
			Args: []string{"deploy", "Shop_1", "--template", "web-app"}, Code: cmdutil.ExitUsage, Stderr: []string{`invalid name "Shop_1"`},
		},
		"bad --dry-run": {
			Args: append(base, "--dry-run=maybe"), Code: cmdutil.ExitUsage, Stderr: []string{`--dry-run must be client, server or none, got "maybe"`},
		},
		"--wait with --dry-run": {
			Args: append(base, "--dry-run=server", "--wait"), Code: cmdutil.ExitUsage, Stderr: []string{"--wait cannot follow a --dry-run: nothing changes"},
		},
		"bad output": {
			Args: append(base, "-o", "table"), Code: cmdutil.ExitUsage, Stderr: []string{`unable to match a printer suitable for the output format "table"`},
		},
		"namespace missing": {
			Args: append(base, "-n", "no-such-namespace"), Code: cmdutil.ExitNotFound,
			Stderr: []string{`namespace "no-such-namespace" not found`, "Add --create-namespace"},
		},
		"cluster unreachable": {
			Args: append(base, "--server", "https://127.0.0.1:1", "--request-timeout", "2s"), NoKubeconfig: true, Code: cmdutil.ExitUnreachable,
			Stderr: []string{"cannot reach the cluster", "Check the cluster is running"},
		},
		"forbidden": {
			Args: append(base, "--kubeconfig", nobody), NoKubeconfig: true, Code: cmdutil.ExitForbidden,
			Stderr: []string{`forbidden: user "nobody" may not patch userdeployments.sched.kubectl-sched.dev "shop" in namespace "default"`, "'kubectl auth can-i patch userdeployments.sched.kubectl-sched.dev -n default' checks."},
		},
	}
	env.RunErrorCases(t, cases, func(t *testing.T, r plugintest.Result) {
		// The error may follow the line that names the template's source.
		errOut := strings.TrimPrefix(r.Stderr, "template web-app: built-in catalog\n")
		if n := strings.Count(strings.TrimSpace(errOut), "\n"); n > 1 {
			t.Errorf("want one line and a hint, got:\n%s", r.Stderr)
		}
		if strings.Contains(r.Stderr, "s3cr3t-value") {
			t.Errorf("stderr echoes a secret:\n%s", r.Stderr)
		}
	})
}

// Against an API server without the kubectl-sched CRDs, deploy says to
// install them.
func TestCRDsNotInstalled(t *testing.T) {
	kubeconfig := plugintest.BareKubeconfig(t, "admin")

	for _, tmpl := range [][]string{{"web-app", "--set", "apiImage=api:1"}, {"api-postgres", "--set", "image=api:1", "--secret", "POSTGRES_PASSWORD=x"}} {
		t.Run(tmpl[0], func(t *testing.T) {
			r := plugintest.RunWithInput("", append([]string{"deploy", "shop", "--kubeconfig", kubeconfig, "--template"}, tmpl...)...)
			if r.Code != cmdutil.ExitNotInstalled || !strings.Contains(r.Stderr, "the kubectl-sched resources are not installed in this cluster") ||
				!strings.Contains(r.Stderr, "kubectl sched install") {
				t.Errorf("exit %d, want %d\nstderr: %s", r.Code, cmdutil.ExitNotInstalled, r.Stderr)
			}
		})
	}
}
