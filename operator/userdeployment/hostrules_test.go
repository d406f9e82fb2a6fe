package userdeployment

import (
	"cmp"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// TestHostProblem: under the ingress domain an app of namespace ns routes
// only <label>.ns.<domain>; outside it, only what ns's allow-list covers.
func TestHostProblem(t *testing.T) {
	allowed := []string{"shop.example.org", "*.tenant.example.net"}
	cases := map[string]struct {
		host, ns, domain string
		allowed          []string
		want             string // "" when allowed, else a part of the message
	}{
		"own default host":             {host: "shop.evil.apps.test", ns: "evil"},
		"own slot, any label":          {host: "api-v2.evil.apps.test", ns: "evil"},
		"upper case domain setting":    {host: "shop.evil.apps.test", ns: "evil", domain: "Apps.Test."},
		"another namespace's default":  {host: "shop.victim.apps.test", ns: "evil", want: "may only route <label>.evil.apps.test"},
		"the apex":                     {host: "apps.test", ns: "evil", want: "under the ingress domain apps.test"},
		"one label under the apex":     {host: "evil.apps.test", ns: "evil", want: "may only route <label>.evil.apps.test"},
		"two labels in front":          {host: "a.b.evil.apps.test", ns: "evil", want: "one DNS label, then their own namespace"},
		"wildcard of the domain":       {host: "*.apps.test", ns: "evil", want: "is a wildcard"},
		"wildcard of own namespace":    {host: "*.evil.apps.test", ns: "evil", want: "is a wildcard"},
		"wildcard outside, allow-all":  {host: "*.example.org", ns: "evil", allowed: []string{"*.example.org"}, want: "is a wildcard"},
		"namespace in the wrong place": {host: "evil.victim.apps.test", ns: "evil", want: "may only route <label>.evil.apps.test"},
		"suffix without a dot":         {host: "shop.evilapps.test", ns: "evil", want: "not in namespace evil's allow-list (empty)"},
		"outside, no allow-list":       {host: "bank.example.com", ns: "evil", want: "annotation sched.kubectl-sched.dev/allowed-hosts"},
		"outside, exact entry":         {host: "shop.example.org", ns: "evil", allowed: allowed},
		"outside, other host":          {host: "www.example.org", ns: "evil", allowed: allowed, want: "allow-list (shop.example.org, *.tenant.example.net)"},
		"outside, under a pattern":     {host: "a.b.tenant.example.net", ns: "evil", allowed: allowed},
		"outside, the pattern's base":  {host: "tenant.example.net", ns: "evil", allowed: allowed, want: "not in namespace evil's allow-list"},
		"outside, suffix lookalike":    {host: "eviltenant.example.net", ns: "evil", allowed: allowed, want: "not in namespace evil's allow-list"},
		"allow-list cannot open the domain": {host: "shop.victim.apps.test", ns: "evil", allowed: []string{"*.apps.test", "shop.victim.apps.test"},
			want: "may only route <label>.evil.apps.test"},
		"an IP address":  {host: "10.0.0.1", ns: "evil", allowed: []string{"10.0.0.1"}, want: "is an IP address"},
		"a single label": {host: "localhost", ns: "evil", allowed: []string{"localhost"}, want: "not a DNS name of at least two labels"},
		"no domain set":  {host: "shop.evil.example.org", ns: "evil", domain: "-", want: "not in namespace evil's allow-list"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			domain := tc.domain
			switch domain {
			case "":
				domain = "apps.test"
			case "-":
				domain = ""
			}
			got := hostProblem(tc.host, tc.ns, domain, tc.allowed)
			if tc.want == "" {
				if got != "" {
					t.Fatalf("hostProblem(%q) = %q, want allowed", tc.host, got)
				}
				return
			}
			if !strings.Contains(got, tc.want) || !strings.Contains(got, tc.host) {
				t.Errorf("hostProblem(%q) = %q, want it to name the host and say %q", tc.host, got, tc.want)
			}
		})
	}
}

// TestParseAllowedHosts: entries are exact hosts or *.suffix; anything
// else (a bare *, a single label, an IP, rule syntax) allows nothing.
func TestParseAllowedHosts(t *testing.T) {
	got := parseAllowedHosts(" Shop.Example.org, *.tenant.example.net\n,*, *.com,localhost,10.0.0.1, a.example.com`) || Host(`x, *.*.example.org, shop.example.org,a.example.org b.example.org")
	want := []string{"shop.example.org", "*.tenant.example.net"}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("allowed hosts (-want +got):\n%s", diff)
	}
	if got := parseAllowedHosts(""); got != nil {
		t.Errorf("empty annotation: %v", got)
	}
}

// TestClassProblem: the operator's class, or one the admin allowed.
func TestClassProblem(t *testing.T) {
	s := Settings{IngressClass: "nginx", AllowedIngressClasses: []string{"internal"}}
	for class, want := range map[string]string{
		"":         "",
		"nginx":    "",
		"internal": "",
		"traefik":  `spec.ingress.className "traefik" is not an ingress class apps may use here (allowed: nginx, internal): leave it empty for nginx, or ask a cluster admin to add it to --allowed-ingress-classes`,
	} {
		if got := classProblem(class, s); got != want {
			t.Errorf("classProblem(%q) = %q, want %q", class, got, want)
		}
	}
	if got := classProblem("nginx", Settings{}); !strings.Contains(got, "allowed: none besides the default") || !strings.Contains(got, "leave it empty for the cluster's default class") {
		t.Errorf("no class configured: %q", got)
	}
}

// TestTraefikRuleHosts: every string argument of a host matcher counts,
// whatever the case, spacing, quoting or negation; strings cannot hide a
// matcher; other matchers' arguments are not hosts.
func TestTraefikRuleHosts(t *testing.T) {
	cases := map[string]routeHosts{
		"Host(`a.example.com`) && PathPrefix(`/x`)":                   {hosts: []string{"a.example.com"}},
		"Host(`A.Example.com.`) || host (`b.example.com`)":            {hosts: []string{"a.example.com", "b.example.com"}},
		"Host(`a.example.com`, `b.example.com`)":                      {hosts: []string{"a.example.com", "b.example.com"}},
		`Host("a.example.com") && Headers("Host", "x")`:               {hosts: []string{"a.example.com"}},
		"!Host(`a.example.com`)":                                      {hosts: []string{"a.example.com"}},
		"HostSNI(`a.example.com`) || HostHeader(`b.example.com`)":     {hosts: []string{"a.example.com", "b.example.com"}},
		"HostRegexp(`^.+\\.example\\.com$`)":                          {regexps: []string{`^.+\.example\.com$`}},
		`HostRegexp("^.+\\.example\\.com$")`:                          {regexps: []string{`^.+\.example\.com$`}},
		"PathPrefix(`/host(`) && Host(`victim.example.com`)":          {hosts: []string{"victim.example.com"}},
		`Header("k", "a\" ) && ") && Host(` + "`victim.example.com`)": {hosts: []string{"victim.example.com"}},
		"PathPrefix(`/`)": {},
		"Headers(`X-Host`, `a.example.com`) && Path(`/host`)":           {},
		"PathPrefix(`/x`) &&Host(`a.example.com`)&&Method(`GET`)":       {hosts: []string{"a.example.com"}},
		"Host(`a.example.com`":                                          {hosts: []string{"a.example.com"}},
		"Host(`a.example.com`) && (Host(`b.example.com`) || Path(`/`))": {hosts: []string{"a.example.com", "b.example.com"}},
	}
	for rule, want := range cases {
		var got routeHosts
		traefikRuleHosts(rule, &got)
		if diff := gocmp.Diff(want, got, gocmp.AllowUnexported(routeHosts{})); diff != "" {
			t.Errorf("traefikRuleHosts(%s) (-want +got):\n%s", rule, diff)
		}
	}
}

// TestRouteServes: an exact host, the wildcard one label above it, or a
// host regular expression as Traefik v3 or v2 reads it.
func TestRouteServes(t *testing.T) {
	cases := []struct {
		rh   routeHosts
		host string
		want bool
	}{
		{routeHosts{hosts: []string{"shop.example.com"}}, "shop.example.com", true},
		{routeHosts{hosts: []string{"shop.example.com"}}, "www.example.com", false},
		{routeHosts{hosts: []string{"*.example.com"}}, "shop.example.com", true},
		{routeHosts{hosts: []string{"*.example.com"}}, "a.shop.example.com", false},
		{routeHosts{hosts: []string{"*.example.com"}}, "example.com", false},
		{routeHosts{regexps: []string{`^.+\.example\.com$`}}, "shop.example.com", true},
		{routeHosts{regexps: []string{`^.+\.example\.com$`}}, "shop.example.org", false},
		{routeHosts{regexps: []string{`example`}}, "shop.example.org", true}, // unanchored in v3
		{routeHosts{regexps: []string{`{sub:[a-z]+}.example.com`}}, "shop.example.com", true},
		{routeHosts{regexps: []string{`{sub:[a-z]+}.example.com`}}, "shop.example.com.evil", false},
		{routeHosts{regexps: []string{`{sub}.example.com`}}, "shop.example.com", true},
		{routeHosts{regexps: []string{`{sub}.example.com`}}, "shopxexample.com", false},
		{routeHosts{regexps: []string{`(`}}, "shop.example.com", false},
	}
	for _, tc := range cases {
		if got := tc.rh.serves(tc.host); got != tc.want {
			t.Errorf("%+v serves %s = %v, want %v", tc.rh, tc.host, got, tc.want)
		}
	}
}

// TestPlanWithholdsRoutes: a class or host no lookup can allow gets no
// Ingress, IngressRoute or Certificate, and says why; the rest of the app
// is built.
func TestPlanWithholdsRoutes(t *testing.T) {
	s := testSettings
	s.IngressClass, s.ClusterIssuer = "nginx", "letsencrypt"
	public := func() *UserDeploymentWrapper { return app().Service("web", "web:1", 80, schedv1.ExposurePublic) }
	cases := map[string]struct {
		ud                *schedv1.UserDeployment
		provider          string
		reason, inMessage string
	}{
		"another namespace's host": {ud: public().Ingress("shop.victim.apps.test").Obj(),
			reason: schedv1.ReasonHostNotAllowed, inMessage: "host shop.victim.apps.test is under the ingress domain apps.test, where apps of namespace ns may only route <label>.ns.apps.test"},
		"the bare domain, as a Traefik route": {ud: public().Ingress("apps.test").Obj(), provider: "traefik",
			reason: schedv1.ReasonHostNotAllowed, inMessage: "host apps.test is under the ingress domain"},
		"a wildcard stored before the CRD refused it": {ud: public().Ingress("*.apps.test").Obj(),
			reason: schedv1.ReasonHostNotAllowed, inMessage: "is a wildcard"},
		"a class not allowed": {ud: public().Spec(func(s *schedv1.UserDeploymentSpec) { s.Ingress = &schedv1.IngressSpec{ClassName: "public-lb"} }).Obj(),
			reason: schedv1.ReasonIngressClassNotAllowed, inMessage: `spec.ingress.className "public-lb" is not an ingress class apps may use here`},
		"the default host": {ud: public().Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := s
			s.IngressProvider = cmp.Or(tc.provider, "ingress")
			p := buildPlan(tc.ud, s, apis{certificates: true, ingressRoutes: true})
			kinds := map[string]bool{}
			for _, o := range p.objects {
				kinds[o.GetObjectKind().GroupVersionKind().Kind] = true
			}
			routed := kinds["Ingress"] || kinds[ingressRouteGVK.Kind] || kinds[certificateGVK.Kind]
			if tc.reason == "" {
				if !routed || p.routeWithheld.reason != "" || len(p.urls) != 1 {
					t.Fatalf("objects %v, withheld %+v, URLs %v: want a route", objectNames(p), p.routeWithheld, p.urls)
				}
				return
			}
			if routed || len(p.urls) != 0 || p.certificate != "" {
				t.Errorf("objects %v, URLs %v, certificate %q: want no route", objectNames(p), p.urls, p.certificate)
			}
			if !kinds["Deployment"] || !kinds["Service"] {
				t.Errorf("objects %v: the app itself should still be built", objectNames(p))
			}
			if p.routeWithheld.reason != tc.reason || !strings.Contains(p.routeWithheld.message, tc.inMessage) {
				t.Errorf("withheld %+v, want %s saying %q", p.routeWithheld, tc.reason, tc.inMessage)
			}
			st := computeStatus(tc.ud, p, observed{})
			if c := meta.FindStatusCondition(st.Conditions, schedv1.ConditionDegraded); st.Phase != schedv1.UserDeploymentDegraded || c == nil || c.Reason != tc.reason {
				t.Errorf("phase %s, Degraded %+v: want Degraded by %s", st.Phase, c, tc.reason)
			}
		})
	}
}
