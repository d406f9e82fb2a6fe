package tenant_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/operator/netpol"
)

func tenantPolicyIs(ns string, want networkingv1.NetworkPolicySpec) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		np := &networkingv1.NetworkPolicy{}
		if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: schedv1.TenantNetworkPolicyName}, np); err != nil {
			return err
		}
		if diff := cmp.Diff(want, np.Spec); diff != "" {
			return fmt.Errorf("policy (-want +got):\n%s", diff)
		}
		return nil
	}
}

// TestTenantNamespaceDeniesOtherTenants: a tenant namespace gets the
// default deny of other tenants as the API server stores it, kept against
// a member's edit and delete, and removed when the operator runs with
// network policies off.
func TestTenantNamespaceDeniesOtherTenants(t *testing.T) {
	const ns = "tier-network"
	tenantNamespace(t, ns, "free")
	s := op.Options().Settings
	want := netpol.TenantSpec(netpol.Platform{IngressNamespace: s.IngressNamespace, MonitoringNamespace: s.MonitoringNamespace})
	if len(want.Ingress[0].From) != 3 {
		t.Fatalf("the test operator admits %d peers, want the namespace, ingress and monitoring: %+v", len(want.Ingress[0].From), s)
	}
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the tenant's NetworkPolicy", tenantPolicyIs(ns, want))

	// A member with edit (which covers NetworkPolicies) opens the namespace
	// to everyone, then deletes the policy: both are repaired.
	member := tenantUser(t, ns, "net-alice", "kubectl-sched-edit", "edit")
	np := &networkingv1.NetworkPolicy{}
	if err := member.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: schedv1.TenantNetworkPolicyName}, np); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(np.DeepCopy())
	np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{}}
	if err := member.Patch(t.Context(), np, patch); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the opened policy repaired", tenantPolicyIs(ns, want))
	if err := member.Delete(t.Context(), np); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the deleted policy made again", tenantPolicyIs(ns, want))

	// A member made by `tenant create --user` cannot touch it at all.
	bob := tenantUser(t, ns, "net-bob", "kubectl-sched-tenant")
	if err := bob.Delete(t.Context(), np); !apierrors.IsForbidden(err) {
		t.Errorf("a member deleting the tenant's NetworkPolicy: %v, want forbidden", err)
	}

	// Off (DISABLE_NETWORK_POLICIES=true, a development cluster): the
	// operator removes its own policy.
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := op.Stop(); err != nil {
			t.Error(err)
		}
		if err := op.Start(nil); err != nil {
			t.Fatal(err)
		}
	})
	if err := op.Start(func(o *app.Options) { o.Settings.NetworkPolicies = false }); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: schedv1.TenantNetworkPolicyName}
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the policy removed", func(ctx context.Context) error {
		err := sim.Client.Get(ctx, key, &networkingv1.NetworkPolicy{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (err %v)", err)
	})

	// A policy of that name that the operator did not make is left alone:
	// after a tier change (seen once the new quota is applied) it is there.
	theirs := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: schedv1.TenantNetworkPolicyName, Namespace: ns},
		Spec:       networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}},
	}
	if err := sim.Client.Create(t.Context(), theirs); err != nil {
		t.Fatal(err)
	}
	nsObj := &corev1.Namespace{}
	if err := sim.Client.Get(t.Context(), client.ObjectKey{Name: ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	nsObj.Labels[schedv1.LabelTier] = "team"
	if err := sim.Client.Update(t.Context(), nsObj); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the team quota", quotaIs(ns, "pods", "100"))
	if err := sim.Client.Get(t.Context(), key, theirs); err != nil {
		t.Errorf("a policy the operator did not make: %v, want it kept", err)
	}
}
