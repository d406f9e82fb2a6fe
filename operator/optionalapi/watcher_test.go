package optionalapi

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStatusOf: an API counts as served only when its CRD is established,
// not being deleted, and serves the version the operator writes; otherwise
// the reason says which.
func TestStatusOf(t *testing.T) {
	crd := func(established bool, versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: ExternalSecrets.CRD()}}
		c.Spec.Versions = versions
		if established {
			c.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
		}
		return c
	}
	v1 := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true}
	v1beta1 := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1beta1", Served: true}
	deleting := crd(true, v1)
	deleting.DeletionTimestamp = &metav1.Time{}
	cases := map[string]struct {
		crd    *apiextensionsv1.CustomResourceDefinition
		served bool
		reason string
	}{
		"no CRD":           {reason: "no CustomResourceDefinition externalsecrets.external-secrets.io"},
		"served":           {crd: crd(true, v1beta1, v1), served: true},
		"not established":  {crd: crd(false, v1), reason: "CustomResourceDefinition externalsecrets.external-secrets.io is not established yet"},
		"being deleted":    {crd: deleting, reason: "CustomResourceDefinition externalsecrets.external-secrets.io is being deleted"},
		"an older version": {crd: crd(true, v1beta1), reason: "CustomResourceDefinition externalsecrets.external-secrets.io does not serve v1 (it serves v1beta1); the operator needs external-secrets.io/v1 ExternalSecret"},
		"v1 not served": {crd: crd(true, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Storage: true}),
			reason: "CustomResourceDefinition externalsecrets.external-secrets.io does not serve v1 (it serves no version); the operator needs external-secrets.io/v1 ExternalSecret"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			served, reason := StatusOf(ExternalSecrets, tc.crd)
			if served != tc.served || reason != tc.reason {
				t.Errorf("StatusOf = %v, %q; want %v, %q", served, reason, tc.served, tc.reason)
			}
			// The cache keeps only what StatusOf reads.
			if tc.crd != nil {
				trimmed, _ := trimCRD(tc.crd)
				if s, r := StatusOf(ExternalSecrets, trimmed.(*apiextensionsv1.CustomResourceDefinition)); s != served || r != reason {
					t.Errorf("trimmed: %v, %q", s, r)
				}
			}
		})
	}
}
