package userdeployment

import (
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/netpol"
)

// buildNetworkPolicy is the app's NetworkPolicy (netpol.AppSpec), or nil
// when it would restrict nothing.
func buildNetworkPolicy(ud *schedv1.UserDeployment, p netpol.Platform) *networkingv1.NetworkPolicy {
	spec := netpol.AppSpec(ud, p)
	if spec == nil {
		return nil
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: objectMeta(ud, ud.Name, ""),
		Spec:       *spec,
	}
}
