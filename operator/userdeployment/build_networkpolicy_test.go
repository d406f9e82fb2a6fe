package userdeployment

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/netpol"
)

// TestBuildNetworkPolicy: the app's policy is netpol's spec (its contents
// are tested there) under the app's metadata, and there is none when it
// would restrict nothing.
func TestBuildNetworkPolicy(t *testing.T) {
	platform := netpol.Platform{IngressNamespace: "ingress-nginx", MonitoringNamespace: "monitoring"}
	ud := MakeUserDeployment("shop", "ns").Meta(func(m *metav1.ObjectMeta) { m.UID = "uid-1" }).Obj()
	want := &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: wantMeta("shop", ""),
		Spec:       *netpol.AppSpec(ud, platform),
	}
	if diff := cmp.Diff(want, buildNetworkPolicy(ud, platform)); diff != "" {
		t.Errorf("NetworkPolicy (-want +got):\n%s", diff)
	}
	ud.Spec.NetworkIsolation = schedv1.IsolationOpen
	if got := buildNetworkPolicy(ud, platform); got != nil {
		t.Errorf("an Open app with egress anywhere has a NetworkPolicy: %+v", got.Spec)
	}
}
