package userdeployment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// annotationApplied holds a digest of what the operator last applied to an
// object. Comparing fields finds edits made out of band; the digest also
// finds fields the spec stopped setting, which a comparison of the fields
// the operator sets cannot see.
//
// Drift is an owned object that differs from the plan, and the plan comes
// from the app's spec alone: what changes the spec (kubectl sched scale,
// set image, set env, a redeploy) changes the plan, and the operator
// rolls the objects to it as an update, never back. Only an edit of the
// objects themselves (kubectl scale deployment) is repaired, to the spec
// as it is now (TestPluginChangesAreNotDrift).
const annotationApplied = schedv1.GroupName + "/applied"

// applyForm is what server-side apply sends for a desired object: its
// fields without status, plus the digest of those fields.
func applyForm(obj client.Object) (*unstructured.Unstructured, error) {
	var m map[string]any
	if u, ok := obj.(*unstructured.Unstructured); ok {
		m = runtime.DeepCopyJSON(u.Object)
	} else {
		var err error
		if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return nil, err
		}
	}
	delete(m, "status")
	u := &unstructured.Unstructured{Object: m}
	if u.GetAPIVersion() == "" || u.GetKind() == "" {
		return nil, fmt.Errorf("desired %T %s has no apiVersion and kind", obj, obj.GetName())
	}
	sum, err := digest(m)
	if err != nil {
		return nil, err
	}
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[annotationApplied] = sum
	u.SetAnnotations(ann)
	return u, nil
}

func digest(m map[string]any) (string, error) {
	data, err := json.Marshal(m) // map keys are sorted: the digest is stable
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16], nil
}

// inSync reports whether applying desired would leave actual as it is:
// desired is merged into actual by the API's merge rules (lists keyed by
// name merge, atomic lists are replaced) and the result compared. Fields
// the server or other controllers set (defaults, status, a clusterIP, their
// own env var) are not drift, as server-side apply would keep them too.
func inSync(desired *unstructured.Unstructured, actual client.Object) (bool, error) {
	got, ok := actual.(*unstructured.Unstructured)
	if !ok {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(actual)
		if err != nil {
			return false, err
		}
		// Typed objects from the cache carry no apiVersion and kind.
		got = &unstructured.Unstructured{Object: m}
		got.SetGroupVersionKind(desired.GroupVersionKind())
	}
	tc := typeConverter(desired.GroupVersionKind())
	want, err := tc.ObjectToTyped(desired)
	if err != nil {
		return false, fmt.Errorf("desired %s %s: %w", desired.GetKind(), desired.GetName(), err)
	}
	have, err := tc.ObjectToTyped(got, typed.AllowDuplicates)
	if err != nil {
		return false, fmt.Errorf("%s %s: %w", desired.GetKind(), desired.GetName(), err)
	}
	merged, err := have.Merge(want)
	if err != nil {
		return false, err
	}
	cmp, err := have.Compare(merged)
	if err != nil {
		return false, err
	}
	return cmp.IsSame(), nil
}

// Merge rules: from the built-in types' schemas, or deduced (maps merge,
// lists are atomic, as in a CRD without list annotations) for the optional
// kinds, whose schemas the operator does not have.
var (
	builtinTypes = sync.OnceValue(func() managedfields.TypeConverter {
		return applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
	})
	deducedTypes = managedfields.NewDeducedTypeConverter()
)

func typeConverter(gvk schema.GroupVersionKind) managedfields.TypeConverter {
	if clientgoscheme.Scheme.Recognizes(gvk) {
		return builtinTypes()
	}
	return deducedTypes
}
