package userdeployment

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

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
