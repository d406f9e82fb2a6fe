package install

import (
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-sched/kubectl-sched/api/accounts"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/manifests"
)

const (
	// webhookCertDir is where the operator's container mounts accounts.Secret.
	webhookCertDir = "/var/run/kubectl-sched/webhook"
	webhookPort    = 9443
)

// webhookObjects are the service-accounts webhook's Secret, Service and
// ValidatingWebhookConfiguration in namespace, with pair's certificates;
// pair may be empty (uninstall, which only needs the names).
func webhookObjects(namespace string, pair accounts.Serving) ([]*unstructured.Unstructured, error) {
	labels := map[string]string{"app.kubernetes.io/name": "kubectl-sched-operator", "app.kubernetes.io/part-of": "kubectl-sched"}
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: accounts.Secret, Namespace: namespace, Labels: labels},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: pair.Cert, corev1.TLSPrivateKeyKey: pair.Key, "ca.crt": pair.CA},
	}
	service := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: accounts.Service, Namespace: namespace, Labels: labels},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app.kubernetes.io/name": "kubectl-sched-operator"},
			Ports:    []corev1.ServicePort{{Name: "webhook", Port: 443, TargetPort: intstr.FromString("webhook")}},
		},
	}
	cfg := accounts.Configuration(namespace, admissionregistrationv1.WebhookClientConfig{
		Service:  &admissionregistrationv1.ServiceReference{Namespace: namespace, Name: accounts.Service, Path: ptr.To(accounts.Path), Port: ptr.To[int32](443)},
		CABundle: pair.CA,
	})
	cfg.Labels["app.kubernetes.io/part-of"] = "kubectl-sched"
	var out []*unstructured.Unstructured
	for _, obj := range []runtime.Object{secret, service, cfg} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{Object: m}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		out = append(out, u)
	}
	return out, nil
}

// webhookHosts are the names the API server dials the Service by.
func webhookHosts(namespace string) []string {
	return []string{accounts.Service + "." + namespace + ".svc", accounts.Service + "." + namespace + ".svc.cluster.local"}
}

// addWebhook adds the service-accounts webhook's objects and serves it
// from the operator's Deployment. The installed certificate is kept while
// more than accounts.RenewBefore of it is left, so running install again
// renews it only then; a client dry run makes a new one.
func (o *Options) addWebhook(ctx context.Context, now time.Time) error {
	pair, err := o.installedPair(ctx, now)
	if err != nil {
		return err
	}
	if pair.Cert == nil {
		if pair, err = accounts.NewServing(webhookHosts(o.namespace), now, accounts.CertLifetime); err != nil {
			return fmt.Errorf("make the webhook's certificate: %w", err)
		}
	}
	objs, err := webhookObjects(o.namespace, pair)
	if err != nil {
		return err
	}
	for _, obj := range o.objects {
		if obj.GetKind() == "Deployment" {
			if err := serveWebhook(obj); err != nil {
				return err
			}
		}
	}
	o.objects = append(o.objects, objs...)
	manifests.SortForApply(o.objects)
	return nil
}

// installedPair is the installed certificate while it has more than
// accounts.RenewBefore left and names this namespace's Service; empty
// otherwise.
func (o *Options) installedPair(ctx context.Context, now time.Time) (accounts.Serving, error) {
	if o.DryRun == "client" {
		return accounts.Serving{}, nil
	}
	s, err := o.dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(o.namespace).Get(ctx, accounts.Secret, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		return accounts.Serving{}, nil
	case err != nil:
		return accounts.Serving{}, cmdutil.API(err, "get", fmt.Sprintf("secrets %q", accounts.Secret))
	}
	secret := &corev1.Secret{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(s.Object, secret); err != nil {
		return accounts.Serving{}, nil
	}
	pair := accounts.Serving{CA: secret.Data["ca.crt"], Cert: secret.Data[corev1.TLSCertKey], Key: secret.Data[corev1.TLSPrivateKeyKey]}
	if len(pair.CA) == 0 || len(pair.Key) == 0 || accounts.Check(pair, webhookHosts(o.namespace)[0], now.Add(accounts.RenewBefore)) != nil {
		return accounts.Serving{}, nil
	}
	return pair, nil
}

// serveWebhook has the operator's Deployment serve the webhook with the
// Secret's certificate, which the operator reloads when the kubelet
// updates the mounted files.
func serveWebhook(d *unstructured.Unstructured) error {
	spec, _, err := unstructured.NestedMap(d.Object, "spec", "template", "spec")
	if err != nil {
		return err
	}
	containers, _ := spec["containers"].([]any)
	if len(containers) == 0 {
		return fmt.Errorf("the embedded manifests are broken: the Deployment has no containers")
	}
	c := containers[0].(map[string]any)
	c["args"] = append(c["args"].([]any), "--webhook-cert-dir="+webhookCertDir, fmt.Sprintf("--webhook-port=%d", webhookPort))
	c["ports"] = append(c["ports"].([]any), map[string]any{"name": "webhook", "containerPort": int64(webhookPort)})
	mounts, _ := c["volumeMounts"].([]any)
	c["volumeMounts"] = append(mounts, map[string]any{"name": "webhook-cert", "mountPath": webhookCertDir, "readOnly": true})
	volumes, _ := spec["volumes"].([]any)
	spec["volumes"] = append(volumes, map[string]any{"name": "webhook-cert", "secret": map[string]any{"secretName": accounts.Secret}})
	return unstructured.SetNestedMap(d.Object, spec, "spec", "template", "spec")
}
