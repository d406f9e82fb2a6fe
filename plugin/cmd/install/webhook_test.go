package install_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/accounts"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
)

// TestInstallServiceAccountsWebhook installs the operator with
// --service-accounts-webhook: a CA and serving certificate for the
// Service's name in a Secret the Deployment mounts, the Service, and the
// webhook configuration trusting the CA. Installing again keeps a
// certificate with more than accounts.RenewBefore left and renews one
// with less; uninstall removes them.
func TestInstallServiceAccountsWebhook(t *testing.T) {
	ctx := context.Background()
	const ns = "hooks"
	host := accounts.Service + "." + ns + ".svc"
	install := func(t *testing.T, args ...string) {
		t.Helper()
		res := runAs(kubeconfig, append([]string{"install", "--pin-image=false", "-n", ns, "--image", "example.com/operator:v0.0.7", "--service-accounts-webhook", "-o", "name",
			// Not the default one: an earlier test's uninstall left it terminating
			// (envtest runs no namespace controller).
			"--scheduler-namespace", "hooks-schedulers"}, args...)...)
		if res.Code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.Code, res.Stdout, res.Stderr)
		}
	}
	installed := func(t *testing.T) (accounts.Serving, *admissionregistrationv1.ValidatingWebhookConfiguration) {
		t.Helper()
		s := &corev1.Secret{}
		if err := bareClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: accounts.Secret}, s); err != nil {
			t.Fatal(err)
		}
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := bareClient.Get(ctx, client.ObjectKey{Name: accounts.ConfigurationName}, cfg); err != nil {
			t.Fatal(err)
		}
		return accounts.Serving{CA: s.Data["ca.crt"], Cert: s.Data[corev1.TLSCertKey], Key: s.Data[corev1.TLSPrivateKeyKey]}, cfg
	}

	t.Run("client dry run", func(t *testing.T) {
		res := plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "-o", "name", "--service-accounts-webhook")
		for _, want := range []string{"secret/" + accounts.Secret, "service/" + accounts.Service, "validatingwebhookconfiguration.admissionregistration.k8s.io/" + accounts.ConfigurationName} {
			if !strings.Contains(res.Stdout, want+"\n") {
				t.Errorf("lacks %s:\n%s", want, res.Stdout)
			}
		}
		res = plugintest.RunWithInput("", "install", "--pin-image=false", "--dry-run=client", "--service-accounts-webhook", "--without-operator")
		if res.Code == 0 || !strings.Contains(res.Stderr, "--service-accounts-webhook is served by the operator's Deployment, which --without-operator leaves out") {
			t.Errorf("exit %d, stderr:\n%s", res.Code, res.Stderr)
		}
	})

	install(t)
	pair, cfg := installed(t)
	t.Run("installed", func(t *testing.T) {
		if err := accounts.Check(pair, host, time.Now().Add(accounts.CertLifetime-24*time.Hour)); err != nil {
			t.Errorf("the certificate cannot serve %s for its lifetime: %v", host, err)
		}
		hook := cfg.Webhooks[0]
		if string(hook.ClientConfig.CABundle) != string(pair.CA) || hook.ClientConfig.Service == nil || hook.ClientConfig.Service.Name != accounts.Service ||
			hook.ClientConfig.Service.Namespace != ns || *hook.ClientConfig.Service.Path != accounts.Path {
			t.Errorf("the configuration does not send to the Service with the Secret's CA: %+v", hook.ClientConfig)
		}
		if want := "request.userInfo.username == 'system:serviceaccount:hooks:kubectl-sched-operator'"; len(hook.MatchConditions) != 1 || hook.MatchConditions[0].Expression != want {
			t.Errorf("matchConditions %+v, want only %s", hook.MatchConditions, want)
		}
		d := &appsv1.Deployment{}
		if err := bareClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kubectl-sched-operator"}, d); err != nil {
			t.Fatal(err)
		}
		pod := d.Spec.Template.Spec
		if len(pod.Volumes) == 0 || pod.Volumes[len(pod.Volumes)-1].Secret == nil || pod.Volumes[len(pod.Volumes)-1].Secret.SecretName != accounts.Secret ||
			!strings.Contains(strings.Join(pod.Containers[0].Args, " "), "--webhook-cert-dir=") {
			t.Errorf("the operator does not serve the Secret's certificate: volumes %+v, args %v", pod.Volumes, pod.Containers[0].Args)
		}
		if err := bareClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: accounts.Service}, &corev1.Service{}); err != nil {
			t.Error(err)
		}
	})

	t.Run("installing again keeps the certificate", func(t *testing.T) {
		install(t)
		again, _ := installed(t)
		if string(again.Cert) != string(pair.Cert) || string(again.CA) != string(pair.CA) {
			t.Error("a certificate with years left was replaced")
		}
	})

	t.Run("installing again renews a certificate near its end", func(t *testing.T) {
		// Made so that 30 days are left.
		old, err := accounts.NewServing([]string{host}, time.Now().Add(30*24*time.Hour-accounts.CertLifetime), accounts.CertLifetime)
		if err != nil {
			t.Fatal(err)
		}
		s := &corev1.Secret{}
		if err := bareClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: accounts.Secret}, s); err != nil {
			t.Fatal(err)
		}
		s.Data = map[string][]byte{"ca.crt": old.CA, corev1.TLSCertKey: old.Cert, corev1.TLSPrivateKeyKey: old.Key}
		if err := bareClient.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
		install(t)
		renewed, cfg := installed(t)
		if string(renewed.Cert) == string(old.Cert) {
			t.Fatal("a certificate with 30 days left was kept")
		}
		if err := accounts.Check(renewed, host, time.Now().Add(accounts.CertLifetime-24*time.Hour)); err != nil {
			t.Errorf("the renewed certificate: %v", err)
		}
		if string(cfg.Webhooks[0].ClientConfig.CABundle) != string(renewed.CA) {
			t.Error("the configuration does not trust the renewed CA")
		}
	})

	t.Run("uninstall removes them", func(t *testing.T) {
		res := runAs(kubeconfig, "uninstall", "--yes", "-n", ns, "--scheduler-namespace", "hooks-schedulers")
		if res.Code != 0 {
			t.Fatalf("exit %d\nstderr:\n%s", res.Code, res.Stderr)
		}
		for _, obj := range []client.Object{
			&admissionregistrationv1.ValidatingWebhookConfiguration{}, &corev1.Secret{}, &corev1.Service{},
		} {
			key := client.ObjectKey{Namespace: ns, Name: accounts.Secret}
			switch obj.(type) {
			case *admissionregistrationv1.ValidatingWebhookConfiguration:
				key = client.ObjectKey{Name: accounts.ConfigurationName}
			case *corev1.Service:
				key.Name = accounts.Service
			}
			if err := bareClient.Get(ctx, key, obj); !apierrors.IsNotFound(err) {
				t.Errorf("%T %s left after uninstall (%v)", obj, key, err)
			}
		}
	})
}
