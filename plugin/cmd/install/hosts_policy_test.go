package install_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestInstalledHostPolicies: installed with its settings (in another
// namespace, to see the policies follow the operator's ConfigMap there),
// kubectl-sched refuses at apply time, with a message naming the field and
// what to do, a namespace user's app host in another namespace's part of
// the ingress domain, the bare domain, a host outside the domain that the
// namespace's allow-list lacks, or an ingress class not allowed; and plain
// Ingresses and Traefik IngressRoutes that would serve another namespace's
// part of the domain. Uninstall removes the policies.
func TestInstalledHostPolicies(t *testing.T) {
	ctx := context.Background()
	const domain = "apps.example.org"
	// Namespaces of their own: the bare API server never finishes deleting
	// a namespace, and other tests install into the default ones.
	res := runAs(kubeconfig, "install", "--pin-image=false", "-n", "hosts-ops", "--scheduler-namespace", "hosts-schedulers", "--image", "example.com/operator:v0.0.7",
		"--ingress-domain", domain, "--ingress-class", "nginx", "--allowed-ingress-classes", "internal",
		"--allowed-pod-annotation-domains", "example.com,kubectl-sched.dev", "-o", "name")
	if res.Code != 0 {
		t.Fatalf("install: exit %d\n%s", res.Code, res.Stderr)
	}
	t.Cleanup(func() {
		if res := runAs(kubeconfig, "uninstall", "-n", "hosts-ops", "--scheduler-namespace", "hosts-schedulers", "--yes"); res.Code != 0 {
			t.Errorf("uninstall: exit %d\n%s", res.Code, res.Stderr)
		}
		var policies admissionregistrationv1.ValidatingAdmissionPolicyList
		if err := bareClient.List(ctx, &policies); err != nil {
			t.Fatal(err)
		}
		for _, p := range policies.Items {
			if strings.HasPrefix(p.Name, "kubectl-sched-") {
				t.Errorf("policy %s is left after uninstall", p.Name)
			}
		}
	})
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := bareClient.Get(ctx, client.ObjectKey{Name: "kubectl-sched-app-hosts"}, binding); err != nil {
		t.Fatal(err)
	}
	if ref := binding.Spec.ParamRef; ref == nil || ref.Namespace != "hosts-ops" || ref.Name != "kubectl-sched-operator-config" {
		t.Fatalf("the binding's params %+v, want the operator's ConfigMap in hosts-ops", ref)
	}
	// Traefik's IngressRoutes, as a stand-in CRD.
	crds, err := envtest.InstallCRDs(bare.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{ingressRouteCRD()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = envtest.UninstallCRDs(bare.Config, envtest.CRDInstallOptions{CRDs: crds}) })

	suffix := fmt.Sprint(time.Now().UnixNano() % 100000)
	victim, evil := "victim-"+suffix, "evil-"+suffix
	for _, ns := range []string{victim, evil} {
		if err := bareClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	mallory := namespaceUser(t, evil, "mallory-"+suffix)

	app := func(host, class string) *schedv1.UserDeployment {
		return MakeUserDeployment("shop", evil).Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).
			Spec(func(s *schedv1.UserDeploymentSpec) { s.Ingress = &schedv1.IngressSpec{Host: host, ClassName: class} }).Obj()
	}
	ingress := func(ns, host string) *networkingv1.Ingress {
		return &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "front-", Namespace: ns},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "front", Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
			}}}}},
		}
	}
	ingressRoute := func(ns, match string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"routes": []any{
			map[string]any{"kind": "Rule", "match": match, "services": []any{map[string]any{"name": "front", "port": int64(80)}}},
		}}}}
		u.SetAPIVersion("traefik.io/v1alpha1")
		u.SetKind("IngressRoute")
		u.SetGenerateName("front-")
		u.SetNamespace(ns)
		return u
	}

	// The policies take effect asynchronously.
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = mallory.Create(ctx, app("shop."+victim+"."+domain, ""), client.DryRunAll)
		return apierrors.IsForbidden(last), nil
	}); err != nil {
		t.Fatalf("the host policy is not enforced: %v", last)
	}

	refused := map[string]struct {
		obj  client.Object
		want string // in the refusal; "" when allowed
	}{
		"app: another namespace's default host": {obj: app("shop."+victim+"."+domain, ""),
			want: "spec.ingress.host shop." + victim + "." + domain + " is under the ingress domain " + domain + ", where apps of namespace " + evil + " may only route <label>." + evil + "." + domain},
		"app: the bare domain":        {obj: app(domain, ""), want: "spec.ingress.host " + domain + " is under the ingress domain"},
		"app: the namespace only":     {obj: app(evil+"."+domain, ""), want: "may only route <label>." + evil + "." + domain},
		"app: wildcard":               {obj: app("*."+domain, ""), want: "spec.ingress.host"},
		"app: outside, no allow-list": {obj: app("shop.example.net", ""), want: "spec.ingress.host shop.example.net is outside the ingress domain " + domain + " and not in namespace " + evil + "'s allow-list (empty): a cluster admin can add it to the namespace's annotation sched.kubectl-sched.dev/allowed-hosts"},
		"app: class not allowed":      {obj: app("", "public-lb"), want: "spec.ingress.className public-lb is not an ingress class apps may use here (allowed: nginx, internal)"},
		"app: own part of the domain": {obj: app("www."+evil+"."+domain, "")},
		"app: allowed class":          {obj: app("", "internal")},
		"app: the operator's class":   {obj: app("", "nginx")},
		"ingress: another's host":     {obj: ingress(evil, "shop."+victim+"."+domain), want: "hosts under the ingress domain " + domain + " belong to the namespace named right before it"},
		"ingress: the bare domain":    {obj: ingress(evil, domain), want: "in every namespace"},
		"ingress: a wildcard of it":   {obj: ingress(evil, "*."+domain), want: "*." + domain},
		"ingress: another's wildcard": {obj: ingress(evil, "*."+victim+"."+domain), want: "*." + victim + "." + domain},
		"ingress: own wildcard":       {obj: ingress(evil, "*."+evil+"."+domain)},
		"ingress: outside the domain": {obj: ingress(evil, "shop.example.net")},
		"route: another's host":       {obj: ingressRoute(evil, "Host(`www.example.net`) || Host(`shop."+victim+"."+domain+"`)"), want: "shop." + victim + "." + domain},
		"route: a pattern of it":      {obj: ingressRoute(evil, "HostRegexp(`^.+\\.apps\\.example\\.org$`)"), want: "in every namespace"},
		"route: another's, in quotes": {obj: ingressRoute(evil, `Host("shop.`+victim+`.`+domain+`") && PathPrefix("/")`), want: "belong to the namespace named right before it"},
		"route: own part":             {obj: ingressRoute(evil, "Host(`www."+evil+"."+domain+"`) && PathPrefix(`/`)")},
	}
	for name, tc := range refused {
		t.Run(name, func(t *testing.T) {
			err := mallory.Create(ctx, tc.obj.DeepCopyObject().(client.Object), client.DryRunAll)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err = %v, want a refusal saying %q", err, tc.want)
			}
		})
	}

	// The admin's allow-list, which the tenant cannot write, lets the
	// host outside the domain through.
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"sched.kubectl-sched.dev/allowed-hosts":"*.example.net"}}}`))
	if err := mallory.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: evil}}, patch); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant annotating their namespace: err = %v, want forbidden", err)
	}
	if err := bareClient.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: evil}}, patch); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = mallory.Create(ctx, app("shop.example.net", ""), client.DryRunAll)
		return last == nil, nil
	}); err != nil {
		t.Errorf("a host on the namespace's allow-list: %v", last)
	}
	// A cluster admin may route any namespace's part of the domain.
	if err := bareClient.Create(ctx, ingress(evil, "shop."+victim+"."+domain), client.DryRunAll); err != nil {
		t.Errorf("a cluster admin's Ingress: %v", err)
	}

	// The pod annotation domains read the same ConfigMap, so they are tried
	// under this install: the API server stops its informer of a params
	// kind once no policy uses it (an uninstall) and, for ConfigMaps, never
	// starts it again, so a later install's policies would find no params
	// and let everything through.
	t.Run("pod annotation domains", podAnnotationDomains)
}

// namespaceUser binds user to kubectl-sched-edit and to editing Ingresses
// and IngressRoutes in ns (the bare API server aggregates no roles), and
// returns a client acting as them.
func namespaceUser(t *testing.T, ns, user string) client.Client {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "routes", Namespace: ns},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: []string{"get", "list", "create", "update", "delete"}},
			{APIGroups: []string{"traefik.io"}, Resources: []string{"ingressroutes"}, Verbs: []string{"get", "list", "create", "update", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
		},
	}
	if err := bareClient.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "routes", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "routes"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := bareClient.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	c, err := testenv.BindUser(ctx, bareClient, bare.Config, ns, user, "kubectl-sched-edit",
		authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: "userdeployments"},
		authorizationv1.ResourceAttributes{Verb: "create", Group: "networking.k8s.io", Resource: "ingresses"},
		authorizationv1.ResourceAttributes{Verb: "create", Group: "traefik.io", Resource: "ingressroutes"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ingressRouteCRD() *apiextensionsv1.CustomResourceDefinition {
	open := &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "ingressroutes.traefik.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "traefik.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "IngressRoute", ListKind: "IngressRouteList", Plural: "ingressroutes", Singular: "ingressroute"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1alpha1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": *open},
				}},
			}},
		},
	}
}
