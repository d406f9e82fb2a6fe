package userdeployment

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/watch"
)

// indexHost finds the apps that claim an ingress host. Each app is also
// indexed under the Ingress wildcard that covers its host (*.example.com
// for shop.example.com), so a wildcard route's events find it.
const indexHost = "sched.kubectl-sched.dev/ingress-host"

// claimedHost is the host ud routes, or "" when it routes none. An app
// being deleted lets go of its host, and so does one whose host no
// allow-list can allow (another namespace's part of the domain, a
// wildcard): it never holds the host against anyone.
func claimedHost(ud *schedv1.UserDeployment, s Settings) string {
	if !ud.DeletionTimestamp.IsZero() || len(publicRoutes(ud)) == 0 {
		return ""
	}
	host := ingressHost(ud, s)
	if problem, _ := domainProblem(host, ud.Namespace, s.IngressDomain); problem != "" {
		return ""
	}
	return host
}

// hostIndex is the indexer func for indexHost.
func (r *Reconciler) hostIndex(o client.Object) []string {
	ud, ok := o.(*schedv1.UserDeployment)
	if !ok {
		return nil
	}
	if h := claimedHost(ud, r.Settings); h != "" {
		return []string{h, wildcardOf(h)}
	}
	return nil
}

// checkHost withholds p's route when ud may not route its host or someone
// else holds it (routeProblem). heldByRoute is true when a route object of
// another namespace holds it, which the caller checks again later.
func (r *Reconciler) checkHost(ctx context.Context, ud *schedv1.UserDeployment, p *plan, owned map[objectKey]client.Object) (heldByRoute bool, err error) {
	if p.host == "" || p.routeWithheld.reason != "" {
		return false, nil
	}
	reason, msg, foreign, err := r.routeProblem(ctx, ud, p.host, owned)
	if err != nil {
		return false, err
	}
	if reason != "" {
		p.withholdRoute(reason, msg)
	}
	return foreign, nil
}

// routeProblem says why ud gets no route for host, with the reason of its
// Degraded condition, beyond what buildPlan found: a host outside the
// ingress domain that its namespace's allow-list lacks, or a host that
// someone else holds. foreign is true when a route object of another
// namespace holds it, whose end may not be announced (a host regular
// expression is not indexed), so the caller checks again later. owned are
// ud's objects, to see whether it already routes host.
func (r *Reconciler) routeProblem(ctx context.Context, ud *schedv1.UserDeployment, host string, owned map[objectKey]client.Object) (reason, msg string, foreign bool, err error) {
	problem, err := r.mayRoute(ctx, ud.Namespace, host)
	if err != nil || problem != "" {
		return schedv1.ReasonHostNotAllowed, problem, false, err
	}
	holder, err := r.hostHolder(ctx, ud, host)
	if err != nil || holder != "" {
		return schedv1.ReasonHostConflict, heldBy(host, "app "+holder), false, err
	}
	if routesNow(ud, host, owned) {
		// A route that appeared after ours does not take the host back:
		// the first to serve a host keeps it, as between apps.
		return "", "", false, nil
	}
	route, err := r.routeHolder(ctx, ud, host)
	if err != nil || route == "" {
		return "", "", false, err
	}
	return schedv1.ReasonHostConflict, heldBy(host, route), true, nil
}

// mayRoute says why apps of namespace ns may not route host, or "" when
// they may (hostProblem, with the namespace's allow-list when host is
// outside the ingress domain).
func (r *Reconciler) mayRoute(ctx context.Context, ns, host string) (string, error) {
	problem, outside := domainProblem(host, ns, r.Settings.IngressDomain)
	if problem != "" || !outside {
		return problem, nil
	}
	nsObj := &corev1.Namespace{}
	if err := r.Get(ctx, types.NamespacedName{Name: ns}, nsObj); err != nil {
		return "", fmt.Errorf("read namespace %s for its allowed hosts: %w", ns, err)
	}
	return hostProblem(host, ns, r.Settings.IngressDomain, parseAllowedHosts(nsObj.Annotations[schedv1.AnnotationAllowedHosts])), nil
}

// hostHolder returns the app in another namespace that holds host, as
// namespace/name, or "" when ud's namespace may use it. The oldest claimant
// holds a host (as with SchedExt and nodes): a newer app cannot take over
// another tenant's traffic. Apps of one namespace may share a host. A
// claimant that may not route the host (its namespace's allow-list lacks
// it) holds nothing.
func (r *Reconciler) hostHolder(ctx context.Context, ud *schedv1.UserDeployment, host string) (string, error) {
	var list schedv1.UserDeploymentList
	if err := r.List(ctx, &list, client.MatchingFields{indexHost: host}); err != nil {
		return "", fmt.Errorf("list the apps claiming host %s: %w", host, err)
	}
	claimants := []*schedv1.UserDeployment{ud}
	for i := range list.Items {
		other := &list.Items[i]
		if other.UID == ud.UID || claimedHost(other, r.Settings) != host {
			continue
		}
		if other.Namespace != ud.Namespace {
			if problem, err := r.mayRoute(ctx, other.Namespace, host); err != nil || problem != "" {
				continue // its own reconcile reports it
			}
		}
		claimants = append(claimants, other)
	}
	oldest := slices.MinFunc(claimants, func(a, b *schedv1.UserDeployment) int { return holderFirst(host, a, b) })
	if oldest.Namespace == ud.Namespace {
		return "", nil
	}
	return oldest.Namespace + "/" + oldest.Name, nil
}

// holderFirst orders the claimants of host: the one already routing it
// first (its status lists it), so a claimant created in the same second
// cannot take it over; then by creation, then by namespace and name, so
// that new claims agree on one holder.
func holderFirst(host string, a, b *schedv1.UserDeployment) int {
	if ra, rb := routes(a, host), routes(b, host); ra != rb {
		if ra {
			return -1
		}
		return 1
	}
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
}

// routes reports whether ud's status says it serves host.
func routes(ud *schedv1.UserDeployment, host string) bool {
	for _, raw := range ud.Status.URLs {
		if u, err := url.Parse(raw); err == nil && u.Host == host {
			return true
		}
	}
	return false
}

// routesNow reports whether ud already routes host: its status says so and
// its own Ingress or IngressRoute serves it.
func routesNow(ud *schedv1.UserDeployment, host string, owned map[objectKey]client.Object) bool {
	if !routes(ud, host) {
		return false
	}
	for _, kind := range []string{"Ingress", ingressRouteGVK.Kind} {
		if obj, ok := owned[objectKey{kind, ud.Name}]; ok && hostsOf(obj).serves(host) {
			return true
		}
	}
	return false
}

// routeHolder names an Ingress or IngressRoute of another namespace that
// serves host ("Ingress ns/name"), or "" when none does. The routes of
// apps that may claim host are left to hostHolder, which decides between
// apps; ud's own namespace may share a host with its own routes.
func (r *Reconciler) routeHolder(ctx context.Context, ud *schedv1.UserDeployment, host string) (string, error) {
	var found []client.Object
	for _, key := range []string{host, wildcardOf(host), indexRegexp} {
		if key == "" {
			continue
		}
		objs, err := r.routesServing(key)
		if err != nil {
			return "", fmt.Errorf("look up the routes serving %s: %w", host, err)
		}
		found = append(found, objs...)
	}
	for _, obj := range found {
		if obj.GetNamespace() == ud.Namespace || !hostsOf(obj).serves(host) {
			continue
		}
		app, err := r.claimingApp(ctx, obj, host)
		if err != nil {
			return "", err
		}
		if !app {
			return fmt.Sprintf("%s %s/%s", kindOf(obj), obj.GetNamespace(), obj.GetName()), nil
		}
	}
	return "", nil
}

// claimingApp reports whether route is controlled by an app that claims
// host and may route it: such routes come and go with their app's claim.
func (r *Reconciler) claimingApp(ctx context.Context, route client.Object, host string) (bool, error) {
	ref := metav1.GetControllerOf(route)
	if ref == nil || ref.Kind != "UserDeployment" || !strings.HasPrefix(ref.APIVersion, schedv1.GroupName+"/") {
		return false, nil
	}
	app := &schedv1.UserDeployment{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: route.GetNamespace(), Name: ref.Name}, app); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if app.UID != ref.UID || claimedHost(app, r.Settings) != host {
		return false, nil
	}
	problem, err := r.mayRoute(ctx, app.Namespace, host)
	return problem == "", err
}

func kindOf(obj client.Object) string {
	if _, ok := obj.(*networkingv1.Ingress); ok {
		return "Ingress"
	}
	return ingressRouteGVK.Kind
}

// otherClaimants maps an app to the apps that claim its host, so that when
// the holder lets go (deleted, or another host) the next one takes it.
func (r *Reconciler) otherClaimants(ctx context.Context, o client.Object) []reconcile.Request {
	ud, ok := o.(*schedv1.UserDeployment)
	if !ok || len(publicRoutes(ud)) == 0 {
		return nil
	}
	return r.claimantsOf(ctx, ingressHost(ud, r.Settings), ud.UID)
}

// claimantsOf lists the apps indexed under key (a host, or the wildcard
// covering theirs), but the one with UID except.
func (r *Reconciler) claimantsOf(ctx context.Context, key string, except types.UID) []reconcile.Request {
	var list schedv1.UserDeploymentList
	if err := r.List(ctx, &list, client.MatchingFields{indexHost: key}); err != nil {
		return nil
	}
	return watch.Requests(&list, func(o client.Object) bool { return o.GetUID() != except })
}

// appsOfRoute maps an Ingress or IngressRoute of any namespace to the apps
// claiming a host it serves: one appearing, changing or going may take or
// free their host. Host regular expressions map to nothing; apps they hold
// back check again after conflictRetry.
func (r *Reconciler) appsOfRoute(ctx context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, h := range hostsOf(o).hosts {
		out = append(out, r.claimantsOf(ctx, h, "")...)
	}
	return out
}

// appsOfNamespace maps a namespace whose allow-list changed to its public
// apps and the apps that claim the same hosts, which may now hold them.
func (r *Reconciler) appsOfNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	var list schedv1.UserDeploymentList
	if err := r.List(ctx, &list, client.InNamespace(o.GetName())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		ud := &list.Items[i]
		if len(publicRoutes(ud)) == 0 {
			continue
		}
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ud.Namespace, Name: ud.Name}})
		out = append(out, r.claimantsOf(ctx, ingressHost(ud, r.Settings), ud.UID)...)
	}
	return out
}
