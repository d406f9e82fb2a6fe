package doctor

import (
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-sched/kubectl-sched/api/accounts"
)

const (
	checkWebhook = "webhook"
	fixWebhook   = "kubectl sched install --service-accounts-webhook (makes a new certificate when less than 90 days are left)"
)

// webhook checks the operator's service-accounts webhook: its
// configuration, and how long its certificate has left (the Secret's, or
// the configuration's CA when the Secret may not be read).
func (d *doctor) webhook(ctx context.Context, ns string) Check {
	cfg, err := d.c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, accounts.ConfigurationName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		cfg = nil
	case err != nil:
		return skipped(checkWebhook, err, "get", fmt.Sprintf("validatingwebhookconfigurations.admissionregistration.k8s.io %q", accounts.ConfigurationName))
	}
	var secret *corev1.Secret
	if cfg != nil {
		// Reading it is optional: the CA's expiry is the same.
		if s, err := d.c.Kube.CoreV1().Secrets(ns).Get(ctx, accounts.Secret, metav1.GetOptions{}); err == nil {
			secret = s
		}
	}
	return webhookStatus(cfg, secret, ns, d.now)
}

// webhookStatus: not installed is OK (it is optional); an expired
// certificate, or one the configuration's CA did not sign, FAILs (the
// API server then refuses every Job and AgentTask the operator creates);
// less than accounts.RenewBefore left WARNs.
func webhookStatus(cfg *admissionregistrationv1.ValidatingWebhookConfiguration, secret *corev1.Secret, ns string, now time.Time) Check {
	c := Check{Name: checkWebhook}
	if cfg == nil {
		c.Status, c.Message = OK, "the service-accounts webhook is not installed (optional: install --service-accounts-webhook holds the operator's Jobs and step tasks to their owners' service accounts)"
		return c
	}
	if len(cfg.Webhooks) == 0 {
		c.Status, c.Message, c.Fix = Fail, fmt.Sprintf("ValidatingWebhookConfiguration %s has no webhook", cfg.Name), fixWebhook
		return c
	}
	ca := cfg.Webhooks[0].ClientConfig.CABundle
	pem, what := ca, "its CA"
	if secret != nil {
		pem, what = secret.Data[corev1.TLSCertKey], "its certificate"
		pair := accounts.Serving{CA: ca, Cert: secret.Data[corev1.TLSCertKey], Key: secret.Data[corev1.TLSPrivateKeyKey]}
		if err := accounts.Check(pair, accounts.Service+"."+ns+".svc", now); err != nil {
			c.Status, c.Fix = Fail, fixWebhook
			c.Message = fmt.Sprintf("the certificate in Secret %s/%s does not serve the webhook with the configuration's CA (%v): the API server refuses the operator's Jobs and step tasks", ns, accounts.Secret, err)
			return c
		}
	}
	exp, err := accounts.Expiry(pem)
	if err != nil {
		c.Status, c.Message, c.Fix = Fail, fmt.Sprintf("%s cannot be read: %v", what, err), fixWebhook
		return c
	}
	left := exp.Sub(now)
	switch {
	case left <= 0:
		c.Status, c.Fix = Fail, fixWebhook
		c.Message = fmt.Sprintf("%s expired on %s: the API server refuses the operator's Jobs and step tasks", what, exp.UTC().Format(time.DateOnly))
	case left < accounts.RenewBefore:
		c.Status, c.Fix = Warn, fixWebhook
		c.Message = fmt.Sprintf("%s expires on %s, in %d days", what, exp.UTC().Format(time.DateOnly), int(left.Hours()/24))
	default:
		c.Status = OK
		c.Message = fmt.Sprintf("installed; %s expires on %s, in %d days", what, exp.UTC().Format(time.DateOnly), int(left.Hours()/24))
	}
	return c
}
