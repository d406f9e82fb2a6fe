package netpol_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/netpol"
)

var platform = netpol.Platform{IngressNamespace: "ingress-nginx", MonitoringNamespace: "monitoring"}

func named(ns string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}}
}

func port(p corev1.Protocol, n int32) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(p), Port: ptr.To(intstr.FromInt32(n))}
}

var (
	self       = metav1.LabelSelector{MatchLabels: map[string]string{schedv1.LabelUserDeployment: "shop"}}
	selfPeer   = networkingv1.NetworkPolicyPeer{PodSelector: &self}
	dns        = networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolUDP, 53), port(corev1.ProtocolTCP, 53)}}
	isolated   = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{selfPeer, named("ingress-nginx")}}}
	ingressTyp = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
)

func TestAppSpec(t *testing.T) {
	cases := map[string]struct {
		spec     func(*schedv1.UserDeploymentSpec)
		platform *netpol.Platform // the default platform when nil
		want     *networkingv1.NetworkPolicySpec
	}{
		"isolated: own pods and the ingress controller": {
			want: &networkingv1.NetworkPolicySpec{PodSelector: self, PolicyTypes: ingressTyp, Ingress: isolated},
		},
		"no ingress namespace configured": {
			platform: &netpol.Platform{},
			want: &networkingv1.NetworkPolicySpec{PodSelector: self, PolicyTypes: ingressTyp,
				Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{selfPeer}}}},
		},
		"open, egress anywhere: no policy": {
			spec: func(s *schedv1.UserDeploymentSpec) { s.NetworkIsolation = schedv1.IsolationOpen },
		},
		"open with egress None restricts egress only": {
			spec: func(s *schedv1.UserDeploymentSpec) {
				s.NetworkIsolation, s.Egress = schedv1.IsolationOpen, schedv1.EgressNone
			},
			want: &networkingv1.NetworkPolicySpec{PodSelector: self,
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Egress:      []networkingv1.NetworkPolicyEgressRule{dns}},
		},
		"egress Namespace: DNS and the namespace's pods": {
			spec: func(s *schedv1.UserDeploymentSpec) { s.Egress = schedv1.EgressNamespace },
			want: &networkingv1.NetworkPolicySpec{PodSelector: self,
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
				Ingress:     isolated,
				Egress:      []networkingv1.NetworkPolicyEgressRule{dns, {To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}}},
		},
		"egress Internet is no egress rule": {
			spec: func(s *schedv1.UserDeploymentSpec) { s.Egress = schedv1.EgressInternet },
			want: &networkingv1.NetworkPolicySpec{PodSelector: self, PolicyTypes: ingressTyp, Ingress: isolated},
		},
		"allowFrom: apps, tasks, namespaces and the metrics ports": {
			spec: func(s *schedv1.UserDeploymentSpec) {
				s.AllowFrom = &schedv1.AllowFrom{
					Apps:         []string{"web", "api"},
					Tasks:        true,
					Namespaces:   []schedv1.NamespaceLabels{{MatchLabels: map[string]string{"team": "payments"}}},
					MetricsPorts: []int32{9100, 9090},
				}
			},
			want: &networkingv1.NetworkPolicySpec{PodSelector: self, PolicyTypes: ingressTyp, Ingress: []networkingv1.NetworkPolicyIngressRule{
				{From: []networkingv1.NetworkPolicyPeer{
					selfPeer, named("ingress-nginx"),
					{PodSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: schedv1.LabelUserDeployment, Operator: metav1.LabelSelectorOpIn, Values: []string{"api", "web"}}}}},
					{PodSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: schedv1.LabelAgentTask, Operator: metav1.LabelSelectorOpExists}}}},
					{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "payments"}}},
				}},
				{From: []networkingv1.NetworkPolicyPeer{named("monitoring")}, Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, 9090), port(corev1.ProtocolTCP, 9100)}},
			}},
		},
		"metrics ports without a monitoring namespace admit nothing more": {
			platform: &netpol.Platform{IngressNamespace: "ingress-nginx"},
			spec:     func(s *schedv1.UserDeploymentSpec) { s.AllowFrom = &schedv1.AllowFrom{MetricsPorts: []int32{9090}} },
			want:     &networkingv1.NetworkPolicySpec{PodSelector: self, PolicyTypes: ingressTyp, Ingress: isolated},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ud := MakeUserDeployment("shop", "team").Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).Obj()
			if tc.spec != nil {
				tc.spec(&ud.Spec)
			}
			p := platform
			if tc.platform != nil {
				p = *tc.platform
			}
			if diff := cmp.Diff(tc.want, netpol.AppSpec(ud, p)); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTenantSpec(t *testing.T) {
	notApps := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: schedv1.LabelUserDeployment, Operator: metav1.LabelSelectorOpDoesNotExist}}}
	sameNamespace := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}}
	cases := map[string]struct {
		platform netpol.Platform
		from     []networkingv1.NetworkPolicyPeer
	}{
		"the namespace, ingress and monitoring":       {platform: platform, from: []networkingv1.NetworkPolicyPeer{sameNamespace, named("ingress-nginx"), named("monitoring")}},
		"no platform namespaces: the namespace alone": {from: []networkingv1.NetworkPolicyPeer{sameNamespace}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := networkingv1.NetworkPolicySpec{PodSelector: notApps, PolicyTypes: ingressTyp, Ingress: []networkingv1.NetworkPolicyIngressRule{{From: tc.from}}}
			if diff := cmp.Diff(want, netpol.TenantSpec(tc.platform)); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
		})
	}
}
