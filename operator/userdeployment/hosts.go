package userdeployment

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// indexHost finds the apps that claim an ingress host.
const indexHost = "sched.kubectl-sched.dev/ingress-host"

// claimedHost is the host ud routes, or "" when it routes none. An app
// being deleted lets go of its host.
func claimedHost(ud *schedv1.UserDeployment, s Settings) string {
	if !ud.DeletionTimestamp.IsZero() || len(publicRoutes(ud)) == 0 {
		return ""
	}
	return ingressHost(ud, s)
}

// hostIndex is the indexer func for indexHost.
func (r *Reconciler) hostIndex(o client.Object) []string {
	ud, ok := o.(*schedv1.UserDeployment)
	if !ok {
		return nil
	}
	if h := claimedHost(ud, r.Settings); h != "" {
		return []string{h}
	}
	return nil
}

// hostHolder returns the app in another namespace that holds host, as
// namespace/name, or "" when ud's namespace may use it. The oldest claimant
// holds a host (as with SchedExt and nodes): a newer app cannot take over
// another tenant's traffic. Apps of one namespace may share a host.
func (r *Reconciler) hostHolder(ctx context.Context, ud *schedv1.UserDeployment, host string) (string, error) {
	if host == "" {
		return "", nil
	}
	var list schedv1.UserDeploymentList
	if err := r.List(ctx, &list, client.MatchingFields{indexHost: host}); err != nil {
		return "", fmt.Errorf("list the apps claiming host %s: %w", host, err)
	}
	claimants := []*schedv1.UserDeployment{ud}
	for i := range list.Items {
		if list.Items[i].UID != ud.UID {
			claimants = append(claimants, &list.Items[i])
		}
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

// otherClaimants maps an app to the apps that claim its host, so that when
// the holder lets go (deleted, or another host) the next one takes it.
func (r *Reconciler) otherClaimants(ctx context.Context, o client.Object) []reconcile.Request {
	ud, ok := o.(*schedv1.UserDeployment)
	if !ok {
		return nil
	}
	host := ingressHost(ud, r.Settings)
	if len(publicRoutes(ud)) == 0 {
		return nil
	}
	var list schedv1.UserDeploymentList
	if err := r.List(ctx, &list, client.MatchingFields{indexHost: host}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, other := range list.Items {
		if other.UID != ud.UID {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: other.Namespace, Name: other.Name}})
		}
	}
	return out
}
