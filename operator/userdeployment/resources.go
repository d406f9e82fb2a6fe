package userdeployment

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	"github.com/kubectl-sched/kubectl-sched/api/secretstore"
	"github.com/kubectl-sched/kubectl-sched/api/settings"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/netpol"
	"github.com/kubectl-sched/kubectl-sched/operator/optionalapi"
	"github.com/kubectl-sched/kubectl-sched/operator/placement"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

// Settings are the operator's cluster settings (api/settings), which the
// builders and the host rules read.
type Settings = settings.Values

// apis records which optional APIs the operator uses: the cluster serves
// them and their caches are synced (optional.go).
type apis struct {
	externalSecrets bool
	ingressRoutes   bool
	certificates    bool
}

// has reports whether api is in use.
func (a apis) has(api optionalapi.API) bool { return *a.field(&api) }

// with is a with api in use or not.
func (a apis) with(api optionalapi.API, inUse bool) apis {
	*a.field(&api) = inUse
	return a
}

func (a *apis) field(api *optionalapi.API) *bool {
	switch api.GVK {
	case externalSecretGVK:
		return &a.externalSecrets
	case ingressRouteGVK:
		return &a.ingressRoutes
	case certificateGVK:
		return &a.certificates
	}
	return new(bool)
}

// kinds are the optional kinds in use, which the app's objects may include.
func (a apis) kinds() []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, api := range optionalapi.All {
		if a.has(api) {
			out = append(out, api.GVK)
		}
	}
	return out
}

// Optional APIs, handled as unstructured so the operator needs neither
// project's Go module.
var (
	externalSecretGVK = optionalapi.ExternalSecrets.GVK
	ingressRouteGVK   = optionalapi.Traefik.GVK
	certificateGVK    = optionalapi.CertManager.GVK
)

const (
	// annotationConfigHash on pod templates changes with the app's config, so
	// a config change rolls the pods (environment is read at start only).
	annotationConfigHash = schedv1.GroupName + "/config-hash"
	// Traefik's conventional entry points for HTTP and HTTPS.
	entryPointWeb       = "web"
	entryPointWebSecure = "websecure"
)

// annotationRestartedAt is the pod template annotation kubectl rollout
// restart sets; spec.restartedAt sets it per service.
const annotationRestartedAt = "kubectl.kubernetes.io/restartedAt"

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
	// allow (any more): they run zero replicas of a restricted template
	// (withoutPrivilege); the value says why.
	notAllowed map[string]string
}

// buildPlan derives the desired objects of ud.
func buildPlan(ud *schedv1.UserDeployment, s Settings, a apis) plan {
	p := plan{deployments: map[string]*appsv1.Deployment{}, held: map[string]string{}}
	p.priority, _ = placement.PriorityCondition(ud.Spec.Placement, s.PriorityClasses)
	if cm := buildConfigMap(ud); cm != nil {
		p.objects = append(p.objects, cm)
	}
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
	if routes := publicRoutes(ud); len(routes) > 0 {
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
	if s.NetworkPolicies {
		if np := buildNetworkPolicy(ud, netpol.Platform{IngressNamespace: s.IngressNamespace, MonitoringNamespace: s.MonitoringNamespace}); np != nil {
			p.objects = append(p.objects, np)
		}
	}
	return p
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

// withoutPrivilege is ud with the named services at zero replicas and
// without what asks for privilege: their workloads keep no privileged pod
// template that anyone could scale up again. Not restricted and running:
// the owner asked for something else, which might half-work or misbehave
// in a restricted pod; they fix the spec and the service starts.
func withoutPrivilege(ud *schedv1.UserDeployment, services map[string][]string) *schedv1.UserDeployment {
	out := ud.DeepCopy()
	for i := range out.Spec.Services {
		svc := &out.Spec.Services[i]
		if _, ok := services[svc.Name]; !ok {
			continue
		}
		svc.Replicas = ptr.To[int32](0)
		svc.SecurityContext = nil
		if svc.PodMetadata != nil {
			maps.DeleteFunc(svc.PodMetadata.Annotations, podsecurity.LoosensPodSecurity)
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

// externalKeyProblem says why an app in ns may not read key from the shared
// store, or "" when it may: keys start with the namespace's prefix, no ".."
// segment climbs out of it, and the prefix covers no reserved path (a
// namespace named like the store's mount would reach every key, as External
// Secrets strips the mount from a key that starts with it).
func externalKeyProblem(ns, key, template string, reserved []string) string {
	if template == "" {
		return ""
	}
	prefix := secretstore.Prefix(template, ns)
	if r := secretstore.Covered(prefix, reserved); r != "" {
		return fmt.Sprintf("namespace %s may not read the shared store: its part, %q, would cover %q, which the store keeps for itself or for shared secrets (the operator's --external-secret-reserved-paths); a cluster admin must move the app to another namespace", ns, prefix, r)
	}
	if secretstore.Outside(key, prefix) {
		return fmt.Sprintf("key %q is outside this namespace's part of the secret store: external keys must start with %q (the operator's --external-secret-key-template)", key, prefix)
	}
	return ""
}

// externalSecretsProblem says why external secret references cannot be
// honoured, or "" when they can.
func externalSecretsProblem(s Settings, a apis) string {
	switch {
	case !a.externalSecrets:
		return "the cluster does not serve external-secrets.io/v1 ExternalSecrets (install External Secrets; the service starts once it is served, without restarting the operator)"
	case s.ClusterSecretStore == "":
		return "the operator has no ClusterSecretStore configured (--cluster-secret-store)"
	}
	return ""
}

// servicesOf lists the services that receive a secret: those named, or all.
func servicesOf(ud *schedv1.UserDeployment, ref schedv1.SecretReference) []string {
	if len(ref.Services) > 0 {
		return ref.Services
	}
	out := make([]string, 0, len(ud.Spec.Services))
	for _, s := range ud.Spec.Services {
		out = append(out, s.Name)
	}
	return out
}

// receivesSecrets reports whether any secret reference reaches the service.
func receivesSecrets(ud *schedv1.UserDeployment, service string) bool {
	return slices.ContainsFunc(ud.Spec.Secrets, func(ref schedv1.SecretReference) bool {
		return slices.Contains(servicesOf(ud, ref), service)
	})
}

// objectLabels mark what the operator manages (its caches select on them)
// and which app and service an object belongs to.
func objectLabels(ud *schedv1.UserDeployment, service string) map[string]string {
	l := map[string]string{
		schedv1.LabelManagedBy:      schedv1.ManagedByValue,
		schedv1.LabelUserDeployment: ud.Name,
	}
	if service != "" {
		l[schedv1.LabelService] = service
	}
	return l
}

// selectorLabels pick one service's pods. They never change, since a
// Deployment's selector is immutable.
func selectorLabels(ud *schedv1.UserDeployment, service string) map[string]string {
	return map[string]string{schedv1.LabelUserDeployment: ud.Name, schedv1.LabelService: service}
}

func objectMeta(ud *schedv1.UserDeployment, name, service string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       ud.Namespace,
		Labels:          objectLabels(ud, service),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ud, schedv1.GroupVersion.WithKind("UserDeployment"))},
	}
}

func buildConfigMap(ud *schedv1.UserDeployment) *corev1.ConfigMap {
	if len(ud.Spec.Config) == 0 {
		return nil
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: objectMeta(ud, names.ConfigMap(ud.Name), ""),
		Data:       maps.Clone(ud.Spec.Config),
	}
}

func buildDeployment(ud *schedv1.UserDeployment, svc *schedv1.ServiceSpec, replicas int32, priorityClasses map[string]string) *appsv1.Deployment {
	podLabels, podAnnotations := map[string]string{}, map[string]string{}
	if svc.PodMetadata != nil {
		maps.Copy(podLabels, svc.PodMetadata.Labels)
		maps.Copy(podAnnotations, svc.PodMetadata.Annotations)
	}
	// Ours win: the managed-by label keeps the pods in the operator's cache.
	maps.Copy(podLabels, objectLabels(ud, svc.Name))
	if len(ud.Spec.Config) > 0 {
		podAnnotations[annotationConfigHash] = configHash(ud.Spec.Config)
	}
	if h := ud.Annotations[schedv1.AnnotationSecretHash]; h != "" && receivesSecrets(ud, svc.Name) {
		podAnnotations[schedv1.AnnotationSecretHash] = h
	}
	if at := ud.Spec.RestartedAt[svc.Name]; at != "" {
		// kubectl rollout restart's annotation: a new value rolls the pods.
		podAnnotations[annotationRestartedAt] = at
	}
	if len(podAnnotations) == 0 {
		podAnnotations = nil
	}

	c := corev1.Container{
		Name:            svc.Name,
		Image:           svc.Image,
		Command:         svc.Command,
		Args:            svc.Args,
		Resources:       svc.Resources.Core(),
		ReadinessProbe:  svc.ReadinessProbe.Core(),
		LivenessProbe:   svc.LivenessProbe.Core(),
		SecurityContext: podsecurity.Container(svc.SecurityContext.Core()),
		// A container that crashes without writing /dev/termination-log
		// leaves the end of its log there instead, and the app's status
		// shows it (podstatus.Cause).
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	for _, p := range svc.Ports {
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port, Protocol: protocol(p)})
	}
	if len(ud.Spec.Config) > 0 {
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{
			ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: names.ConfigMap(ud.Name)}},
		})
	}
	var volumes []corev1.Volume
	for _, ref := range ud.Spec.Secrets {
		if !slices.Contains(servicesOf(ud, ref), svc.Name) {
			continue
		}
		secret := ref.SecretName
		if ref.External != nil {
			secret = names.ExternalSecret(ud.Name, ref.Name)
		}
		if ref.MountPath != "" {
			vol := "secret-" + ref.Name
			volumes = append(volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: vol, MountPath: ref.MountPath, ReadOnly: true})
			continue
		}
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{
			Prefix:    ref.EnvPrefix,
			SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret}},
		})
	}
	for _, e := range svc.Env {
		c.Env = append(c.Env, corev1.EnvVar{Name: e.Name, Value: e.Value, ValueFrom: e.ValueFrom})
	}

	spec := corev1.PodSpec{
		Containers:         []corev1.Container{c},
		Volumes:            volumes,
		ServiceAccountName: svc.ServiceAccountName,
		ImagePullSecrets:   svc.ImagePullSecrets,
		SecurityContext:    podsecurity.Pod(),
	}
	selector := selectorLabels(ud, svc.Name)
	placement.Apply(&spec, ud.Spec.Placement, selector, priorityClasses)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: objectMeta(ud, names.ServiceObject(ud.Name, svc.Name), svc.Name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			// The app's deadline, so the Deployment's own Progressing
			// condition agrees with the app's.
			ProgressDeadlineSeconds: ptr.To(deadlineSeconds(ud.Spec.Deadline())),
			Selector:                &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: podAnnotations},
				Spec:       spec,
			},
		},
	}
}

// deadlineSeconds is d in whole seconds, rounded up.
func deadlineSeconds(d time.Duration) int32 {
	return int32((d + time.Second - 1) / time.Second)
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

// statefulSetOf runs a service with volumes: the Deployment's pod template
// with a claim per volume and replica. A StatefulSet rather than a
// Deployment with one claim: each replica gets its own volume, and a
// rollout never waits on a ReadWriteOnce volume still attached to the pod
// it replaces. Pods start and stop in parallel, as a Deployment's do, and
// the claims are kept when the service scales to zero (stop) or the app is
// deleted.
func statefulSetOf(ud *schedv1.UserDeployment, svc *schedv1.ServiceSpec, dep *appsv1.Deployment) *appsv1.StatefulSet {
	tmpl := *dep.Spec.Template.DeepCopy()
	var claims []corev1.PersistentVolumeClaim
	for _, v := range svc.Volumes {
		claim := corev1.PersistentVolumeClaim{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: metav1.ObjectMeta{Name: v.Name, Labels: objectLabels(ud, svc.Name)},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: v.Size}},
			},
		}
		if v.StorageClass != "" {
			claim.Spec.StorageClassName = ptr.To(v.StorageClass)
		}
		claims = append(claims, claim)
		tmpl.Spec.Containers[0].VolumeMounts = append(tmpl.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: v.MountPath})
	}
	// The non-root default user can write its volumes.
	tmpl.Spec.SecurityContext.FSGroup = ptr.To[int64](podsecurity.NonRootUID)
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: dep.ObjectMeta,
		Spec: appsv1.StatefulSetSpec{
			Replicas:             dep.Spec.Replicas,
			Selector:             dep.Spec.Selector,
			ServiceName:          dep.Name,
			Template:             tmpl,
			VolumeClaimTemplates: claims,
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
		},
	}
}

// statefulSetView shows a StatefulSet as the Deployment fields the status
// reads (replicas wanted, observed, updated, ready, available), which mean
// the same for both.
func statefulSetView(sts *appsv1.StatefulSet) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: sts.ObjectMeta,
		Spec:       appsv1.DeploymentSpec{Replicas: sts.Spec.Replicas},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: sts.Status.ObservedGeneration,
			Replicas:           sts.Status.Replicas,
			UpdatedReplicas:    sts.Status.UpdatedReplicas,
			ReadyReplicas:      sts.Status.ReadyReplicas,
			AvailableReplicas:  sts.Status.AvailableReplicas,
		},
	}
}

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

// route sends a path of the ingress host to one public service.
type route struct {
	path    string
	service string // the Service object's name
	port    int32
}

// publicRoutes lists the public services' paths: a service's ingressPath;
// else the ingress path when it is the only public service; else /<name>.
func publicRoutes(ud *schedv1.UserDeployment) []route {
	var public []*schedv1.ServiceSpec
	for i := range ud.Spec.Services {
		if ud.Spec.Services[i].Exposure == schedv1.ExposurePublic {
			public = append(public, &ud.Spec.Services[i])
		}
	}
	routes := make([]route, 0, len(public))
	for _, svc := range public {
		path := svc.IngressPath
		switch {
		case path != "":
		case len(public) == 1 && ud.Spec.Ingress != nil && ud.Spec.Ingress.Path != "":
			path = ud.Spec.Ingress.Path
		case len(public) == 1:
			path = "/"
		default:
			path = "/" + svc.Name
		}
		routes = append(routes, route{path: path, service: names.ServiceObject(ud.Name, svc.Name), port: svc.Ports[0].Port})
	}
	return routes
}

// ingressClassOf is the class the spec names, "" for the default.
func ingressClassOf(ud *schedv1.UserDeployment) string {
	if ud.Spec.Ingress == nil {
		return ""
	}
	return ud.Spec.Ingress.ClassName
}

// ingressHost is the spec's host or <name>.<namespace>.<domain>.
func ingressHost(ud *schedv1.UserDeployment, s Settings) string {
	if ud.Spec.Ingress != nil && ud.Spec.Ingress.Host != "" {
		return ud.Spec.Ingress.Host
	}
	return names.HostPrefix(ud.Name, ud.Namespace) + "." + normalDomain(s.IngressDomain)
}

// buildCertificate asks cert-manager for a certificate of host, signed by
// the ClusterIssuer, into the Secret the ingress serves.
func buildCertificate(ud *schedv1.UserDeployment, host, secret, issuer string) *unstructured.Unstructured {
	spec := map[string]any{
		"secretName": secret,
		"dnsNames":   []any{host},
		"issuerRef":  map[string]any{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": issuer},
	}
	return unstructuredObject(certificateGVK, objectMeta(ud, ud.Name, ""), spec)
}

// buildIngress routes the host; tlsSecret holds its certificate (none when
// empty).
func buildIngress(ud *schedv1.UserDeployment, host string, routes []route, defaultClass, tlsSecret string) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: objectMeta(ud, ud.Name, ""),
	}
	class := defaultClass
	if ud.Spec.Ingress != nil && ud.Spec.Ingress.ClassName != "" {
		class = ud.Spec.Ingress.ClassName
	}
	if class != "" {
		ing.Spec.IngressClassName = ptr.To(class)
	}
	if tlsSecret != "" {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: tlsSecret}}
	}
	paths := make([]networkingv1.HTTPIngressPath, 0, len(routes))
	for _, r := range routes {
		paths = append(paths, networkingv1.HTTPIngressPath{
			Path:     r.path,
			PathType: ptr.To(networkingv1.PathTypePrefix),
			Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
				Name: r.service, Port: networkingv1.ServiceBackendPort{Number: r.port},
			}},
		})
	}
	ing.Spec.Rules = []networkingv1.IngressRule{{
		Host:             host,
		IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths}},
	}}
	return ing
}

// buildIngressRoute is Traefik's equivalent of buildIngress. Values are
// JSON types (int64, []any) so they compare equal to what the server returns.
func buildIngressRoute(ud *schedv1.UserDeployment, host string, routes []route, tlsSecret string) (*unstructured.Unstructured, error) {
	rules := make([]any, 0, len(routes))
	for _, r := range routes {
		match, err := traefikMatch(host, r.path)
		if err != nil {
			return nil, err
		}
		rules = append(rules, map[string]any{
			"kind":     "Rule",
			"match":    match,
			"services": []any{map[string]any{"name": r.service, "port": int64(r.port)}},
		})
	}
	spec := map[string]any{"entryPoints": []any{entryPointWeb}, "routes": rules}
	if tlsSecret != "" {
		spec["entryPoints"] = []any{entryPointWebSecure}
		spec["tls"] = map[string]any{"secretName": tlsSecret}
	}
	return unstructuredObject(ingressRouteGVK, objectMeta(ud, ud.Name, ""), spec), nil
}

// buildExternalSecret asks External Secrets to sync one key of the store
// into the Secret <app>-<name>, owned by the ExternalSecret so it goes too.
// A target template, even one that only names the type, keeps External
// Secrets from copying the ExternalSecret's labels onto the Secret: they
// are the operator's reserved labels, which External Secrets' account may
// not set (config/policy/reserved_labels.yaml).
func buildExternalSecret(ud *schedv1.UserDeployment, ref schedv1.SecretReference, store string) *unstructured.Unstructured {
	name := names.ExternalSecret(ud.Name, ref.Name)
	spec := map[string]any{
		"secretStoreRef": map[string]any{"kind": "ClusterSecretStore", "name": store},
		"target":         map[string]any{"name": name, "creationPolicy": "Owner", "template": map[string]any{"type": "Opaque"}},
	}
	if ref.External.Property != "" {
		spec["data"] = []any{map[string]any{
			"secretKey": ref.External.Property,
			"remoteRef": map[string]any{"key": ref.External.Key, "property": ref.External.Property},
		}}
	} else {
		spec["dataFrom"] = []any{map[string]any{"extract": map[string]any{"key": ref.External.Key}}}
	}
	return unstructuredObject(externalSecretGVK, objectMeta(ud, name, ""), spec)
}

func unstructuredObject(gvk schema.GroupVersionKind, m metav1.ObjectMeta, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetName(m.Name)
	u.SetNamespace(m.Namespace)
	u.SetLabels(m.Labels)
	u.SetOwnerReferences(m.OwnerReferences)
	return u
}

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

// configHash is a short digest of the config, independent of map order.
func configHash(config map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(config)) {
		fmt.Fprintf(h, "%s=%s\x00", k, config[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
