package userdeployment

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// BenchmarkRouteCacheMemory prints what the cache of every Ingress and
// IngressRoute costs per object: a typical one of another team (labels,
// annotations, two hosts with paths, TLS), stored as the informer stores it
// with the host index, trimmed by trimRoute and, for comparison, whole.
func BenchmarkRouteCacheMemory(b *testing.B) {
	const n = 5000
	whole := func(o any) (any, error) { return o, nil }
	for _, tc := range []struct {
		name      string
		object    func(int) any
		transform func(any) (any, error)
	}{
		{"Ingress trimmed", func(i int) any { return typicalIngress(i) }, trimRoute},
		{"Ingress whole", func(i int) any { return typicalIngress(i) }, whole},
		{"IngressRoute trimmed", func(i int) any { return typicalIngressRoute(i) }, trimRoute},
		{"IngressRoute whole", func(i int) any { return typicalIngressRoute(i) }, whole},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var perObject float64
			for b.Loop() {
				before := heapInUse()
				store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{indexRouteHost: routeIndexFunc})
				for i := range n {
					obj, err := tc.transform(tc.object(i))
					if err != nil {
						b.Fatal(err)
					}
					if err := store.Add(obj); err != nil {
						b.Fatal(err)
					}
				}
				perObject = float64(heapInUse()-before) / n
				runtime.KeepAlive(store)
			}
			fmt.Printf("route cache, %s: %.2f KiB per cached object (%d objects, host index included)\n", tc.name, perObject/1024, n)
			b.ReportMetric(perObject/1024, "KiB/object")
		})
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func typicalIngress(i int) *networkingv1.Ingress {
	ns := fmt.Sprintf("team-%d", i%50)
	host := fmt.Sprintf("svc-%d.example.com", i)
	path := func(p string) networkingv1.HTTPIngressPath {
		return networkingv1.HTTPIngressPath{Path: p, PathType: ptr.To(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: fmt.Sprintf("svc-%d", i), Port: networkingv1.ServiceBackendPort{Number: 8080}}}}
	}
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("svc-%d", i), Namespace: ns, UID: types.UID(fmt.Sprintf("0000-%032d", i)), ResourceVersion: fmt.Sprint(100000 + i),
			Labels: map[string]string{"app.kubernetes.io/name": "svc", "app.kubernetes.io/instance": fmt.Sprintf("svc-%d", i), "team": ns},
			Annotations: map[string]string{
				"nginx.ingress.kubernetes.io/proxy-body-size":      "10m",
				"cert-manager.io/cluster-issuer":                   "letsencrypt",
				"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 900),
			},
		},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To("nginx"),
			TLS:              []networkingv1.IngressTLS{{Hosts: []string{host, "www." + host}, SecretName: fmt.Sprintf("svc-%d-tls", i)}},
			Rules: []networkingv1.IngressRule{
				{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{path("/"), path("/api")}}}},
				{Host: "www." + host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{path("/")}}}},
			},
		},
		Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "203.0.113.10"}}}},
	}
}

func typicalIngressRoute(i int) *unstructured.Unstructured {
	host := fmt.Sprintf("svc-%d.example.com", i)
	route := func(h, path string) any {
		return map[string]any{"kind": "Rule", "match": "Host(`" + h + "`) && PathPrefix(`" + path + "`)",
			"middlewares": []any{map[string]any{"name": "strip"}},
			"services":    []any{map[string]any{"name": fmt.Sprintf("svc-%d", i), "port": int64(8080)}}}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": "IngressRoute",
		"metadata": map[string]any{
			"name": fmt.Sprintf("svc-%d", i), "namespace": fmt.Sprintf("team-%d", i%50), "uid": fmt.Sprintf("0000-%032d", i), "resourceVersion": fmt.Sprint(100000 + i),
			"labels":      map[string]any{"app.kubernetes.io/name": "svc", "team": fmt.Sprintf("team-%d", i%50)},
			"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 900)},
		},
		"spec": map[string]any{
			"entryPoints": []any{"websecure"},
			"routes":      []any{route(host, "/"), route(host, "/api"), route("www."+host, "/")},
			"tls":         map[string]any{"secretName": fmt.Sprintf("svc-%d-tls", i)},
		},
	}}
	return u
}

// TestTrimRoute: the cache keeps only the name, namespace, UID, an app's
// controller reference and the hosts; the trimmed object reads as the
// original does.
func TestTrimRoute(t *testing.T) {
	appRef := metav1.OwnerReference{APIVersion: schedv1.GroupVersion.String(), Kind: "UserDeployment", Name: "shop", UID: "u1", Controller: ptr.To(true)}
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "i1", ResourceVersion: "7",
			Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"big": strings.Repeat("x", 4096)},
			OwnerReferences: []metav1.OwnerReference{appRef}},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To("nginx"),
			TLS:              []networkingv1.IngressTLS{{Hosts: []string{"tls.example.com"}, SecretName: "s"}},
			Rules: []networkingv1.IngressRule{
				{Host: "Shop.Example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/"}}}}},
				{Host: "shop.example.com"}, {Host: "*.example.org"}, {},
			},
		},
	}
	got, err := trimRoute(ing)
	if err != nil {
		t.Fatal(err)
	}
	want := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "i1", OwnerReferences: []metav1.OwnerReference{appRef}},
		Spec:       networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "shop.example.com"}, {Host: "*.example.org"}}},
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("trimmed Ingress (-want +got):\n%s", diff)
	}

	ir := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "r", "namespace": "ns", "uid": "r1", "ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "c1", "controller": true}}},
		"spec": map[string]any{"entryPoints": []any{"web"}, "routes": []any{
			map[string]any{"match": "Host(`a.example.com`) && PathPrefix(`/`)", "services": []any{map[string]any{"name": "s", "port": int64(80)}}},
			map[string]any{"match": "HostRegexp(`^.+\\.example\\.org$`)"},
		}},
	}}
	ir.SetGroupVersionKind(ingressRouteGVK)
	trimmed, err := trimRoute(ir)
	if err != nil {
		t.Fatal(err)
	}
	u := trimmed.(*unstructured.Unstructured)
	if u.GetName() != "r" || u.GetNamespace() != "ns" || u.GetUID() != "r1" || len(u.GetOwnerReferences()) != 0 || u.GroupVersionKind() != ingressRouteGVK {
		t.Errorf("trimmed IngressRoute metadata: %v", u.Object["metadata"])
	}
	if diff := gocmp.Diff(hostsOf(ir), hostsOf(u), gocmp.AllowUnexported(routeHosts{})); diff != "" {
		t.Errorf("hosts of the trimmed IngressRoute (-original +trimmed):\n%s", diff)
	}
	if diff := gocmp.Diff([]string{"a.example.com", indexRegexp}, routeIndex(u)); diff != "" {
		t.Errorf("index keys (-want +got):\n%s", diff)
	}
	if _, found := u.Object["spec"].(map[string]any)["routes"]; found {
		t.Errorf("the trimmed IngressRoute keeps its routes: %v", u.Object["spec"])
	}
}
