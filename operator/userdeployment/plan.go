package userdeployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	"github.com/kubectl-sched/kubectl-sched/api/placement"
	"github.com/kubectl-sched/kubectl-sched/api/settings"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/netpol"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

// Settings are the operator's cluster settings (api/settings), which the
// builders and the host rules read.
type Settings = settings.Values

// plan is everything an app should consist of, derived from its spec and
// the settings alone.
type plan struct {
	// objects in creation order: what the Deployments reference comes first.
	objects []client.Object
	// deployments by service name (also in objects).
	deployments map[string]*appsv1.Deployment
	// held services run zero replicas because a secret they need cannot be
	// provided; the value says why.
	held map[string]string
	urls []string
	// priority is the PriorityMapped condition; Type is empty when the app
	// sets no priority.
	priority metav1.Condition
	// certificate names the app's Certificate, when it has one.
	certificate string
	// certificateProblem says why a public app gets no certificate though
	// the operator could request one.
	certificateProblem string
	// host is the ingress host the app claims; empty when nothing is public.
	host string
	// routeWithheld says why the app gets no route for its host; set by
	// withholdRoute.
	routeWithheld cause
	// invalid says why part of the spec could not be built.
	invalid []string
	// notAllowed services ask for privilege their namespace does not
	// allow (any more), or pass pod annotations of a domain the settings
	// do not allow: they run zero replicas of a restricted template
	// without those annotations (withoutPrivilege); the value says why.
	notAllowed map[string]cause
}

// planFor is ud's plan with the optional APIs a: what its spec asks for,
// less the privilege its namespace does not allow and the pod annotations
// the settings do not (privilege.go).
func (r *Reconciler) planFor(ctx context.Context, ud *schedv1.UserDeployment, a apis) (plan, error) {
	privileged, err := r.privilegeRefused(ctx, ud)
	if err != nil {
		return plan{}, err
	}
	domains := r.Settings.AllowedPodAnnotationDomains
	notAllowed := map[string]cause{}
	for svc, fields := range annotationsRefused(ud, domains) {
		notAllowed[svc] = cause{schedv1.ReasonAnnotationNotAllowed, "not started: " + podsecurity.AnnotationsNotAllowed(fields, domains) +
			"; remove the annotation(s), or ask a cluster admin to allow the domain, and the service starts again"}
	}
	// Privilege first: it is what a service may least have.
	for svc, fields := range privileged {
		notAllowed[svc] = cause{schedv1.ReasonPrivilegedNotAllowed, "not started: " + podsecurity.NotAllowed(ud.Namespace, fields) + "; remove the field(s) and the service starts again"}
	}
	if len(notAllowed) == 0 {
		return buildPlan(ud, r.Settings, a), nil
	}
	p := buildPlan(withoutPrivilege(ud, notAllowed, domains), r.Settings, a)
	p.notAllowed = notAllowed
	return p, nil
}

// defaultPriorityClass gives the pods of the plan's workloads that name
// no PriorityClass the class (the tier's, when the cluster's default class
// is above the tier: its priority quota would refuse them otherwise).
func (p *plan) defaultPriorityClass(class string) {
	if class == "" {
		return
	}
	for _, o := range p.objects {
		var spec *corev1.PodSpec
		switch w := o.(type) {
		case *appsv1.Deployment:
			spec = &w.Spec.Template.Spec
		case *appsv1.StatefulSet:
			spec = &w.Spec.Template.Spec
		}
		if spec != nil && spec.PriorityClassName == "" {
			spec.PriorityClassName = class
		}
	}
}

// buildPlan derives the desired objects of ud.
func buildPlan(ud *schedv1.UserDeployment, s Settings, a apis) plan {
	p := plan{deployments: map[string]*appsv1.Deployment{}, held: map[string]string{}}
	p.priority, _ = placement.PriorityCondition(ud.Spec.Placement, s.PriorityClasses)
	if cm := buildConfigMap(ud); cm != nil {
		p.objects = append(p.objects, cm)
	}
	p.addSecrets(ud, s, a)
	p.addServices(ud, s)
	p.addRoutes(ud, s, a)
	if s.NetworkPolicies {
		if np := buildNetworkPolicy(ud, netpol.Platform{IngressNamespace: s.IngressNamespace, MonitoringNamespace: s.MonitoringNamespace}); np != nil {
			p.objects = append(p.objects, np)
		}
	}
	return p
}

// addSecrets adds an ExternalSecret per secret from an external store,
// and holds back the services of a secret that cannot have one.
func (p *plan) addSecrets(ud *schedv1.UserDeployment, s Settings, a apis) {
	esProblem := externalSecretsProblem(s, a)
	for _, ref := range ud.Spec.Secrets {
		if ref.External == nil {
			continue
		}
		if esProblem != "" {
			for _, svc := range servicesOf(ud, ref) {
				if _, ok := p.held[svc]; !ok {
					p.held[svc] = fmt.Sprintf("not started: secret %q comes from an external store, but %s", ref.Name, esProblem)
				}
			}
			continue
		}
		if problem := externalKeyProblem(ud.Namespace, ref.External.Key, s.ExternalSecretKeyTemplate, s.ExternalSecretReservedPaths); problem != "" {
			// Another tenant's key: no ExternalSecret, and the services that
			// need it wait.
			p.invalid = append(p.invalid, fmt.Sprintf("secret %q: %s", ref.Name, problem))
			for _, svc := range servicesOf(ud, ref) {
				if _, ok := p.held[svc]; !ok {
					p.held[svc] = fmt.Sprintf("not started: secret %q has a key outside this namespace's part of the store", ref.Name)
				}
			}
			continue
		}
		p.objects = append(p.objects, buildExternalSecret(ud, ref, s.ClusterSecretStore))
	}
}

// addServices adds each service's workload (a Deployment, or a
// StatefulSet with volumes) and Service; a stopped app's and a held
// service's run no replicas.
func (p *plan) addServices(ud *schedv1.UserDeployment, s Settings) {
	for i := range ud.Spec.Services {
		svc := &ud.Spec.Services[i]
		replicas := ptr.Deref(svc.Replicas, 1)
		if ud.Spec.State == schedv1.StateStopped || p.held[svc.Name] != "" {
			replicas = 0
		}
		dep := buildDeployment(ud, svc, replicas, s.PriorityClasses)
		if len(svc.Volumes) > 0 {
			sts := statefulSetOf(ud, svc, dep)
			p.deployments[svc.Name] = statefulSetView(sts)
			p.objects = append(p.objects, sts)
		} else {
			p.deployments[svc.Name] = dep
			p.objects = append(p.objects, dep)
		}
		if svc.Exposure != schedv1.ExposureNone {
			p.objects = append(p.objects, buildService(ud, svc))
		}
	}
}

// addRoutes adds what routes the app's public paths (an Ingress or
// IngressRoute, and a Certificate) and their URLs, withholding the route
// by the rules that need no lookup.
func (p *plan) addRoutes(ud *schedv1.UserDeployment, s Settings, a apis) {
	routes := publicRoutes(ud)
	if len(routes) == 0 {
		return
	}
	host := ingressHost(ud, s)
	p.host = host
	tlsSecret := ""
	switch {
	case ud.Spec.Ingress != nil && ud.Spec.Ingress.TLS != nil:
		tlsSecret = ud.Spec.Ingress.TLS.SecretName // given: it wins
	case s.ClusterIssuer == "":
	case !underDomain(host, s.IngressDomain):
		// A ClusterIssuer signs what it is asked to: only hosts under the
		// platform's domain, never one a user merely names.
		p.certificateProblem = fmt.Sprintf("no certificate requested: host %s is not under the ingress domain %s; give spec.ingress.tls.secretName for it", host, s.IngressDomain)
	case !a.certificates:
		p.certificateProblem = fmt.Sprintf("no certificate requested yet: the cluster does not serve %s Certificates, which the operator's --cluster-issuer %s needs; the app gets one, without an operator restart, once cert-manager is installed", certificateGVK.GroupVersion(), s.ClusterIssuer)
	default:
		p.certificate = ud.Name
		tlsSecret = names.TLSSecret(ud.Name)
		p.objects = append(p.objects, buildCertificate(ud, host, tlsSecret, s.ClusterIssuer))
	}
	scheme := "http"
	if tlsSecret != "" {
		scheme = "https"
	}
	for _, r := range routes {
		p.urls = append(p.urls, scheme+"://"+host+r.path)
	}
	if s.IngressProvider == "traefik" && a.ingressRoutes {
		route, err := buildIngressRoute(ud, host, routes, tlsSecret)
		if err != nil {
			p.invalid = append(p.invalid, err.Error())
		} else {
			p.objects = append(p.objects, route)
		}
	} else {
		p.objects = append(p.objects, buildIngress(ud, host, routes, s.IngressClass, tlsSecret))
	}
	// The rules that need no lookup; the Reconciler checks the
	// namespace's allow-list and who holds the host.
	if problem := classProblem(ingressClassOf(ud), s); problem != "" {
		p.withholdRoute(schedv1.ReasonIngressClassNotAllowed, problem)
	} else if problem, _ := domainProblem(host, ud.Namespace, s.IngressDomain); problem != "" {
		p.withholdRoute(schedv1.ReasonHostNotAllowed, problem)
	}
}

// withholdRoute drops what routes the host (Ingress, IngressRoute,
// Certificate): the app may not route it (reason HostNotAllowed,
// IngressClassNotAllowed) or someone else holds it (HostConflict). msg says
// what is wrong and what to do.
func (p *plan) withholdRoute(reason, msg string) {
	kept := p.objects[:0]
	for _, obj := range p.objects {
		switch obj.GetObjectKind().GroupVersionKind().Kind {
		case "Ingress", ingressRouteGVK.Kind, certificateGVK.Kind:
			continue
		}
		kept = append(kept, obj)
	}
	p.objects = kept
	p.urls, p.certificate, p.certificateProblem = nil, "", ""
	p.routeWithheld = cause{reason, msg}
}

// yieldHost withholds the route because holder, an app in another
// namespace, claimed the host first.
func (p *plan) yieldHost(holder string) {
	p.withholdRoute(schedv1.ReasonHostConflict, heldBy(p.host, holder))
}

// heldBy says that holder, an app or route of another namespace, holds
// host, and what to do.
func heldBy(host, holder string) string {
	return fmt.Sprintf("host %s is held by %s of another namespace, which claimed it first; pick another spec.ingress.host (or leave it empty for this app's own default)", host, holder)
}

// leaveReplicasTo drops spec.replicas from the planned workloads that a
// HorizontalPodAutoscaler scales (targets holds their names), so applying
// them does not undo its work. A stopped or held service keeps its zero: an
// autoscaler leaves a workload at zero replicas alone.
func (p *plan) leaveReplicasTo(targets map[string]bool) {
	for _, obj := range p.objects {
		var replicas **int32
		switch w := obj.(type) {
		case *appsv1.Deployment:
			replicas = &w.Spec.Replicas
		case *appsv1.StatefulSet:
			replicas = &w.Spec.Replicas
		default:
			continue
		}
		if !targets[obj.GetName()] || ptr.Deref(*replicas, 0) == 0 {
			continue
		}
		*replicas = nil
		if view := p.deployments[obj.GetLabels()[schedv1.LabelService]]; view != nil {
			view.Spec.Replicas = nil
		}
	}
}
