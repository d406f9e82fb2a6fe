package userdeployment

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

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
