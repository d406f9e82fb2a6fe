package userdeployment

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func TestBuildService(t *testing.T) {
	ud := app().Service("api", "api:1", 8080, schedv1.ExposureInternal).
		EditService("api", func(s *schedv1.ServiceSpec) {
			s.Ports = append(s.Ports, schedv1.ServicePort{Name: "metrics", Port: 9090}, schedv1.ServicePort{Port: 5353, Protocol: corev1.ProtocolUDP})
		}).Obj()
	p := buildPlan(ud, testSettings, apis{})
	want := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: wantMeta("shop-api", "api"),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{schedv1.LabelUserDeployment: "shop", schedv1.LabelService: "api"},
			Ports: []corev1.ServicePort{
				{Name: "tcp-8080", Port: 8080, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
				{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9090), Protocol: corev1.ProtocolTCP},
				{Name: "udp-5353", Port: 5353, TargetPort: intstr.FromInt32(5353), Protocol: corev1.ProtocolUDP},
			},
		},
	}
	if diff := cmp.Diff(want, p.objects[1]); diff != "" {
		t.Errorf("Service (-want +got):\n%s", diff)
	}
}
