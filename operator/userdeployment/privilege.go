package userdeployment

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

// privilegeRefused lists, by service, the fields that ask for privilege
// when the app's namespace is not, or no longer, opted out. Admission
// refuses such a spec from the start; this catches what was admitted while
// an admin's opt-out label was there. The cache decides: should it lag
// behind a new label, the label's event brings the app back.
func (r *Reconciler) privilegeRefused(ctx context.Context, ud *schedv1.UserDeployment) (map[string][]string, error) {
	asked := privilegeAsked(ud)
	if len(asked) == 0 {
		return nil, nil
	}
	allowed, err := podsecurity.AllowsPrivileged(ctx, r.Client, nil, ud.Namespace)
	if err != nil || allowed {
		return nil, err
	}
	return asked, nil
}

// privilegeAsked lists, by service, the fields that ask for what Pod
// Security "restricted" refuses (podsecurity.Violations).
func privilegeAsked(ud *schedv1.UserDeployment) map[string][]string {
	out := map[string][]string{}
	for i := range ud.Spec.Services {
		svc := &ud.Spec.Services[i]
		s := podsecurity.Spec{
			SecurityContext: svc.SecurityContext.Core(),
			Probes:          map[string]*corev1.Probe{"readinessProbe": svc.ReadinessProbe.Core(), "livenessProbe": svc.LivenessProbe.Core()},
		}
		if svc.PodMetadata != nil {
			s.Annotations = svc.PodMetadata.Annotations
		}
		if fields := podsecurity.Violations(fmt.Sprintf("spec.services[%s]", svc.Name), s); len(fields) > 0 {
			out[svc.Name] = fields
		}
	}
	return out
}

// annotationsRefused lists, by service, the pod annotations whose domain
// domains does not allow (podsecurity.DisallowedAnnotations).
func annotationsRefused(ud *schedv1.UserDeployment, domains []string) map[string][]string {
	out := map[string][]string{}
	for i := range ud.Spec.Services {
		svc := &ud.Spec.Services[i]
		if svc.PodMetadata == nil {
			continue
		}
		if fields := podsecurity.DisallowedAnnotations(fmt.Sprintf("spec.services[%s]", svc.Name), svc.PodMetadata.Annotations, domains); len(fields) > 0 {
			out[svc.Name] = fields
		}
	}
	return out
}

// withoutPrivilege is ud with the named services at zero replicas and
// without what asks for privilege or passes annotations of a domain not
// among domains: their workloads keep no such pod template that anyone
// could scale up again. Not restricted and running: the owner asked for
// something else, which might half-work or misbehave without it; they fix
// the spec and the service starts.
func withoutPrivilege[V any](ud *schedv1.UserDeployment, services map[string]V, domains []string) *schedv1.UserDeployment {
	out := ud.DeepCopy()
	for i := range out.Spec.Services {
		svc := &out.Spec.Services[i]
		if _, ok := services[svc.Name]; !ok {
			continue
		}
		svc.Replicas = ptr.To[int32](0)
		svc.SecurityContext = nil
		if svc.PodMetadata != nil {
			maps.DeleteFunc(svc.PodMetadata.Annotations, func(k, v string) bool {
				return podsecurity.LoosensPodSecurity(k, v) || !podsecurity.AnnotationDomainAllowed(k, domains)
			})
		}
		for _, probe := range []*schedv1.Probe{svc.ReadinessProbe, svc.LivenessProbe} {
			if probe != nil && probe.HTTPGet != nil {
				probe.HTTPGet.Host = ""
			}
			if probe != nil && probe.TCPSocket != nil {
				probe.TCPSocket.Host = ""
			}
		}
	}
	return out
}
