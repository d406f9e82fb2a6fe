package doctor

import (
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-sched/kubectl-sched/api/accounts"
)

func TestWebhookStatus(t *testing.T) {
	now := time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)
	host := accounts.Service + ".ops.svc"
	made := func(t *testing.T, at time.Time) (*admissionregistrationv1.ValidatingWebhookConfiguration, *corev1.Secret) {
		pair, err := accounts.NewServing([]string{host}, at, accounts.CertLifetime)
		if err != nil {
			t.Fatal(err)
		}
		cfg := accounts.Configuration("ops", admissionregistrationv1.WebhookClientConfig{CABundle: pair.CA})
		return cfg, &corev1.Secret{Data: map[string][]byte{corev1.TLSCertKey: pair.Cert, corev1.TLSPrivateKeyKey: pair.Key}}
	}
	fresh, freshSecret := made(t, now)
	near, nearSecret := made(t, now.Add(30*24*time.Hour-accounts.CertLifetime))
	gone, goneSecret := made(t, now.Add(-accounts.CertLifetime-time.Hour))
	for name, tc := range map[string]struct {
		cfg    *admissionregistrationv1.ValidatingWebhookConfiguration
		secret *corev1.Secret
		status Status
		msg    string
	}{
		"not installed":               {nil, nil, OK, "not installed (optional"},
		"fresh":                       {fresh, freshSecret, OK, "installed; its certificate expires on 2029-12-07, in 1095 days"},
		"fresh, the Secret forbidden": {fresh, nil, OK, "installed; its CA expires on 2029-12-07"},
		"30 days left":                {near, nearSecret, Warn, "its certificate expires on 2027-01-07, in 30 days"},
		"30 days left, by the CA":     {near, nil, Warn, "its CA expires on 2027-01-07, in 30 days"},
		"expired":                     {gone, goneSecret, Fail, "does not serve the webhook with the configuration's CA"},
		"expired, by the CA":          {gone, nil, Fail, "its CA expired on 2026-12-07"},
		"the Secret not the CA's":     {fresh, nearSecret, Fail, "does not serve the webhook with the configuration's CA"},
	} {
		t.Run(name, func(t *testing.T) {
			got := webhookStatus(tc.cfg, tc.secret, "ops", now)
			if got.Status != tc.status || !strings.Contains(got.Message, tc.msg) {
				t.Errorf("got %s %q, want %s containing %q", got.Status, got.Message, tc.status, tc.msg)
			}
			if (got.Status != OK) != strings.Contains(got.Fix, "install --service-accounts-webhook") {
				t.Errorf("fix %q for status %s", got.Fix, got.Status)
			}
		})
	}
}
