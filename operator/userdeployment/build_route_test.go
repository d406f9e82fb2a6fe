package userdeployment

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func TestBuildIngress(t *testing.T) {
	prefix := ptr.To(networkingv1.PathTypePrefix)
	backend := func(name string, port int32) networkingv1.IngressBackend {
		return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Number: port}}}
	}
	cases := map[string]struct {
		ud             *schedv1.UserDeployment
		defaultClass   string
		allowedClasses []string
		want           networkingv1.IngressSpec
	}{
		"one public service at the ingress path": {
			ud: app().Service("web", "web:1", 80, schedv1.ExposurePublic).Service("api", "api:1", 8080, schedv1.ExposureInternal).
				Spec(func(s *schedv1.UserDeploymentSpec) { s.Ingress = &schedv1.IngressSpec{Path: "/shop"} }).Obj(),
			defaultClass: "nginx",
			want: networkingv1.IngressSpec{
				IngressClassName: ptr.To("nginx"),
				Rules: []networkingv1.IngressRule{{Host: "shop.ns.apps.test", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{Path: "/shop", PathType: prefix, Backend: backend("shop-web", 80)}},
				}}}},
			},
		},
		"several public services, TLS, class and paths from the spec": {
			ud: app().Service("web", "web:1", 80, schedv1.ExposurePublic).Service("api", "api:1", 8080, schedv1.ExposurePublic).
				EditService("web", func(s *schedv1.ServiceSpec) { s.IngressPath = "/" }).
				Ingress("shop.example.com").TLS("shop-tls").
				Spec(func(s *schedv1.UserDeploymentSpec) { s.Ingress.ClassName = "traefik" }).Obj(),
			defaultClass:   "nginx",
			allowedClasses: []string{"traefik"},
			want: networkingv1.IngressSpec{
				IngressClassName: ptr.To("traefik"),
				TLS:              []networkingv1.IngressTLS{{Hosts: []string{"shop.example.com"}, SecretName: "shop-tls"}},
				Rules: []networkingv1.IngressRule{{Host: "shop.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{
						{Path: "/", PathType: prefix, Backend: backend("shop-web", 80)},
						{Path: "/api", PathType: prefix, Backend: backend("shop-api", 8080)},
					},
				}}}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := testSettings
			s.IngressClass, s.AllowedIngressClasses = tc.defaultClass, tc.allowedClasses
			p := buildPlan(tc.ud, s, apis{})
			var got *networkingv1.Ingress
			for _, o := range p.objects {
				if ing, ok := o.(*networkingv1.Ingress); ok {
					got = ing
				}
			}
			if got == nil {
				t.Fatalf("no Ingress in %v", objectNames(p))
			}
			if diff := cmp.Diff(wantMeta("shop", ""), got.ObjectMeta); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, got.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildIngressRoute(t *testing.T) {
	ud := app().Service("web", "web:1", 80, schedv1.ExposurePublic).Service("api", "api:1", 8080, schedv1.ExposurePublic).TLS("shop-tls").Obj()
	got, err := buildIngressRoute(ud, "shop.example.com", publicRoutes(ud), "shop-tls")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"entryPoints": []any{"websecure"},
		"tls":         map[string]any{"secretName": "shop-tls"},
		"routes": []any{
			map[string]any{"kind": "Rule", "match": "Host(`shop.example.com`) && PathPrefix(`/web`)", "services": []any{map[string]any{"name": "shop-web", "port": int64(80)}}},
			map[string]any{"kind": "Rule", "match": "Host(`shop.example.com`) && PathPrefix(`/api`)", "services": []any{map[string]any{"name": "shop-api", "port": int64(8080)}}},
		},
	}
	if diff := cmp.Diff(want, got.Object["spec"]); diff != "" {
		t.Errorf("IngressRoute spec (-want +got):\n%s", diff)
	}
	if got.GetAPIVersion() != "traefik.io/v1alpha1" || got.GetKind() != "IngressRoute" || got.GetName() != "shop" {
		t.Errorf("IngressRoute is %s %s %s", got.GetAPIVersion(), got.GetKind(), got.GetName())
	}
}

// TestDefaultHostsAreUniquePerNamespace: app a-b in c and app a in b-c
// once shared a-b-c.<domain>.
func TestDefaultHostsAreUniquePerNamespace(t *testing.T) {
	one := ingressHost(MakeUserDeployment("a-b", "c").Service("web", "web:1", 80, schedv1.ExposurePublic).Obj(), testSettings)
	two := ingressHost(MakeUserDeployment("a", "b-c").Service("web", "web:1", 80, schedv1.ExposurePublic).Obj(), testSettings)
	if one == two {
		t.Errorf("apps in different namespaces share the default host %s", one)
	}
	if one != "a-b.c.apps.test" || two != "a.b-c.apps.test" {
		t.Errorf("hosts %s and %s, want a-b.c.apps.test and a.b-c.apps.test", one, two)
	}
}

func TestDefaultHostFitsADNSLabel(t *testing.T) {
	ud := MakeUserDeployment("a-rather-long-application-name-for-a-shop-front", "a-team-namespace-that-is-long-too").
		Service("web", "web:1", 80, schedv1.ExposurePublic).Obj()
	host := ingressHost(ud, testSettings)
	if errs := validation.IsDNS1123Subdomain(host); len(errs) > 0 {
		t.Errorf("host %q: %v", host, errs)
	}
}

// TestCertificatePlan: with cert-manager and a ClusterIssuer a public app
// gets a Certificate for its host, served by the ingress; a given TLS Secret
// wins; a host outside the platform's domain gets none, and says so, as
// does an app waiting for cert-manager.
func TestCertificatePlan(t *testing.T) {
	withIssuer := testSettings
	withIssuer.ClusterIssuer = "letsencrypt"
	public := func() *UserDeploymentWrapper { return app().Service("web", "web:1", 80, schedv1.ExposurePublic) }
	cases := map[string]struct {
		ud      *schedv1.UserDeployment
		s       Settings
		a       apis
		cert    map[string]any // the Certificate's spec; nil for none
		tls     string         // the Ingress's TLS Secret
		url     string
		problem bool
	}{
		"issued by the ClusterIssuer": {ud: public().Obj(), s: withIssuer, a: apis{certificates: true},
			cert: map[string]any{"secretName": "shop.tls", "dnsNames": []any{"shop.ns.apps.test"}, "issuerRef": map[string]any{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "letsencrypt"}, "revisionHistoryLimit": int64(1)},
			tls:  "shop.tls", url: "https://shop.ns.apps.test/"},
		"a custom host in the namespace's part of the domain": {ud: public().Spec(func(s *schedv1.UserDeploymentSpec) { s.Ingress = &schedv1.IngressSpec{Host: "www.ns.apps.test"} }).Obj(), s: withIssuer, a: apis{certificates: true},
			cert: map[string]any{"secretName": "shop.tls", "dnsNames": []any{"www.ns.apps.test"}, "issuerRef": map[string]any{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "letsencrypt"}, "revisionHistoryLimit": int64(1)},
			tls:  "shop.tls", url: "https://www.ns.apps.test/"},
		// No certificate (and no route) for what the app may not route.
		"the bare domain":          {ud: public().Spec(func(s *schedv1.UserDeploymentSpec) { s.Ingress = &schedv1.IngressSpec{Host: "apps.test"} }).Obj(), s: withIssuer, a: apis{certificates: true}},
		"another namespace's host": {ud: public().Spec(func(s *schedv1.UserDeploymentSpec) { s.Ingress = &schedv1.IngressSpec{Host: "shop.victim.apps.test"} }).Obj(), s: withIssuer, a: apis{certificates: true}},
		"a given secret wins":      {ud: public().TLS("mine").Obj(), s: withIssuer, a: apis{certificates: true}, tls: "mine", url: "https://shop.ns.apps.test/"},
		"host outside the domain": {ud: public().Spec(func(s *schedv1.UserDeploymentSpec) { s.Ingress = &schedv1.IngressSpec{Host: "bank.example.com"} }).Obj(), s: withIssuer, a: apis{certificates: true},
			url: "http://bank.example.com/", problem: true},
		// Said in CertificateReady until cert-manager is installed.
		"no cert-manager":  {ud: public().Obj(), s: withIssuer, url: "http://shop.ns.apps.test/", problem: true},
		"no ClusterIssuer": {ud: public().Obj(), s: testSettings, a: apis{certificates: true}, url: "http://shop.ns.apps.test/"},
		"not public":       {ud: app().Service("api", "api:1", 80, schedv1.ExposureInternal).Obj(), s: withIssuer, a: apis{certificates: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := buildPlan(tc.ud, tc.s, tc.a)
			var cert map[string]any
			var tls string
			for _, o := range p.objects {
				switch obj := o.(type) {
				case *unstructured.Unstructured:
					if obj.GetKind() == "Certificate" {
						cert, _ = obj.Object["spec"].(map[string]any)
						if !metav1.IsControlledBy(obj, tc.ud) {
							t.Errorf("Certificate owners %v", obj.GetOwnerReferences())
						}
					}
				case *networkingv1.Ingress:
					for _, x := range obj.Spec.TLS {
						tls = x.SecretName
					}
				}
			}
			if diff := cmp.Diff(tc.cert, cert); diff != "" {
				t.Errorf("Certificate spec (-want +got):\n%s", diff)
			}
			if tls != tc.tls {
				t.Errorf("Ingress TLS secret %q, want %q", tls, tc.tls)
			}
			if got := strings.Join(p.urls, ","); got != tc.url {
				t.Errorf("urls %q, want %q", got, tc.url)
			}
			if (p.certificateProblem != "") != tc.problem {
				t.Errorf("certificate problem %q", p.certificateProblem)
			}
		})
	}
}

// ruleShape is the only rule traefikMatch may produce: one Host and one
// PathPrefix, each a backtick string without backticks inside.
var ruleShape = regexp.MustCompile("^Host\\(`[a-z0-9.-]+`\\) && PathPrefix\\(`/[^`]*`\\)$")

func checkMatch(t *testing.T, host, path string) {
	t.Helper()
	got, err := traefikMatch(host, path)
	if err != nil {
		if !strings.Contains(err.Error(), "cannot be routed") {
			t.Errorf("traefikMatch(%q, %q) error %q does not say what is wrong", host, path, err)
		}
		return
	}
	if !ruleShape.MatchString(got) {
		t.Fatalf("traefikMatch(%q, %q) = %q: the input changed the rule's structure", host, path, got)
	}
	if want := "Host(`" + host + "`) && PathPrefix(`" + path + "`)"; got != want {
		t.Fatalf("traefikMatch(%q, %q) = %q, want %q", host, path, got, want)
	}
	for _, op := range []string{"||", "!", "(", ")", "\"", " "} {
		if strings.Contains(path, op) {
			t.Fatalf("path %q with %q was accepted", path, op)
		}
	}
}

func TestTraefikMatchRefusesHostilePaths(t *testing.T) {
	hostile := []string{
		"/x`) || PathPrefix(`/",
		"/x`) || Host(`evil.example.com",
		"/x\") || PathPrefix(\"/",
		"/a b",
		"/(",
		"/x`",
		"/x\n",
		"/%60",
		"",
		"x",
	}
	for _, p := range hostile {
		checkMatch(t, "shop.default.apps.test", p)
	}
	if _, err := traefikMatch("shop.default.apps.test", "/x`) || PathPrefix(`/"); err == nil {
		t.Errorf("the issue's example path was accepted")
	}
	if _, err := traefikMatch("evil`) || Host(`x", "/"); err == nil {
		t.Errorf("a host with rule syntax was accepted")
	}
	for _, ok := range []string{"/", "/api", "/v1/items", "/a.b~c_d-e%20f+g:h@i=j"} {
		if _, err := traefikMatch("shop.default.apps.test", ok); err != nil {
			t.Errorf("path %q refused: %v", ok, err)
		}
	}
}

// TestTraefikMatchRandomPaths throws paths built from rule syntax at the
// builder; a fixed seed keeps failures reproducible.
func TestTraefikMatchRandomPaths(t *testing.T) {
	pieces := []string{"/", "`", ")", "(", "||", "&&", "!", "\"", " ", "Host", "PathPrefix", "a", "-", ".", "%", "\\", "\n", "é", "{", "}"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for n := r.IntN(8); n >= 0; n-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		checkMatch(t, "shop.default.apps.test", b.String())
	}
}

// FuzzTraefikMatch: `go test -fuzz FuzzTraefikMatch ./operator/userdeployment/`
// searches further; plain `go test` runs the seeds.
func FuzzTraefikMatch(f *testing.F) {
	for _, s := range []string{"/", "/x`) || PathPrefix(`/", "/a\"b", "/%2F"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) { checkMatch(t, "shop.default.apps.test", path) })
}

// TestPlanWithAnUnroutablePath: an object stored before the CRD refused
// such paths gets no IngressRoute and an InvalidSpec cause, not a rule an
// attacker wrote.
func TestPlanWithAnUnroutablePath(t *testing.T) {
	ud := app().Service("web", "web:1", 80, schedv1.ExposurePublic).
		EditService("web", func(s *schedv1.ServiceSpec) { s.IngressPath = "/x`) || PathPrefix(`/" }).Obj()
	s := testSettings
	s.IngressProvider = "traefik"
	p := buildPlan(ud, s, apis{ingressRoutes: true})
	for _, o := range p.objects {
		if o.GetObjectKind().GroupVersionKind().Kind == ingressRouteGVK.Kind {
			t.Fatalf("an IngressRoute was planned: %v", o)
		}
	}
	if len(p.invalid) != 1 || !strings.Contains(p.invalid[0], "cannot be routed") {
		t.Errorf("invalid = %q, want the path named", p.invalid)
	}
}
