package userdeployment

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/operator/watch"
)

// Every Ingress and IngressRoute of the cluster is cached, not only the
// operator's, to see which hosts other namespaces serve. The cache keeps
// only what the host index needs (trimRoute): name, namespace, UID, the
// controller reference when it is an app, and the hosts. See
// BenchmarkRouteCacheMemory for what that costs per object.

const (
	// indexRouteHost finds the route objects serving a host: each is
	// indexed under its hosts, wildcards as written (*.example.com), and
	// under indexRegexp when it matches a host regular expression.
	indexRouteHost = "sched.kubectl-sched.dev/route-host"
	// indexRegexp is not a host, so it cannot collide with one.
	indexRegexp = "~regexp"
)

// Fields of the digest an IngressRoute is trimmed to: the hosts and host
// regular expressions its rules match. Traefik's schema has neither, so a
// full IngressRoute never carries them.
const (
	digestHosts   = "hosts"
	digestRegexps = "hostRegexps"
)

// newRouteCache builds the cache of every Ingress, trimmed and indexed by
// host, and keeps its index in r.routeIndexes; follow adds IngressRoutes
// to it while Traefik is served. The index is the informers' own, not
// controller-runtime's IndexField, which keeps each key twice (per
// namespace and for all), and lookups read the cached objects without
// copying them: callers only read.
func (r *Reconciler) newRouteCache(mgr ctrl.Manager) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(),
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		// For every kind, so IngressRoutes added later are trimmed too.
		DefaultTransform:            trimRoute,
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, fmt.Errorf("cache of every Ingress: %w", err)
	}
	inf, err := c.GetInformer(context.Background(), &networkingv1.Ingress{})
	if err != nil {
		return nil, fmt.Errorf("informer for Ingresses: %w", err)
	}
	idx, err := withHostIndex(inf)
	if err != nil {
		return nil, fmt.Errorf("index Ingresses by host: %w", err)
	}
	r.setRouteIndex("Ingress", idx)
	return c, mgr.Add(c)
}

// withHostIndex adds the host index to a route informer and returns it.
func withHostIndex(inf cache.Informer) (toolscache.Indexer, error) {
	if err := inf.AddIndexers(toolscache.Indexers{indexRouteHost: routeIndexFunc}); err != nil {
		return nil, err
	}
	withIndexer, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, fmt.Errorf("the informer (%T) has no indexer", inf)
	}
	return withIndexer.GetIndexer(), nil
}

// routeKindIndex is the host index of one route kind's informer.
type routeKindIndex struct {
	kind  string
	index toolscache.Indexer
}

// setRouteIndex adds or, with a nil index, removes a kind's index; Ingress
// comes first, then IngressRoutes, so lookups name holders in one order.
func (r *Reconciler) setRouteIndex(kind string, idx toolscache.Indexer) {
	r.routeMu.Lock()
	defer r.routeMu.Unlock()
	r.routeIndexes = slices.DeleteFunc(r.routeIndexes, func(ri routeKindIndex) bool { return ri.kind == kind })
	if idx != nil {
		r.routeIndexes = append(r.routeIndexes, routeKindIndex{kind, idx})
	}
}

// routesServing lists the cached route objects indexed under key.
func (r *Reconciler) routesServing(key string) ([]client.Object, error) {
	r.routeMu.RLock()
	defer r.routeMu.RUnlock()
	var out []client.Object
	for _, ri := range r.routeIndexes {
		objs, err := ri.index.ByIndex(indexRouteHost, key)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if obj, ok := o.(client.Object); ok {
				out = append(out, obj)
			}
		}
	}
	return out, nil
}

func newIngressRoute() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ingressRouteGVK)
	return u
}

// trimRoute is the cache transform: an Ingress or IngressRoute becomes a
// new object with only its name, namespace, UID, the controller reference
// of an app, and its hosts (an IngressRoute's as a digest, see digestHosts),
// so nothing of the original stays referenced.
func trimRoute(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil
	}
	meta := metav1.ObjectMeta{Name: o.GetName(), Namespace: o.GetNamespace(), UID: o.GetUID()}
	if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == "UserDeployment" {
		meta.OwnerReferences = []metav1.OwnerReference{{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID, Controller: ptr.To(true)}}
	}
	rh := hostsOf(o)
	switch o.(type) {
	case *networkingv1.Ingress:
		ing := &networkingv1.Ingress{ObjectMeta: meta}
		for _, h := range rh.hosts {
			ing.Spec.Rules = append(ing.Spec.Rules, networkingv1.IngressRule{Host: h})
		}
		return ing, nil
	case *unstructured.Unstructured:
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetGroupVersionKind(o.GetObjectKind().GroupVersionKind())
		u.SetName(meta.Name)
		u.SetNamespace(meta.Namespace)
		u.SetUID(meta.UID)
		u.SetOwnerReferences(meta.OwnerReferences)
		spec := map[string]any{}
		if len(rh.hosts) > 0 {
			spec[digestHosts] = toAny(rh.hosts)
		}
		if len(rh.regexps) > 0 {
			spec[digestRegexps] = toAny(rh.regexps)
		}
		u.Object["spec"] = spec
		return u, nil
	}
	return obj, nil
}

func toAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

// hostsOf reads what a route object serves: an Ingress's rule hosts (a rule
// without a host is a catch-all and not counted), an IngressRoute's rule
// hosts (traefikRuleHosts) or its cached digest.
func hostsOf(obj client.Object) routeHosts {
	var rh routeHosts
	switch o := obj.(type) {
	case *networkingv1.Ingress:
		for _, rule := range o.Spec.Rules {
			if h := normalDomain(rule.Host); h != "" {
				rh.hosts = appendNew(rh.hosts, h)
			}
		}
	case *unstructured.Unstructured:
		routes, _, _ := unstructured.NestedSlice(o.Object, "spec", "routes")
		for _, route := range routes {
			if m, ok := route.(map[string]any); ok {
				if match, ok := m["match"].(string); ok {
					traefikRuleHosts(match, &rh)
				}
			}
		}
		hosts, _, _ := unstructured.NestedStringSlice(o.Object, "spec", digestHosts)
		for _, h := range hosts {
			rh.hosts = appendNew(rh.hosts, h)
		}
		regexps, _, _ := unstructured.NestedStringSlice(o.Object, "spec", digestRegexps)
		for _, re := range regexps {
			rh.regexps = appendNew(rh.regexps, re)
		}
	}
	return rh
}

// routeIndexFunc is the informers' indexer func for indexRouteHost.
func routeIndexFunc(obj any) ([]string, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not an object", obj)
	}
	return routeIndex(o), nil
}

// routeIndex are the keys of obj in indexRouteHost.
func routeIndex(obj client.Object) []string {
	rh := hostsOf(obj)
	keys := rh.hosts
	if len(rh.regexps) > 0 {
		keys = append(keys[:len(keys):len(keys)], indexRegexp)
	}
	return keys
}

// routeChanged passes the route events that can change who holds a host:
// created, deleted, or other hosts or controller. The cached objects hold
// nothing else, so an ingress controller's status writes compare equal.
var routeChanged = watch.Changed(func(old, cur client.Object) bool {
	return !reflect.DeepEqual(hostsOf(old), hostsOf(cur)) ||
		!reflect.DeepEqual(metav1.GetControllerOf(old), metav1.GetControllerOf(cur))
})
