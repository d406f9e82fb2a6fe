package userdeployment

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

var testSettings = Settings{
	IngressDomain:    "apps.test",
	IngressProvider:  "ingress",
	IngressNamespace: "ingress-nginx",
	NetworkPolicies:  true,
}

func app() *UserDeploymentWrapper {
	return MakeUserDeployment("shop", "ns").Meta(func(m *metav1.ObjectMeta) { m.UID = "uid-1"; m.Generation = 1 })
}

var ownerRefs = []metav1.OwnerReference{{
	APIVersion: schedv1.GroupVersion.String(), Kind: "UserDeployment", Name: "shop", UID: "uid-1",
	Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
}}

func wantMeta(name, service string) metav1.ObjectMeta {
	l := map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelUserDeployment: "shop"}
	if service != "" {
		l[schedv1.LabelService] = service
	}
	return metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: l, OwnerReferences: ownerRefs}
}

// objectNames lists a plan's objects as "Kind name".
func objectNames(p plan) []string {
	var out []string
	for _, o := range p.objects {
		out = append(out, o.GetObjectKind().GroupVersionKind().Kind+" "+o.GetName())
	}
	return out
}

func TestBuildPlan(t *testing.T) {
	cases := map[string]struct {
		ud       *schedv1.UserDeployment
		settings func(*Settings)
		apis     apis
		want     []string
		held     map[string]string
		urls     []string
		replicas map[string]int32
	}{
		"internal and worker services": {
			ud:       app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Service("worker", "worker:1", 0, schedv1.ExposureNone).Replicas("api", 3).Obj(),
			want:     []string{"Deployment shop-api", "Service shop-api", "Deployment shop-worker", "NetworkPolicy shop"},
			replicas: map[string]int32{"api": 3, "worker": 1},
		},
		"config comes first": {
			ud:   app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Config("MODE", "fast").Obj(),
			want: []string{"ConfigMap shop-config", "Deployment shop-api", "Service shop-api", "NetworkPolicy shop"},
		},
		"stopped scales to zero and keeps the rest": {
			ud:       app().Service("web", "web:1", 80, schedv1.ExposurePublic).Replicas("web", 2).State(schedv1.StateStopped).Obj(),
			want:     []string{"Deployment shop-web", "Service shop-web", "Ingress shop", "NetworkPolicy shop"},
			urls:     []string{"http://shop.ns.apps.test/"},
			replicas: map[string]int32{"web": 0},
		},
		"two public services with TLS": {
			ud:   app().Service("web", "web:1", 80, schedv1.ExposurePublic).Service("api", "api:1", 8080, schedv1.ExposurePublic).TLS("shop-tls").Obj(),
			want: []string{"Deployment shop-web", "Service shop-web", "Deployment shop-api", "Service shop-api", "Ingress shop", "NetworkPolicy shop"},
			urls: []string{"https://shop.ns.apps.test/web", "https://shop.ns.apps.test/api"},
		},
		"host from the spec": {
			ud:   app().Service("web", "web:1", 80, schedv1.ExposurePublic).Ingress("shop.example.com").Obj(),
			want: []string{"Deployment shop-web", "Service shop-web", "Ingress shop", "NetworkPolicy shop"},
			urls: []string{"http://shop.example.com/"},
		},
		"traefik when served": {
			ud:       app().Service("web", "web:1", 80, schedv1.ExposurePublic).Obj(),
			settings: func(s *Settings) { s.IngressProvider = "traefik" },
			apis:     apis{ingressRoutes: true},
			want:     []string{"Deployment shop-web", "Service shop-web", "IngressRoute shop", "NetworkPolicy shop"},
			urls:     []string{"http://shop.ns.apps.test/"},
		},
		"traefik chosen but not served falls back to an Ingress": {
			ud:       app().Service("web", "web:1", 80, schedv1.ExposurePublic).Obj(),
			settings: func(s *Settings) { s.IngressProvider = "traefik" },
			want:     []string{"Deployment shop-web", "Service shop-web", "Ingress shop", "NetworkPolicy shop"},
			urls:     []string{"http://shop.ns.apps.test/"},
		},
		"external secret with a store and the API": {
			ud:       app().Service("api", "api:1", 8080, schedv1.ExposureInternal).ExternalSecretRef("db", "prod/db").Obj(),
			settings: func(s *Settings) { s.ClusterSecretStore = "vault" },
			apis:     apis{externalSecrets: true},
			want:     []string{"ExternalSecret shop-db", "Deployment shop-api", "Service shop-api", "NetworkPolicy shop"},
		},
		"external secret without a store holds only the services that need it": {
			ud: app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Service("web", "web:1", 80, schedv1.ExposureInternal).
				ExternalSecretRef("db", "prod/db", "api").Obj(),
			apis:     apis{externalSecrets: true},
			want:     []string{"Deployment shop-api", "Service shop-api", "Deployment shop-web", "Service shop-web", "NetworkPolicy shop"},
			held:     map[string]string{"api": `not started: secret "db" comes from an external store, but the operator has no ClusterSecretStore configured (--cluster-secret-store)`},
			replicas: map[string]int32{"api": 0, "web": 1},
		},
		"external secret without the API": {
			ud:       app().Service("api", "api:1", 8080, schedv1.ExposureInternal).ExternalSecretRef("db", "prod/db").Obj(),
			settings: func(s *Settings) { s.ClusterSecretStore = "vault" },
			want:     []string{"Deployment shop-api", "Service shop-api", "NetworkPolicy shop"},
			held:     map[string]string{"api": `not started: secret "db" comes from an external store, but the cluster does not serve external-secrets.io/v1 ExternalSecrets (install External Secrets; the service starts once it is served, without restarting the operator)`},
		},
		"open isolation": {
			ud:   app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Isolation(schedv1.IsolationOpen).Obj(),
			want: []string{"Deployment shop-api", "Service shop-api"},
		},
		"network policies switched off": {
			ud:       app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj(),
			settings: func(s *Settings) { s.NetworkPolicies = false },
			want:     []string{"Deployment shop-api", "Service shop-api"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := testSettings
			if tc.settings != nil {
				tc.settings(&s)
			}
			p := buildPlan(tc.ud, s, tc.apis)
			if diff := cmp.Diff(tc.want, objectNames(p)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			held := tc.held
			if held == nil {
				held = map[string]string{}
			}
			if diff := cmp.Diff(held, p.held); diff != "" {
				t.Errorf("held services (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.urls, p.urls); diff != "" {
				t.Errorf("urls (-want +got):\n%s", diff)
			}
			for svc, want := range tc.replicas {
				if got := *p.deployments[svc].Spec.Replicas; got != want {
					t.Errorf("service %s replicas = %d, want %d", svc, got, want)
				}
			}
			for _, o := range p.objects {
				if errs := validation.IsDNS1123Label(o.GetName()); len(errs) > 0 {
					t.Errorf("%s: %v", o.GetName(), errs)
				}
			}
		})
	}
}

func TestLeaveReplicasToAutoscalers(t *testing.T) {
	cases := map[string]struct {
		state   schedv1.DesiredState
		targets map[string]bool
		want    map[string]*int32
	}{
		"no autoscaler": {targets: nil, want: map[string]*int32{"a-web": ptr.To[int32](3), "a-db": ptr.To[int32](1)}},
		"autoscaled service has none": {
			targets: map[string]bool{"a-web": true},
			want:    map[string]*int32{"a-web": nil, "a-db": ptr.To[int32](1)},
		},
		"a stopped app keeps its zero": {
			state:   schedv1.StateStopped,
			targets: map[string]bool{"a-web": true, "a-db": true},
			want:    map[string]*int32{"a-web": ptr.To[int32](0), "a-db": ptr.To[int32](0)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ud := MakeUserDeployment("a", "ns").Service("web", "nginx", 80, schedv1.ExposureInternal).Replicas("web", 3).
				Service("db", "pg", 5432, schedv1.ExposureInternal).Obj()
			ud.Spec.State = tc.state
			p := buildPlan(ud, testSettings, apis{})
			p.leaveReplicasTo(tc.targets)
			got := map[string]*int32{}
			for _, o := range p.objects {
				if d, ok := o.(*appsv1.Deployment); ok {
					got[d.Name] = d.Spec.Replicas
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("replicas (-want +got):\n%s", diff)
			}
			if tc.targets["a-web"] && tc.state != schedv1.StateStopped && p.deployments["web"].Spec.Replicas != nil {
				t.Errorf("the status view of web still has replicas")
			}
		})
	}
}
