package userdeployment

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	. "github.com/kubectl-sched/kubectl-sched/api/testing"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/netpol"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
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

func TestBuildDeployment(t *testing.T) {
	ud := app().
		Service("api", "api:1", 8080, schedv1.ExposureInternal).
		Service("web", "web:1", 80, schedv1.ExposurePublic).
		Config("MODE", "fast").
		SecretRef("db", "shop-db").
		ExternalSecretRef("stripe", "prod/stripe", "api").
		Spec(func(s *schedv1.UserDeploymentSpec) {
			s.Secrets[0].EnvPrefix = "DB_"
			s.Secrets = append(s.Secrets, schedv1.SecretReference{Name: "tls", SecretName: "web-cert", MountPath: "/etc/tls", Services: []string{"web"}})
			s.Placement = &schedv1.Placement{NodePools: []string{"highmem"}}
		}).
		EditService("api", func(s *schedv1.ServiceSpec) {
			s.Command = []string{"/api"}
			s.Args = []string{"--port=8080"}
			s.Ports[0].Name = "http"
			s.Env = []schedv1.EnvVar{{Name: "LOG", Value: "debug"}}
			s.PodMetadata = &schedv1.PodMetadata{
				Labels:      map[string]string{"team": "pay", schedv1.LabelService: "spoofed"},
				Annotations: map[string]string{"sim.kubectl-sched.dev/ready": "false"},
			}
		}).
		Replicas("api", 2).Obj()
	s := testSettings
	s.ClusterSecretStore = "vault"
	p := buildPlan(ud, s, apis{externalSecrets: true})

	podLabels := map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelUserDeployment: "shop", schedv1.LabelService: "api", "team": "pay"}
	selector := map[string]string{schedv1.LabelUserDeployment: "shop", schedv1.LabelService: "api"}
	want := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: wantMeta("shop-api", "api"),
		Spec: appsv1.DeploymentSpec{
			Replicas:                ptr.To[int32](2),
			ProgressDeadlineSeconds: ptr.To[int32](600),
			Selector:                &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      podLabels,
					Annotations: map[string]string{"sim.kubectl-sched.dev/ready": "false", annotationConfigHash: configHash(map[string]string{"MODE": "fast"})},
				},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:    "api",
						Image:   "api:1",
						Command: []string{"/api"},
						Args:    []string{"--port=8080"},
						Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
						EnvFrom: []corev1.EnvFromSource{
							{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shop-config"}}},
							{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shop-db"}}},
							{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shop-stripe"}}},
						},
						Env:                      []corev1.EnvVar{{Name: "LOG", Value: "debug"}},
						SecurityContext:          podsecurity.Container(nil),
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
					SecurityContext: podsecurity.Pod(),
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
							MatchExpressions: []corev1.NodeSelectorRequirement{
								{Key: schedv1.NodeLabelPool, Operator: corev1.NodeSelectorOpIn, Values: []string{"highmem"}},
								{Key: schedv1.NodeLabelSpot, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"true"}},
							},
						}}},
					}},
					// Naming a pool tolerates the taint that may reserve it.
					Tolerations: []corev1.Toleration{{Key: schedv1.TaintPool, Operator: corev1.TolerationOpEqual, Value: "highmem", Effect: corev1.TaintEffectNoSchedule}},
				},
			},
		},
	}
	if diff := cmp.Diff(want, p.deployments["api"]); diff != "" {
		t.Errorf("api Deployment (-want +got):\n%s", diff)
	}

	web := p.deployments["web"].Spec.Template.Spec
	wantVolumes := []corev1.Volume{{Name: "secret-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web-cert"}}}}
	if diff := cmp.Diff(wantVolumes, web.Volumes); diff != "" {
		t.Errorf("web volumes (-want +got):\n%s", diff)
	}
	wantMounts := []corev1.VolumeMount{{Name: "secret-tls", MountPath: "/etc/tls", ReadOnly: true}}
	if diff := cmp.Diff(wantMounts, web.Containers[0].VolumeMounts); diff != "" {
		t.Errorf("web mounts (-want +got):\n%s", diff)
	}
	// web gets the config and the shared secret, not api's external one.
	if got := len(web.Containers[0].EnvFrom); got != 2 {
		t.Errorf("web has %d envFrom sources, want 2: %+v", got, web.Containers[0].EnvFrom)
	}
}

// TestDeploymentsGetTheAppsDeadline: the Deployments' own deadline is the
// app's, in whole seconds, so their Progressing condition agrees.
func TestDeploymentsGetTheAppsDeadline(t *testing.T) {
	for d, want := range map[time.Duration]int32{0: 600, 10 * time.Second: 10, 90*time.Second + time.Millisecond: 91, 24 * time.Hour: 86400} {
		ud := app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj()
		if d > 0 {
			ud.Spec.ProgressDeadline = &metav1.Duration{Duration: d}
		}
		if got := buildPlan(ud, testSettings, apis{}).deployments["api"].Spec.ProgressDeadlineSeconds; got == nil || *got != want {
			t.Errorf("progressDeadline %v: progressDeadlineSeconds %v, want %d", d, got, want)
		}
	}
}

func TestConfigHashFollowsTheConfig(t *testing.T) {
	a := configHash(map[string]string{"A": "1", "B": "2"})
	if b := configHash(map[string]string{"B": "2", "A": "1"}); a != b {
		t.Errorf("hash depends on map order: %s != %s", a, b)
	}
	if c := configHash(map[string]string{"A": "1", "B": "3"}); a == c {
		t.Errorf("a changed value keeps the hash %s", a)
	}
	if d := configHash(map[string]string{"A": "1=B", "": "2"}); a == d {
		t.Errorf("keys and values can be shifted without changing the hash %s", a)
	}
}

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

func TestBuildExternalSecret(t *testing.T) {
	cases := map[string]struct {
		source schedv1.ExternalSecretSource
		want   map[string]any
	}{
		"every property of the key": {
			source: schedv1.ExternalSecretSource{Key: "prod/db"},
			want: map[string]any{
				"secretStoreRef": map[string]any{"kind": "ClusterSecretStore", "name": "vault"},
				"target":         map[string]any{"name": "shop-db", "creationPolicy": "Owner", "template": map[string]any{"type": "Opaque"}},
				"dataFrom":       []any{map[string]any{"extract": map[string]any{"key": "prod/db"}}},
			},
		},
		"one property": {
			source: schedv1.ExternalSecretSource{Key: "prod/db", Property: "password"},
			want: map[string]any{
				"secretStoreRef": map[string]any{"kind": "ClusterSecretStore", "name": "vault"},
				"target":         map[string]any{"name": "shop-db", "creationPolicy": "Owner", "template": map[string]any{"type": "Opaque"}},
				"data":           []any{map[string]any{"secretKey": "password", "remoteRef": map[string]any{"key": "prod/db", "property": "password"}}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ud := app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj()
			got := buildExternalSecret(ud, schedv1.SecretReference{Name: "db", External: &tc.source}, "vault")
			if diff := cmp.Diff(tc.want, got.Object["spec"]); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			expected := &unstructured.Unstructured{}
			expected.SetName("shop-db")
			expected.SetNamespace("ns")
			expected.SetLabels(wantMeta("", "").Labels)
			expected.SetOwnerReferences(ownerRefs)
			if diff := cmp.Diff(expected.Object["metadata"], got.Object["metadata"]); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBuildNetworkPolicy: the app's policy is netpol's spec (its contents
// are tested there) under the app's metadata, and there is none when it
// would restrict nothing.
func TestBuildNetworkPolicy(t *testing.T) {
	platform := netpol.Platform{IngressNamespace: "ingress-nginx", MonitoringNamespace: "monitoring"}
	ud := MakeUserDeployment("shop", "ns").Meta(func(m *metav1.ObjectMeta) { m.UID = "uid-1" }).Obj()
	want := &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: wantMeta("shop", ""),
		Spec:       *netpol.AppSpec(ud, platform),
	}
	if diff := cmp.Diff(want, buildNetworkPolicy(ud, platform)); diff != "" {
		t.Errorf("NetworkPolicy (-want +got):\n%s", diff)
	}
	ud.Spec.NetworkIsolation = schedv1.IsolationOpen
	if got := buildNetworkPolicy(ud, platform); got != nil {
		t.Errorf("an Open app with egress anywhere has a NetworkPolicy: %+v", got.Spec)
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

// TestSecretHashReachesServicesWithSecrets: only the pods that receive a
// secret roll when its values change.
func TestSecretHashReachesServicesWithSecrets(t *testing.T) {
	ud := app().Service("web", "web:1", 80, schedv1.ExposurePublic).Service("db", "db:1", 5432, schedv1.ExposureInternal).
		Meta(func(m *metav1.ObjectMeta) { m.Annotations = map[string]string{schedv1.AnnotationSecretHash: "abc"} }).
		Spec(func(s *schedv1.UserDeploymentSpec) {
			s.Secrets = []schedv1.SecretReference{{Name: "params", SecretName: "shop-secrets", Services: []string{"db"}}}
		}).Obj()
	p := buildPlan(ud, testSettings, apis{})
	got := map[string]string{}
	for name, dep := range p.deployments {
		got[name] = dep.Spec.Template.Annotations[schedv1.AnnotationSecretHash]
	}
	if diff := cmp.Diff(map[string]string{"web": "", "db": "abc"}, got); diff != "" {
		t.Errorf("secret hash per service (-want +got):\n%s", diff)
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
			cert: map[string]any{"secretName": "shop.tls", "dnsNames": []any{"shop.ns.apps.test"}, "issuerRef": map[string]any{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "letsencrypt"}},
			tls:  "shop.tls", url: "https://shop.ns.apps.test/"},
		"a custom host in the namespace's part of the domain": {ud: public().Spec(func(s *schedv1.UserDeploymentSpec) { s.Ingress = &schedv1.IngressSpec{Host: "www.ns.apps.test"} }).Obj(), s: withIssuer, a: apis{certificates: true},
			cert: map[string]any{"secretName": "shop.tls", "dnsNames": []any{"www.ns.apps.test"}, "issuerRef": map[string]any{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "letsencrypt"}},
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

// TestBuildStatefulSet: a service with volumes runs as a StatefulSet with a
// claim per volume, mounted, and claims kept on scale-down and deletion.
func TestBuildStatefulSet(t *testing.T) {
	ud := app().Service("db", "postgres:17", 5432, schedv1.ExposureInternal).Service("api", "api:1", 8080, schedv1.ExposureInternal).
		EditService("db", func(s *schedv1.ServiceSpec) {
			s.Volumes = []schedv1.ServiceVolume{{Name: "data", Size: resource.MustParse("10Gi"), MountPath: "/var/lib/postgresql", StorageClass: "fast"}}
			s.ServiceAccountName = "db-runner"
			s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
		}).Obj()
	p := buildPlan(ud, testSettings, apis{})
	var sts *appsv1.StatefulSet
	var kinds []string
	for _, o := range p.objects {
		kinds = append(kinds, o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetName())
		if s, ok := o.(*appsv1.StatefulSet); ok {
			sts = s
		}
	}
	if diff := cmp.Diff([]string{"StatefulSet/shop-db", "Service/shop-db", "Deployment/shop-api", "Service/shop-api", "NetworkPolicy/shop"}, kinds); diff != "" {
		t.Fatalf("objects (-want +got):\n%s", diff)
	}
	claim := sts.Spec.VolumeClaimTemplates[0]
	if claim.Name != "data" || ptr.Deref(claim.Spec.StorageClassName, "") != "fast" || claim.Spec.Resources.Requests.Storage().String() != "10Gi" ||
		!cmp.Equal(claim.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
		t.Errorf("claim template %+v", claim)
	}
	pod := sts.Spec.Template.Spec
	if diff := cmp.Diff([]corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/postgresql"}}, pod.Containers[0].VolumeMounts); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	if pod.ServiceAccountName != "db-runner" || !cmp.Equal(pod.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "registry"}}) {
		t.Errorf("serviceAccountName %q, imagePullSecrets %v", pod.ServiceAccountName, pod.ImagePullSecrets)
	}
	keep := appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	if r := sts.Spec.PersistentVolumeClaimRetentionPolicy; r == nil || r.WhenScaled != keep || r.WhenDeleted != keep {
		t.Errorf("claim retention %+v, want Retain on scale-down and deletion", r)
	}
	if sts.Spec.ServiceName != "shop-db" || !metav1.IsControlledBy(sts, ud) || *sts.Spec.Replicas != 1 {
		t.Errorf("serviceName %q, owners %v, replicas %d", sts.Spec.ServiceName, sts.OwnerReferences, *sts.Spec.Replicas)
	}
	// The status sees its replicas as a Deployment's.
	if p.deployments["db"] == nil || *p.deployments["db"].Spec.Replicas != 1 {
		t.Errorf("status view %+v", p.deployments["db"])
	}
	if api := p.deployments["api"].Spec.Template.Spec; api.ServiceAccountName != "" || api.ImagePullSecrets != nil {
		t.Errorf("api got db's service account or pull secrets: %+v", api)
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

// TestExternalKeysStayInTheirNamespace: with the shared store confined by
// the key template, an app reads only its namespace's keys.
func TestExternalKeysStayInTheirNamespace(t *testing.T) {
	s := testSettings
	s.ClusterSecretStore = "vault"
	s.ExternalSecretKeyTemplate = "{{namespace}}/"
	cases := map[string]struct {
		key     string
		allowed bool
	}{
		"own key":                      {key: "ns/stripe", allowed: true},
		"another tenant's key":         {key: "other/stripe"},
		"a namespace sharing a prefix": {key: "ns-b/stripe"},
		"climbing out":                 {key: "ns/../other/stripe"},
		"no prefix":                    {key: "stripe"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ud := app().Service("api", "api:1", 8080, schedv1.ExposureInternal).ExternalSecretRef("stripe", tc.key, "api").Obj()
			p := buildPlan(ud, s, apis{externalSecrets: true})
			var made bool
			for _, o := range p.objects {
				made = made || o.GetObjectKind().GroupVersionKind().Kind == externalSecretGVK.Kind
			}
			if made != tc.allowed {
				t.Errorf("ExternalSecret planned = %v, want %v", made, tc.allowed)
			}
			if tc.allowed {
				return
			}
			if len(p.invalid) != 1 || !strings.Contains(p.invalid[0], `must start with "ns/"`) {
				t.Errorf("invalid = %q, want the allowed prefix named", p.invalid)
			}
			if _, held := p.held["api"]; !held || *p.deployments["api"].Spec.Replicas != 0 {
				t.Errorf("the service that needs the key is not held: held %v", p.held)
			}
		})
	}
}

// TestNamespaceNamedLikeTheMountGetsNoKeys: External Secrets strips the
// store's mount from a key that starts with it, so namespace "secret" of a
// store mounted at secret would reach every tenant's keys through
// "secret/<tenant>/...": such a namespace gets no external secret at all.
func TestNamespaceNamedLikeTheMountGetsNoKeys(t *testing.T) {
	cases := map[string]struct {
		ns, template string
		reserved     []string
		wantRefused  bool
	}{
		"the mount":                        {ns: "secret", template: "{{namespace}}/", reserved: []string{"secret"}, wantRefused: true},
		"the first part of a deeper mount": {ns: "kv", template: "{{namespace}}/", reserved: []string{"kv/tenants"}, wantRefused: true},
		"a shared folder":                  {ns: "shared", template: "{{namespace}}/", reserved: []string{"secret", "shared"}, wantRefused: true},
		"a namespace merely starting so":   {ns: "secrets", template: "{{namespace}}/", reserved: []string{"secret"}},
		"a template under a folder":        {ns: "secret", template: "tenants/{{namespace}}/", reserved: []string{"secret"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			key := strings.ReplaceAll(tc.template, "{{namespace}}", tc.ns) + "victim/db"
			problem := externalKeyProblem(tc.ns, key, tc.template, tc.reserved)
			if (problem != "") != tc.wantRefused {
				t.Fatalf("problem %q, want refused: %v", problem, tc.wantRefused)
			}
			if tc.wantRefused && !strings.Contains(problem, "--external-secret-reserved-paths") {
				t.Errorf("problem %q does not name the setting", problem)
			}
		})
	}
}

// TestRestartedAtRollsOnlyItsService: spec.restartedAt reaches the pod
// template of the service it names, as kubectl rollout restart's annotation.
func TestRestartedAtRollsOnlyItsService(t *testing.T) {
	ud := app().Service("web", "web:1", 80, schedv1.ExposureInternal).Service("api", "api:1", 8080, schedv1.ExposureInternal).
		Spec(func(s *schedv1.UserDeploymentSpec) { s.RestartedAt = map[string]string{"api": "2026-11-24T20:00:00Z"} }).Obj()
	p := buildPlan(ud, testSettings, apis{})
	if got := p.deployments["api"].Spec.Template.Annotations[annotationRestartedAt]; got != "2026-11-24T20:00:00Z" {
		t.Errorf("api pod template restartedAt %q", got)
	}
	if got, ok := p.deployments["web"].Spec.Template.Annotations[annotationRestartedAt]; ok {
		t.Errorf("web pod template restartedAt %q, want none", got)
	}
}
