package kinds_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
)

// The table is written by hand and the CRDs are generated from the API
// types: a kind renamed, given another short name or category, or added
// in one must be in the other, or lookups, completion and `get` go wrong.
func TestKindsMatchTheCRDs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	scheme := runtime.NewScheme()
	if err := schedv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		n := crd.Spec.Names
		k, ok := kinds.ByKind(n.Kind)
		if !ok {
			t.Errorf("%s: kind %s is not in kinds.Kinds", f, n.Kind)
			continue
		}
		seen[k.Kind] = true
		if crd.Spec.Group != schedv1.GroupName {
			t.Errorf("%s: group %s, want %s", f, crd.Spec.Group, schedv1.GroupName)
		}
		if n.Singular != k.Singular || n.Plural != k.Plural {
			t.Errorf("%s: names %s/%s, table %s/%s", k.Kind, n.Singular, n.Plural, k.Singular, k.Plural)
		}
		if !slices.Equal(n.ShortNames, []string{k.Short}) {
			t.Errorf("%s: short names %v, table %q", k.Kind, n.ShortNames, k.Short)
		}
		if !slices.Equal(n.Categories, []string{kinds.Category}) {
			t.Errorf("%s: categories %v, want [%s]", k.Kind, n.Categories, kinds.Category)
		}
		if namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped; namespaced != k.Namespaced {
			t.Errorf("%s: scope %s, table Namespaced %v", k.Kind, crd.Spec.Scope, k.Namespaced)
		}
		if !slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
			return v.Name == schedv1.GroupVersion.Version && v.Served
		}) {
			t.Errorf("%s: %s is not served", k.Kind, schedv1.GroupVersion)
		}
		// The constructors make the kind and its list.
		for obj, want := range map[runtime.Object]string{k.New(): n.Kind, k.NewList(): n.ListKind} {
			gvks, _, err := scheme.ObjectKinds(obj)
			if err != nil || gvks[0] != schedv1.GroupVersion.WithKind(want) {
				t.Errorf("%s: a constructor makes %v (%v), want %s", k.Kind, gvks, err, want)
			}
		}
	}
	for _, k := range kinds.Kinds {
		if !seen[k.Kind] {
			t.Errorf("kinds.Kinds has %s, which no CRD in config/crd/bases defines", k.Kind)
		}
	}
}
