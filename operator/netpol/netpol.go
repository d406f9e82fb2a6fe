// Package netpol builds the NetworkPolicies the operator keeps: one per
// app (who may reach its pods, where they may connect) and one per tenant
// namespace (no traffic from other tenants). NetworkPolicies only add to
// each other, so the tenant's policy leaves out the pods of apps, whose
// own policy says who may reach them.
package netpol

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// Platform names the namespaces of the cluster's shared services, which
// every app and tenant admits: the ingress controller, and the monitoring
// stack (on an app's metrics ports only). Empty names admit nothing.
type Platform struct {
	IngressNamespace    string
	MonitoringNamespace string
}

// AppSpec is the NetworkPolicy spec of an app, or nil when it restricts
// nothing (networkIsolation Open and egress Internet).
func AppSpec(ud *schedv1.UserDeployment, p Platform) *networkingv1.NetworkPolicySpec {
	spec := &networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{schedv1.LabelUserDeployment: ud.Name}},
	}
	if ud.Spec.NetworkIsolation != schedv1.IsolationOpen {
		spec.PolicyTypes = append(spec.PolicyTypes, networkingv1.PolicyTypeIngress)
		spec.Ingress = appIngress(ud, p)
	}
	if to := egress(ud.Spec.Egress); to != nil {
		spec.PolicyTypes = append(spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		spec.Egress = to
	}
	if len(spec.PolicyTypes) == 0 {
		return nil
	}
	return spec
}

// appIngress admits the app's own pods, the ingress controller and what
// spec.allowFrom names.
func appIngress(ud *schedv1.UserDeployment, p Platform) []networkingv1.NetworkPolicyIngressRule {
	from := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{schedv1.LabelUserDeployment: ud.Name},
	}}}
	if p.IngressNamespace != "" {
		from = append(from, namespaceNamed(p.IngressNamespace))
	}
	a := ud.Spec.AllowFrom
	if a == nil {
		return []networkingv1.NetworkPolicyIngressRule{{From: from}}
	}
	if apps := slices.Sorted(slices.Values(a.Apps)); len(apps) > 0 {
		from = append(from, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: schedv1.LabelUserDeployment, Operator: metav1.LabelSelectorOpIn, Values: apps}},
		}})
	}
	if a.Tasks {
		// Every task pod carries the task label, workflow steps included;
		// only the operator may set it (kubectl-sched-reserved-labels).
		from = append(from, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: schedv1.LabelAgentTask, Operator: metav1.LabelSelectorOpExists}},
		}})
	}
	for _, n := range a.Namespaces {
		from = append(from, networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: n.MatchLabels}})
	}
	rules := []networkingv1.NetworkPolicyIngressRule{{From: from}}
	if len(a.MetricsPorts) > 0 && p.MonitoringNamespace != "" {
		rule := networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{namespaceNamed(p.MonitoringNamespace)}}
		for _, port := range slices.Sorted(slices.Values(a.MetricsPorts)) {
			rule.Ports = append(rule.Ports, tcp(port))
		}
		rules = append(rules, rule)
	}
	return rules
}

// egress is the egress rules for e, or nil for no restriction.
func egress(e schedv1.Egress) []networkingv1.NetworkPolicyEgressRule {
	// DNS to any address: clusters resolve through kube-dns, a node-local
	// cache on a link-local address or the node's resolver.
	dns := networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{
		{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(53))},
		{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(53))},
	}}
	switch e {
	case schedv1.EgressNone:
		return []networkingv1.NetworkPolicyEgressRule{dns}
	case schedv1.EgressNamespace:
		return []networkingv1.NetworkPolicyEgressRule{dns, {To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}}
	}
	return nil
}

// TenantSpec is the NetworkPolicy spec of a tenant namespace: its pods
// other than apps' take traffic only from the namespace itself and the
// platform's ingress and monitoring namespaces, so tenants do not reach
// each other by default. Apps' pods have their own policy (AppSpec),
// which admits no other namespace unless the app's allowFrom names it.
func TenantSpec(p Platform) networkingv1.NetworkPolicySpec {
	from := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}
	for _, ns := range []string{p.IngressNamespace, p.MonitoringNamespace} {
		if ns != "" {
			from = append(from, namespaceNamed(ns))
		}
	}
	return networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: schedv1.LabelUserDeployment, Operator: metav1.LabelSelectorOpDoesNotExist},
		}},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: from}},
	}
}

func namespaceNamed(ns string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
	}}
}

func tcp(port int32) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(port))}
}
