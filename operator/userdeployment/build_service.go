package userdeployment

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func buildService(ud *schedv1.UserDeployment, svc *schedv1.ServiceSpec) *corev1.Service {
	ports := make([]corev1.ServicePort, 0, len(svc.Ports))
	for _, p := range svc.Ports {
		name := p.Name
		if name == "" {
			// A Service with several ports needs every port named.
			name = fmt.Sprintf("%s-%d", strings.ToLower(string(protocol(p))), p.Port)
		}
		ports = append(ports, corev1.ServicePort{Name: name, Port: p.Port, TargetPort: intstr.FromInt32(p.Port), Protocol: protocol(p)})
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: objectMeta(ud, names.ServiceObject(ud.Name, svc.Name), svc.Name),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selectorLabels(ud, svc.Name),
			Ports:    ports,
		},
	}
}

func protocol(p schedv1.ServicePort) corev1.Protocol {
	if p.Protocol == "" {
		return corev1.ProtocolTCP
	}
	return p.Protocol
}
