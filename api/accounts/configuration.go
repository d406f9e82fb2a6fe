// Package accounts names the operator's service-accounts webhook
// (operator/accounts) and makes what install needs for it: its
// ValidatingWebhookConfiguration and a CA and serving certificate.
package accounts

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

const (
	// Path is where the operator's webhook server serves the webhook.
	Path = "/validate-service-accounts"
	// Secret holds the webhook's CA and serving certificate in the
	// operator's namespace.
	Secret = "kubectl-sched-operator-webhook-cert"
	// Service is in front of the operator's pods, for the API server.
	Service = "kubectl-sched-operator-webhook"
	// ConfigurationName is the ValidatingWebhookConfiguration install makes.
	ConfigurationName = "kubectl-sched-operator-accounts"
	// WebhookName is the webhook's name in it, which the API server puts
	// in front of every refusal.
	WebhookName = "service-accounts.sched.kubectl-sched.dev"
	// TimeoutSeconds bounds how long the API server waits for the webhook.
	// Only the operator's own requests wait on it, and it answers from the
	// operator's cache alone, so 5 s is far above its answer; a hung
	// operator then fails its own create in 5 s, which it retries, rather
	// than the API server's 10 s default.
	TimeoutSeconds = 5
)

// Username is the user the operator's service account in namespace
// authenticates as.
func Username(namespace string) string {
	return fmt.Sprintf("system:serviceaccount:%s:%s", namespace, schedv1.OperatorServiceAccount)
}

// Configuration is the ValidatingWebhookConfiguration that sends the
// creates and updates of Jobs, AgentTasks and Workflows made by the operator's
// service account in operatorNamespace (matchConditions: nobody else's
// request waits on it) to the webhook at client. failurePolicy Fail: only
// the operator calls it, and when the operator is down it creates
// nothing anyway. No objectSelector or namespaceSelector: a token that
// left the operator's label off must still be checked.
func Configuration(operatorNamespace string, client admissionregistrationv1.WebhookClientConfig) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   ConfigurationName,
			Labels: map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue},
		},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    WebhookName,
			ClientConfig:            client,
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			TimeoutSeconds:          ptr.To[int32](TimeoutSeconds),
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "operator-only",
				Expression: fmt.Sprintf("request.userInfo.username == '%s'", Username(operatorNamespace)),
			}},
			Rules: []admissionregistrationv1.RuleWithOperations{
				rule("batch", "jobs"),
				rule(schedv1.GroupVersion.Group, "agenttasks"),
				rule(schedv1.GroupVersion.Group, "workflows"),
			},
		}},
	}
}

func rule(group, resource string) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{group},
			APIVersions: []string{"*"},
			Resources:   []string{resource},
			Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
		},
	}
}
