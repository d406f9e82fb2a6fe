package userdeployment_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// The attacks here run as namespace users (impersonated), with no
// admission policy reading the operator's settings: the policies' params
// (the operator's ConfigMap) do not exist in this cluster, so what is
// tested is the operator's own refusal. plugin/cmd/install tests the
// policies as installed.

// tenantClient acts as user, who may only edit kubectl-sched objects in ns
// (kubectl-sched-edit, as the built-in edit role carries it).
func tenantClient(t *testing.T, ns, user string) client.Client {
	t.Helper()
	c, err := testenv.BindUser(t.Context(), sim.Client, sim.Config, ns, user, "kubectl-sched-edit",
		authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: "userdeployments"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tenantNamespace creates a namespace role-<n> for one test.
func tenantNamespace(t *testing.T, role string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", role, time.Now().UnixNano()%10000000)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	create(t, ns)
	t.Cleanup(func() { _ = sim.Client.Delete(context.Background(), ns) })
	testenv.EventuallyWithin(t, testenv.Timeout, "the default ServiceAccount", func(ctx context.Context) error {
		return sim.Client.Get(ctx, types.NamespacedName{Namespace: name, Name: "default"}, &corev1.ServiceAccount{})
	})
	return name
}

// allowHosts sets a namespace's allow-list as a cluster admin.
func allowHosts(t *testing.T, ns, list string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, schedv1.AnnotationAllowedHosts, list)
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := sim.Client.Patch(t.Context(), obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

func publicApp(name, ns, host string) *schedv1.UserDeployment {
	w := MakeUserDeployment(name, ns).Service("web", "nginx:1.27", 80, schedv1.ExposurePublic)
	if host != "" {
		w = w.Ingress(host)
	}
	return w.Obj()
}

// waitWithheld waits until the app is Degraded by reason with a message
// holding each of want, and checks that it has no route: no URL, no
// Ingress, IngressRoute or Certificate.
func waitWithheld(t *testing.T, ns, name, reason string, want ...string) {
	t.Helper()
	ud := waitUD(t, ns, name, "Degraded by "+reason, func(ud *schedv1.UserDeployment) bool {
		return phase(schedv1.UserDeploymentDegraded)(ud) && condition(ud, schedv1.ConditionDegraded).Reason == reason
	})
	msg := condition(ud, schedv1.ConditionDegraded).Message
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("Degraded message %q does not say %q", msg, w)
		}
	}
	if len(ud.Status.URLs) != 0 {
		t.Errorf("URLs %v for a host the app may not route", ud.Status.URLs)
	}
	noRoute(t, ns, name)
}

// noRoute checks that the app has no Ingress, IngressRoute or Certificate.
func noRoute(t *testing.T, ns, name string) {
	t.Helper()
	key := types.NamespacedName{Namespace: ns, Name: name}
	if err := sim.Client.Get(t.Context(), key, &networkingv1.Ingress{}); !apierrors.IsNotFound(err) {
		t.Errorf("Ingress %s: err = %v, want not found", key, err)
	}
	for _, gvk := range [][2]string{{"traefik.io/v1alpha1", "IngressRoute"}, {"cert-manager.io/v1", "Certificate"}} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(gvk[0])
		u.SetKind(gvk[1])
		if err := sim.Client.Get(t.Context(), key, u); !apierrors.IsNotFound(err) {
			t.Errorf("%s %s: err = %v, want not found", gvk[1], key, err)
		}
	}
}

// waitRouted waits until the app is Running at host and its Ingress
// routes host.
func waitRouted(t *testing.T, ns, name, host string) {
	t.Helper()
	waitUD(t, ns, name, "Running at "+host, func(ud *schedv1.UserDeployment) bool {
		return phase(schedv1.UserDeploymentRunning)(ud) && len(ud.Status.URLs) == 1 && strings.HasPrefix(ud.Status.URLs[0], "http://"+host+"/")
	})
	testenv.EventuallyWithin(t, testenv.Timeout, "the Ingress of "+name+" for "+host, func(ctx context.Context) error {
		ing := &networkingv1.Ingress{}
		if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ing); err != nil {
			return err
		}
		if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != host {
			return fmt.Errorf("rules %+v", ing.Spec.Rules)
		}
		return nil
	})
}

// TestTenantCannotTakeAnotherNamespacesDefaultHost: a tenant of namespace
// evil who names the default host of an app of namespace victim before
// that app exists gets no route and HostNotAllowed; the victim's app,
// created later, gets its own default host.
func TestTenantCannotTakeAnotherNamespacesDefaultHost(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	victimNS, evilNS := tenantNamespace(t, "victim"), tenantNamespace(t, "evil")
	mallory, vicky := tenantClient(t, evilNS, "mallory"), tenantClient(t, victimNS, "vicky")
	host := names.HostPrefix("shop", victimNS) + ".apps.test"

	if err := mallory.Create(ctx, publicApp("grab", evilNS, host)); err != nil {
		t.Fatal(err)
	}
	waitWithheld(t, evilNS, "grab", schedv1.ReasonHostNotAllowed, "host "+host, "may only route <label>."+evilNS+".apps.test")

	if err := vicky.Create(ctx, publicApp("shop", victimNS, "")); err != nil {
		t.Fatal(err)
	}
	waitRouted(t, victimNS, "shop", host)
	waitWithheld(t, evilNS, "grab", schedv1.ReasonHostNotAllowed)
}

// TestTenantCannotClaimTheApexOrAWildcard: wildcards, IP addresses and
// single labels are refused by the API; the bare ingress domain, and a
// host naming only the namespace, get no route.
func TestTenantCannotClaimTheApexOrAWildcard(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	evilNS := tenantNamespace(t, "evil")
	mallory := tenantClient(t, evilNS, "mallory")
	for _, host := range []string{"*.apps.test", "*." + evilNS + ".apps.test", "*", "10.0.0.1", "localhost"} {
		err := mallory.Create(ctx, publicApp("wild", evilNS, host))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.ingress.host") {
			t.Errorf("host %q: err = %v, want invalid naming spec.ingress.host", host, err)
		}
	}
	for name, host := range map[string]string{"apex": "apps.test", "ns-only": evilNS + ".apps.test", "deep": "a.b." + evilNS + ".apps.test"} {
		if err := mallory.Create(ctx, publicApp(name, evilNS, host)); err != nil {
			t.Fatal(err)
		}
		waitWithheld(t, evilNS, name, schedv1.ReasonHostNotAllowed, "host "+host+" is under the ingress domain apps.test")
	}
}

// TestHostOutsideTheDomainNeedsTheAllowList: a host outside the ingress
// domain is routed only while the namespace's allow-list, which its users
// cannot change, covers it.
func TestHostOutsideTheDomainNeedsTheAllowList(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	evilNS := tenantNamespace(t, "evil")
	mallory := tenantClient(t, evilNS, "mallory")
	host := "shop." + evilNS + ".example.org"
	if err := mallory.Create(ctx, publicApp("site", evilNS, host)); err != nil {
		t.Fatal(err)
	}
	waitWithheld(t, evilNS, "site", schedv1.ReasonHostNotAllowed, "host "+host+" is outside the ingress domain", "allow-list (empty)", schedv1.AnnotationAllowedHosts)

	// Not even the namespace's admin may write the allow-list.
	admin, err := testenv.BindUser(ctx, sim.Client, sim.Config, evilNS, "mallory-admin", "admin",
		authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: "userdeployments"})
	if err != nil {
		t.Fatal(err)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:"*.example.org"}}}`, schedv1.AnnotationAllowedHosts)))
	if err := admin.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: evilNS}}, patch); !apierrors.IsForbidden(err) {
		t.Errorf("namespace admin annotating their namespace: err = %v, want forbidden", err)
	}

	allowHosts(t, evilNS, "*."+evilNS+".example.org")
	waitRouted(t, evilNS, "site", host)

	allowHosts(t, evilNS, "www."+evilNS+".example.org")
	waitWithheld(t, evilNS, "site", schedv1.ReasonHostNotAllowed, "allow-list (www."+evilNS+".example.org)")
}

// TestNoRouteOnAHostAnotherNamespaceServes: an app never gets a route on a
// host that an Ingress or IngressRoute of another namespace serves
// (exactly, by wildcard, or by host regular expression), whoever made it,
// and gets it once that route goes. A route that appears after the app's
// does not take the host back. The app's own namespace may share a host.
func TestNoRouteOnAHostAnotherNamespaceServes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	otherNS, evilNS := tenantNamespace(t, "other"), tenantNamespace(t, "evil")
	domain := otherNS + ".example"
	allowHosts(t, evilNS, "*."+domain)
	olive, err := testenv.BindUser(ctx, sim.Client, sim.Config, otherNS, "olive", "edit",
		authorizationv1.ResourceAttributes{Verb: "create", Group: "networking.k8s.io", Resource: "ingresses"})
	if err != nil {
		t.Fatal(err)
	}
	mallory := tenantClient(t, evilNS, "mallory")
	ingress := func(ns, name, host string) *networkingv1.Ingress {
		return &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "front", Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
			}}}}},
		}
	}
	front := ingress(otherNS, "front", "www."+domain) // by the namespace's own user
	if err := olive.Create(ctx, front); err != nil {
		t.Fatal(err)
	}
	create(t, ingress(otherNS, "wild", "*.wild."+domain)) // by a cluster admin
	route := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"routes": []any{
		map[string]any{"kind": "Rule", "match": "Host(`tr." + domain + "`) && PathPrefix(`/x`)"},
		map[string]any{"kind": "Rule", "match": "HostRegexp(`^[a-z]+\\.re\\." + strings.ReplaceAll(domain, ".", `\.`) + "$`)"},
	}}}}
	route.SetAPIVersion("traefik.io/v1alpha1")
	route.SetKind("IngressRoute")
	route.SetName("tr")
	route.SetNamespace(otherNS)
	create(t, route)
	create(t, ingress(evilNS, "mine", "own."+domain)) // in the app's own namespace

	held := map[string]struct{ host, holder string }{
		"exact":    {"www." + domain, "Ingress " + otherNS + "/front"},
		"wildcard": {"x.wild." + domain, "Ingress " + otherNS + "/wild"},
		"traefik":  {"tr." + domain, "IngressRoute " + otherNS + "/tr"},
		"regexp":   {"abc.re." + domain, "IngressRoute " + otherNS + "/tr"},
	}
	for name, c := range held {
		// Any path: the host is what is held.
		app := MakeUserDeployment(name, evilNS).Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).
			Spec(func(s *schedv1.UserDeploymentSpec) { s.Ingress = &schedv1.IngressSpec{Host: c.host, Path: "/evil"} }).Obj()
		if err := mallory.Create(ctx, app); err != nil {
			t.Fatal(err)
		}
	}
	for name, c := range held {
		waitWithheld(t, evilNS, name, schedv1.ReasonHostConflict, "host "+c.host+" is held by "+c.holder)
	}
	if err := mallory.Create(ctx, publicApp("own", evilNS, "own."+domain)); err != nil {
		t.Fatal(err)
	}
	waitRouted(t, evilNS, "own", "own."+domain)

	// The holder goes: the host passes to the app.
	if err := olive.Delete(ctx, front); err != nil {
		t.Fatal(err)
	}
	waitUD(t, evilNS, "exact", "Running at www."+domain, func(ud *schedv1.UserDeployment) bool {
		return phase(schedv1.UserDeploymentRunning)(ud) && len(ud.Status.URLs) == 1 && ud.Status.URLs[0] == "http://www."+domain+"/evil"
	})

	// A route made later does not take it back.
	late := ingress(otherNS, "late", "www."+domain)
	if err := olive.Create(ctx, late); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyWithin(t, testenv.Timeout, "a spec change of the app", func(ctx context.Context) error {
		ud := &schedv1.UserDeployment{}
		if err := mallory.Get(ctx, types.NamespacedName{Namespace: evilNS, Name: "exact"}, ud); err != nil {
			return err
		}
		ud.Spec.Services[0].Replicas = ptr.To[int32](2)
		return mallory.Update(ctx, ud)
	})
	ud := waitUD(t, evilNS, "exact", "observed with 2 replicas", func(ud *schedv1.UserDeployment) bool {
		return ud.Status.ObservedGeneration == ud.Generation && ud.Generation > 1
	})
	if c := condition(ud, schedv1.ConditionDegraded); c.Reason == schedv1.ReasonHostConflict || len(ud.Status.URLs) != 1 {
		t.Errorf("the app lost its host to a later route: URLs %v, Degraded %+v", ud.Status.URLs, c)
	}
}

// TestOldestAppHoldsAnAllowedHost: two namespaces allowed the same host
// outside the domain: the first app holds it, the second is Degraded by
// HostConflict naming the holder, and gets it when the holder goes.
func TestOldestAppHoldsAnAllowedHost(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	firstNS, secondNS := tenantNamespace(t, "first"), tenantNamespace(t, "second")
	host := "shared." + firstNS + ".example.net"
	allowHosts(t, firstNS, host)
	allowHosts(t, secondNS, "*."+firstNS+".example.net")
	create(t, publicApp("shop", firstNS, host))
	waitRouted(t, firstNS, "shop", host)

	if err := tenantClient(t, secondNS, "sam").Create(ctx, publicApp("grab", secondNS, host)); err != nil {
		t.Fatal(err)
	}
	waitWithheld(t, secondNS, "grab", schedv1.ReasonHostConflict, "host "+host+" is held by app "+firstNS+"/shop")

	// The holder loses its allow-list: the host passes on.
	allowHosts(t, firstNS, "")
	waitWithheld(t, firstNS, "shop", schedv1.ReasonHostNotAllowed)
	waitRouted(t, secondNS, "grab", host)
}

// TestIngressClassMustBeAllowed: an app may name only the operator's
// ingress class or one the admin allowed (nginx and internal here).
func TestIngressClassMustBeAllowed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	evilNS := tenantNamespace(t, "evil")
	mallory := tenantClient(t, evilNS, "mallory")
	app := MakeUserDeployment("cls", evilNS).Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).
		Spec(func(s *schedv1.UserDeploymentSpec) { s.Ingress = &schedv1.IngressSpec{ClassName: "public-lb"} }).Obj()
	if err := mallory.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	waitWithheld(t, evilNS, "cls", schedv1.ReasonIngressClassNotAllowed, `spec.ingress.className "public-lb" is not an ingress class apps may use here (allowed: nginx, internal)`)

	testenv.EventuallyWithin(t, testenv.Timeout, "the class change", func(ctx context.Context) error {
		ud := &schedv1.UserDeployment{}
		if err := mallory.Get(ctx, types.NamespacedName{Namespace: evilNS, Name: "cls"}, ud); err != nil {
			return err
		}
		ud.Spec.Ingress.ClassName = "internal"
		return mallory.Update(ctx, ud)
	})
	waitRouted(t, evilNS, "cls", names.HostPrefix("cls", evilNS)+".apps.test")
	ing := &networkingv1.Ingress{}
	if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: evilNS, Name: "cls"}, ing); err != nil || ptr.Deref(ing.Spec.IngressClassName, "") != "internal" {
		t.Errorf("Ingress class %v (%v), want internal", ing.Spec.IngressClassName, err)
	}
}
