package deploy_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/deploy"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/templates"
)

// reportURL writes the status the operator would, with url, once the app
// of the latest deploy exists.
func reportURL(t *testing.T, ns, name, url string) {
	t.Helper()
	env.SetAppStatus(t, ns, name, schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentProgressing, Ready: "0/1", URLs: []string{url}})
}

func TestDeployImage(t *testing.T) {
	const ns, token = "deploy-image", "s3cr3t-token-1"
	env.Namespace(t, ns)
	done := make(chan struct{})
	go func() { defer close(done); reportURL(t, ns, "hello", "http://hello.deploy-image.apps.example.com/") }()
	r := env.MustRun(t, "deploy", "hello", "-n", ns, "--image", "ghcr.io/example/hello:1", "--env", "GREETING=hi", "--env", "LOG=debug", "--env", "GREETING=hello",
		"--secret", "TOKEN="+token)
	<-done
	want := "secret/hello-secrets applied\n" +
		"userdeployment.sched.kubectl-sched.dev/hello applied\n" +
		"URL: http://hello.deploy-image.apps.example.com/\n" +
		"Follow it with: kubectl sched get ud hello -n deploy-image -w\n"
	if r.Stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.Stdout, want)
	}
	if strings.Contains(r.Stdout+r.Stderr, token) {
		t.Fatalf("the secret was printed")
	}

	ud := env.App(t, ns, "hello")
	wantSpec := schedv1.UserDeploymentSpec{
		Services: []schedv1.ServiceSpec{{
			Name: "web", Image: "ghcr.io/example/hello:1", Replicas: ptr.To[int32](1), Exposure: schedv1.ExposurePublic,
			Ports:          []schedv1.ServicePort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}},
			Env:            []schedv1.EnvVar{{Name: "LOG", Value: "debug"}, {Name: "GREETING", Value: "hello"}},
			ReadinessProbe: &schedv1.Probe{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
		}},
		Secrets:          []schedv1.SecretReference{{Name: templates.SecretRefName, SecretName: "hello-secrets"}},
		NetworkIsolation: schedv1.IsolationIsolated, State: schedv1.StateRunning,
	}
	if diff := cmp.Diff(wantSpec, ud.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if raw, _ := json.Marshal(ud); strings.Contains(string(raw), token) {
		t.Errorf("the secret is in the UserDeployment")
	}
	secret := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello-secrets"}, secret); err != nil {
		t.Fatal(err)
	}
	if string(secret.Data["TOKEN"]) != token || len(secret.OwnerReferences) != 1 || secret.OwnerReferences[0].UID != ud.UID ||
		secret.Labels[templates.LabelInstance] != "hello" || len(ud.Annotations[schedv1.AnnotationSecretHash]) != 16 {
		t.Errorf("secret %v, owners %+v, app annotations %v", secret.Labels, secret.OwnerReferences, ud.Annotations)
	}

	// Deploying again is the whole app again: the command line's env, but
	// the secret's value is kept.
	defer deploy.SetURLWait(100 * time.Millisecond)()
	env.MustRun(t, "deploy", "hello", "-n", ns, "--image", "ghcr.io/example/hello:2", "--env", "LOG=info")
	ud = env.App(t, ns, "hello")
	if s := ud.Spec.Services[0]; s.Image != "ghcr.io/example/hello:2" || len(s.Env) != 1 || s.Env[0].Value != "info" || len(ud.Spec.Secrets) != 1 {
		t.Errorf("after a redeploy: %+v, secrets %+v", s, ud.Spec.Secrets)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello-secrets"}, secret); err != nil || string(secret.Data["TOKEN"]) != token {
		t.Errorf("the secret's value was not kept: %v", err)
	}

	// Internal, on another port, with replicas: no URL to print.
	r = env.MustRun(t, "deploy", "worker", "-n", ns, "--image", "ghcr.io/example/worker:1", "--internal", "--port", "9000", "--replicas", "3")
	if strings.Contains(r.Stdout, "URL") {
		t.Errorf("an internal app has no URL:\n%s", r.Stdout)
	}
	s := env.App(t, ns, "worker").Spec.Services[0]
	if s.Exposure != schedv1.ExposureInternal || s.Ports[0].Port != 9000 || s.ReadinessProbe.TCPSocket.Port.IntVal != 9000 || *s.Replicas != 3 {
		t.Errorf("service %+v", s)
	}
}

func TestDeployImageWithoutOperator(t *testing.T) {
	defer deploy.SetURLWait(time.Second)()
	env.Namespace(t, "deploy-image-alone")
	r := env.MustRun(t, "deploy", "hello", "-n", "deploy-image-alone", "--image", "nginx:1.27")
	if want := "URL: not reported yet (is the operator running?); 'kubectl sched get ud hello -n deploy-image-alone' shows it once it is\n"; !strings.Contains(r.Stdout, want) {
		t.Errorf("stdout lacks %q:\n%s", want, r.Stdout)
	}
}

func TestDeployImageDryRun(t *testing.T) {
	env.Namespace(t, "deploy-image-dry")
	r := env.MustRun(t, "deploy", "preview", "-n", "deploy-image-dry", "--image", "nginx:1.27", "--port", "80", "--secret", "K=never-shown-2", "--dry-run=client", "-o", "yaml")
	for _, want := range []string{"kind: UserDeployment", "name: preview", "image: nginx:1.27", "port: 80", "exposure: Public", "secretName: preview-secrets"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.Stdout)
		}
	}
	if strings.Contains(r.Stdout+r.Stderr, "never-shown-2") || strings.Contains(r.Stdout, "URL") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
	r = env.MustRun(t, "deploy", "preview", "-n", "deploy-image-dry", "--image", "nginx:1.27", "--dry-run=server")
	if r.Stdout != "userdeployment.sched.kubectl-sched.dev/preview applied (server dry run)\n" {
		t.Errorf("stdout:\n%s", r.Stdout)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "deploy-image-dry", Name: "preview"}, &schedv1.UserDeployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("get: %v, want NotFound", err)
	}
}

func TestDeployImageErrors(t *testing.T) {
	base := []string{"deploy", "hello", "--image", "nginx:1.27"}
	cases := map[string]plugintest.ErrorCase{
		"--image and --template": {Args: append(base, "--template", "web-app"), Code: cmdutil.ExitUsage,
			Stderr: []string{"--image and --template cannot be used together", "Give --template to render a template, or --image to run one image"}},
		"--set with --image": {Args: append(base, "--set", "x=1"), Code: cmdutil.ExitUsage,
			Stderr: []string{"--set cannot be used with --image", "--env NAME=VALUE"}},
		"--port with --template": {Args: []string{"deploy", "shop", "--template", "web-app", "--set", "apiImage=a:1", "--port", "80"}, Code: cmdutil.ExitUsage,
			Stderr: []string{"--port cannot be used with --template", "--set"}},
		"--public and --internal": {Args: append(base, "--public", "--internal"), Code: cmdutil.ExitUsage,
			Stderr: []string{"--public and --internal cannot be used together"}},
		"bad --env":     {Args: append(base, "--env", "NOVALUE"), Code: cmdutil.ExitUsage, Stderr: []string{`bad --env "NOVALUE": want NAME=VALUE`}},
		"bad env name":  {Args: append(base, "--env", "1X=2"), Code: cmdutil.ExitUsage, Stderr: []string{`bad --env "1X=2"`}},
		"bad --port":    {Args: append(base, "--port", "0"), Code: cmdutil.ExitUsage, Stderr: []string{"--port must be between 1 and 65535, got 0"}},
		"bad --image":   {Args: []string{"deploy", "hello", "--image", "nginx 1.27"}, Code: cmdutil.ExitUsage, Stderr: []string{`bad --image "nginx 1.27"`}},
		"bad replicas":  {Args: append(base, "--replicas", "-1"), Code: cmdutil.ExitUsage, Stderr: []string{"--replicas must not be negative"}},
		"too many pods": {Args: append(base, "--replicas", "1000", "--dry-run=server"), Code: cmdutil.ExitInvalid, Stderr: []string{"spec.services[0].replicas"}},
	}
	env.RunErrorCases(t, cases, nil)
}

// A redeploy keeps the replicas a scale set, unless the template (or
// --replicas) sets them for that service.
func TestRedeployKeepsTheScale(t *testing.T) {
	const ns = "deploy-keep-scale"
	env.Namespace(t, ns)
	replicas := func(app, svc string) int32 {
		t.Helper()
		for _, s := range env.App(t, ns, app).Spec.Services {
			if s.Name == svc {
				return ptr.Deref(s.Replicas, -1)
			}
		}
		t.Fatalf("app %s has no service %s", app, svc)
		return 0
	}

	t.Run("a template without replicas", func(t *testing.T) {
		env.MustRun(t, "deploy", "cache", "-n", ns, "--template", "testdata/cache.yaml")
		env.MustRun(t, "scale", "cache", "--replicas", "3", "-n", ns)
		r := env.MustRun(t, "deploy", "cache", "-n", ns, "--template", "testdata/cache.yaml", "--set", "memory=512Mi")
		if got := replicas("cache", "redis"); got != 3 {
			t.Errorf("replicas %d after a redeploy, want the scale's 3", got)
		}
		if !strings.Contains(r.Stderr, "note: service redis keeps its 3 replicas (kubectl sched scale changes them)") {
			t.Errorf("stderr:\n%s", r.Stderr)
		}
		// The same with a server dry run, which shows what would be applied.
		r = env.MustRun(t, "deploy", "cache", "-n", ns, "--template", "testdata/cache.yaml", "--dry-run=server", "-o", "json")
		if !strings.Contains(r.Stdout, `"replicas": 3`) {
			t.Errorf("server dry run:\n%s", r.Stdout)
		}
	})

	t.Run("a template that sets them", func(t *testing.T) {
		env.MustRun(t, "deploy", "shop", "-n", ns, "--template", "web-app", "--set", "apiImage=api:1")
		env.MustRun(t, "scale", "shop", "web", "--replicas", "5", "-n", ns)
		r := env.MustRun(t, "deploy", "shop", "-n", ns, "--template", "web-app", "--set", "apiImage=api:2")
		if got := replicas("shop", "web"); got != 2 {
			t.Errorf("replicas %d, want the template's 2", got)
		}
		if !strings.Contains(r.Stderr, "note: service web goes from 5 to 2 replicas: the template sets them") || strings.Contains(r.Stderr, "service api") {
			t.Errorf("stderr:\n%s", r.Stderr)
		}
	})

	t.Run("--image, and --replicas", func(t *testing.T) {
		defer deploy.SetURLWait(10 * time.Millisecond)()
		env.MustRun(t, "deploy", "hello", "-n", ns, "--image", "nginx:1.27")
		env.MustRun(t, "scale", "hello", "--replicas", "4", "-n", ns)
		env.MustRun(t, "deploy", "hello", "-n", ns, "--image", "nginx:1.28")
		if got := replicas("hello", "web"); got != 4 {
			t.Errorf("replicas %d after a redeploy, want the scale's 4", got)
		}
		env.MustRun(t, "deploy", "hello", "-n", ns, "--image", "nginx:1.28", "--replicas", "2")
		if got := replicas("hello", "web"); got != 2 {
			t.Errorf("replicas %d, want --replicas' 2", got)
		}
	})

	t.Run("replicas another manager set are not taken", func(t *testing.T) {
		env.MustRun(t, "deploy", "cache2", "-n", ns, "--template", "testdata/cache.yaml")
		other := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": schedv1.GroupVersion.String(), "kind": "UserDeployment",
			"metadata": map[string]any{"name": "cache2", "namespace": ns},
			"spec":     map[string]any{"services": []any{map[string]any{"name": "redis", "replicas": int64(7)}}},
		}}
		if err := env.Client.Patch(ctx, other, client.Apply, client.FieldOwner("autoscaler")); err != nil {
			t.Fatal(err)
		}
		env.MustRun(t, "deploy", "cache2", "-n", ns, "--template", "testdata/cache.yaml")
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schedv1.GroupVersion.WithKind("UserDeployment"))
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cache2"}, u); err != nil {
			t.Fatal(err)
		}
		path := []kube.PathElement{kube.Field("spec"), kube.Field("services"), kube.Item("name", "redis"), kube.Field("replicas")}
		if got := replicas("cache2", "redis"); got != 7 || !cmp.Equal(kube.Managers(u, path...), []string{"autoscaler"}) {
			t.Errorf("replicas %d managed by %v, want 7 by the autoscaler alone", got, kube.Managers(u, path...))
		}
	})
}
