package optionalapi_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestOptionalAPIsFoundWithoutRestart starts the operator on a cluster
// without External Secrets, cert-manager or Traefik, with an app that
// needs all three, then installs each project's CRD and, without
// restarting the operator, requires the app to get what the API brings:
// its ExternalSecret (and its service started), its Certificate (and
// https), its IngressRoute (instead of an Ingress). `kubectl sched version`
// says which APIs the operator uses at each step. Then External Secrets
// goes away: the service waits again, the operator keeps working, and it
// comes back when the CRD does.
func TestOptionalAPIsFoundWithoutRestart(t *testing.T) {
	ctx := t.Context()
	kc := kubeconfig(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	crds := map[string]string{
		// The stand-in plugin/cmd/install's key policy test uses too.
		"external-secrets": filepath.Join(root, "plugin", "cmd", "install", "testdata", "external-secrets-crds.yaml"),
		"cert-manager":     filepath.Join("testdata", "cert-manager-crds.yaml"),
		"traefik":          filepath.Join("testdata", "traefik-crds.yaml"),
	}
	install := func(name string) {
		t.Helper()
		if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{crds[name]}, ErrorIfPathMissing: true}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, path := range crds {
			_ = envtest.UninstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{path}})
		}
	})

	ns := testenv.Namespace(t, env.Client)
	host := names.HostPrefix("shop", ns) + ".apps.test"
	if err := env.Client.Create(ctx, MakeUserDeployment("shop", ns).
		Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).
		ExternalSecretRef("db", ns+"/db").Obj()); err != nil {
		t.Fatal(err)
	}
	get := func(ctx context.Context, apiVersion, kind, name string) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		return u, env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u)
	}
	replicas := func(ctx context.Context) (int32, error) {
		dep := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop-web"}, dep); err != nil {
			return 0, err
		}
		return *dep.Spec.Replicas, nil
	}
	// app waits until the app's status for its current spec passes cond.
	app := func(what string, cond func(*schedv1.UserDeployment) error) *schedv1.UserDeployment {
		t.Helper()
		ud := &schedv1.UserDeployment{}
		testenv.EventuallyWithin(t, testenv.Timeout, "the app "+what, func(ctx context.Context) error {
			if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop"}, ud); err != nil {
				return err
			}
			if ud.Status.ObservedGeneration != ud.Generation {
				return fmt.Errorf("status of generation %d, want %d", ud.Status.ObservedGeneration, ud.Generation)
			}
			return cond(ud)
		})
		return ud
	}
	waitsForExternalSecrets := func(ud *schedv1.UserDeployment) error {
		c := condition(ud, schedv1.ConditionDegraded)
		if c.Reason != schedv1.ReasonExternalSecretsUnavailable || !strings.Contains(c.Message, "does not serve external-secrets.io/v1 ExternalSecrets") {
			return fmt.Errorf("Degraded %+v, want ExternalSecretsUnavailable", c)
		}
		return nil
	}

	// Nothing installed: the service that needs the secret waits, the app
	// gets an Ingress and says it waits for cert-manager.
	app("waiting for External Secrets and cert-manager", func(ud *schedv1.UserDeployment) error {
		if err := waitsForExternalSecrets(ud); err != nil {
			return err
		}
		if c := condition(ud, schedv1.ConditionCertificateReady); c.Reason != schedv1.ReasonCertificateNotRequested || !strings.Contains(c.Message, "once cert-manager is installed") {
			return fmt.Errorf("CertificateReady %+v, want CertificateNotRequested waiting for cert-manager", c)
		}
		return nil
	})
	if n, err := replicas(ctx); err != nil || n != 0 {
		t.Errorf("shop-web replicas %d (%v), want 0 without its secret", n, err)
	}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop"}, &networkingv1.Ingress{}); err != nil {
		t.Errorf("no Ingress while Traefik is not installed: %v", err)
	}
	versionSays(t, kc,
		"External Secrets (external-secrets.io/v1 ExternalSecret): not installed; no CustomResourceDefinition externalsecrets.external-secrets.io",
		"cert-manager (cert-manager.io/v1 Certificate): not installed; no CustomResourceDefinition certificates.cert-manager.io; public apps get no certificate from --cluster-issuer letsencrypt",
		"Traefik (traefik.io/v1alpha1 IngressRoute): not installed; no CustomResourceDefinition ingressroutes.traefik.io; public services get Ingresses")

	// External Secrets: the ExternalSecret appears and the service starts.
	install("external-secrets")
	testenv.EventuallyWithin(t, testenv.Timeout, "the ExternalSecret and the service started", func(ctx context.Context) error {
		es, err := get(ctx, "external-secrets.io/v1", "ExternalSecret", "shop-db")
		if err != nil {
			return err
		}
		if store, _, _ := unstructured.NestedString(es.Object, "spec", "secretStoreRef", "name"); store != "vault" {
			return fmt.Errorf("ExternalSecret store %q, want vault", store)
		}
		if n, err := replicas(ctx); err != nil || n != 1 {
			return fmt.Errorf("shop-web replicas %d (%v), want 1", n, err)
		}
		return nil
	})
	app("no longer waiting for External Secrets", func(ud *schedv1.UserDeployment) error {
		if c := condition(ud, schedv1.ConditionDegraded); c.Reason == schedv1.ReasonExternalSecretsUnavailable {
			return fmt.Errorf("still %+v", c)
		}
		return nil
	})

	// cert-manager: a Certificate, served by the route; the URL is https.
	install("cert-manager")
	testenv.EventuallyWithin(t, testenv.Timeout, "the Certificate", func(ctx context.Context) error {
		cert, err := get(ctx, "cert-manager.io/v1", "Certificate", "shop")
		if err != nil {
			return err
		}
		if issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name"); issuer != "letsencrypt" {
			return fmt.Errorf("Certificate issuer %q", issuer)
		}
		return nil
	})
	app("served over https", func(ud *schedv1.UserDeployment) error {
		if want := "https://" + host + "/"; len(ud.Status.URLs) != 1 || ud.Status.URLs[0] != want {
			return fmt.Errorf("urls %v, want %s", ud.Status.URLs, want)
		}
		if c := condition(ud, schedv1.ConditionCertificateReady); c.Reason != schedv1.ReasonCertificatePending {
			return fmt.Errorf("CertificateReady %+v, want CertificatePending", c)
		}
		return nil
	})

	// Traefik: an IngressRoute replaces the Ingress.
	install("traefik")
	testenv.EventuallyWithin(t, testenv.Timeout, "an IngressRoute instead of the Ingress", func(ctx context.Context) error {
		route, err := get(ctx, "traefik.io/v1alpha1", "IngressRoute", "shop")
		if err != nil {
			return err
		}
		if secret, _, _ := unstructured.NestedString(route.Object, "spec", "tls", "secretName"); secret != names.TLSSecret("shop") {
			return fmt.Errorf("IngressRoute TLS secret %q, want the Certificate's", secret)
		}
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop"}, &networkingv1.Ingress{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the Ingress is still there: %v", err)
		}
		return nil
	})
	out := versionSays(t, kc,
		"External Secrets (external-secrets.io/v1 ExternalSecret): in use; apps' external secrets come from ClusterSecretStore vault",
		"cert-manager (cert-manager.io/v1 Certificate): in use; public apps get certificates from ClusterIssuer letsencrypt",
		"Traefik (traefik.io/v1alpha1 IngressRoute): in use; public services get IngressRoutes")
	t.Logf("kubectl sched version:\n%s", out)

	// External Secrets goes: its objects go with its CRD, the service waits
	// again, and the operator keeps reconciling.
	if err := envtest.UninstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{crds["external-secrets"]}}); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyWithin(t, testenv.Timeout, "External Secrets' CRDs gone", func(ctx context.Context) error {
		crd := &metav1.PartialObjectMetadata{}
		crd.SetGroupVersionKind(apiextensionsCRD)
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "externalsecrets.external-secrets.io"}, crd); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	update(t, ns, func(s *schedv1.UserDeploymentSpec) { s.Services[0].Image = "nginx:1.28" })
	app("waiting for External Secrets again", waitsForExternalSecrets)
	if n, err := replicas(ctx); err != nil || n != 0 {
		t.Errorf("shop-web replicas %d (%v), want 0 without External Secrets", n, err)
	}
	versionSays(t, kc, "External Secrets (external-secrets.io/v1 ExternalSecret): not installed; no CustomResourceDefinition externalsecrets.external-secrets.io")

	// And back.
	install("external-secrets")
	testenv.EventuallyWithin(t, testenv.Timeout, "the ExternalSecret again and the service started", func(ctx context.Context) error {
		if _, err := get(ctx, "external-secrets.io/v1", "ExternalSecret", "shop-db"); err != nil {
			return err
		}
		if n, err := replicas(ctx); err != nil || n != 1 {
			return fmt.Errorf("shop-web replicas %d (%v), want 1", n, err)
		}
		return nil
	})
	versionSays(t, kc, "External Secrets (external-secrets.io/v1 ExternalSecret): in use")

	// A restart with all three served uses them from its first reconcile:
	// the app's objects stay as they are (planned without External Secrets
	// for a moment, the Deployment would be scaled to zero and back).
	dep := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop-web"}, dep); err != nil {
		t.Fatal(err)
	}
	// Counters outlive a manager in one process.
	before, err := reconciles()
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := op.Start(nil); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyWithin(t, testenv.Timeout, "the restarted operator's first reconcile of the app", func(context.Context) error {
		n, err := reconciles()
		if err == nil && n <= before {
			err = fmt.Errorf("%d reconciles, %d before the restart", n, before)
		}
		return err
	})
	after := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), after); err != nil {
		t.Fatal(err)
	}
	if after.Generation != dep.Generation || *after.Spec.Replicas != 1 {
		t.Errorf("shop-web generation %d -> %d, replicas %d: the restarted operator changed it", dep.Generation, after.Generation, *after.Spec.Replicas)
	}
}

var apiextensionsCRD = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// condition is ud's condition of type typ, or the zero condition.
func condition(ud *schedv1.UserDeployment, typ string) metav1.Condition {
	for _, c := range ud.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// update changes the app's spec, retrying on conflicts.
func update(t *testing.T, ns string, f func(*schedv1.UserDeploymentSpec)) {
	t.Helper()
	testenv.EventuallyWithin(t, testenv.Timeout, "the app's update", func(ctx context.Context) error {
		ud := &schedv1.UserDeployment{}
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop"}, ud); err != nil {
			return err
		}
		f(&ud.Spec)
		return env.Client.Update(ctx, ud)
	})
}
