package userdeployment

import (
	"fmt"
	"regexp"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// Traefik's conventional entry points for HTTP and HTTPS.
const (
	entryPointWeb       = "web"
	entryPointWebSecure = "websecure"
)

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

// safePath is the charset the CRD allows in ingress paths (see
// schedv1.IngressSpec.Path): no quote, backtick, bracket, space or
// operator, so a path cannot end a Traefik string and add a rule of its own.
var safePath = regexp.MustCompile(`^/[A-Za-z0-9._~%/+:@=-]*$`)

// traefikMatch is the IngressRoute rule for host and path prefix. Its
// structure is fixed: anything that could change it is refused rather than
// escaped (Traefik's backtick strings have no escape), which the CRD's
// validation makes the exception: only objects stored before it reach here.
func traefikMatch(host, path string) (string, error) {
	if errs := validation.IsDNS1123Subdomain(host); len(errs) > 0 {
		return "", fmt.Errorf("host %q cannot be routed by Traefik: %v", host, errs)
	}
	if !safePath.MatchString(path) {
		return "", fmt.Errorf("path %q cannot be routed: use only letters, digits and ._~%%/+:@=- after the leading /", path)
	}
	return "Host(`" + host + "`) && PathPrefix(`" + path + "`)", nil
}

// buildCertificate asks cert-manager for a certificate of host, signed by
// the ClusterIssuer, into the Secret the ingress serves.
func buildCertificate(ud *schedv1.UserDeployment, host, secret, issuer string) *unstructured.Unstructured {
	spec := map[string]any{
		"secretName": secret,
		"dnsNames":   []any{host},
		"issuerRef":  map[string]any{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": issuer},
		// cert-manager keeps every CertificateRequest of a Certificate
		// unless told: one per renewal, for as long as the app lives.
		"revisionHistoryLimit": int64(1),
	}
	return unstructuredObject(certificateGVK, objectMeta(ud, ud.Name, ""), spec)
}
