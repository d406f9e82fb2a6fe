package revisions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kubectl-sched/kubectl-sched/api/revision"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
)

// A rollback is one server-side apply as kubectl-sched, the field manager
// of `kubectl sched deploy`, so the app changes once (one new revision)
// and later deploys own what it restored. An apply sets what it holds and
// removes what its manager owned before and no longer holds, so:
//
//   - it holds every field kubectl-sched owns (from the app's managed
//     fields), as they are, and the template fields the rollback changes
//     set to the revision's: nothing else changes, and what another manager
//     set outside those fields stays theirs;
//   - a field the revision lacks is removed only if kubectl-sched alone
//     owns it, so before the apply kubectl-sched takes over, in the managed
//     fields, what other managers own under the fields the rollback
//     changes (an env variable added with kubectl edit, say): a write of
//     the managed fields alone, which changes no spec (takeOver).

// changedFields are the template fields whose values differ between cur
// and want, spec with a revision restored into it: the restored services'
// and the app's (revision.Restore changes nothing else).
func changedFields(cur, want schedv1.UserDeploymentSpec) []revision.Field {
	return revision.ChangedFields(revision.Of(&schedv1.UserDeployment{Spec: cur}), revision.Of(&schedv1.UserDeployment{Spec: want}))
}

// applyBody is what kubectl-sched applies to give ud the changed fields
// of spec: the fields it owns, as ud has them, with those set to spec's
// (or left out, to remove them). ud's managed fields are as takeOver left
// them.
func applyBody(ud *schedv1.UserDeployment, spec schedv1.UserDeploymentSpec, changed []revision.Field) (*unstructured.Unstructured, error) {
	live, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ud)
	if err != nil {
		return nil, err
	}
	body := map[string]any{}
	if set, err := ownedBy(ud.ManagedFields, kube.FieldManager); err != nil {
		return nil, err
	} else if set != nil {
		body, _ = extract(live, set).(map[string]any)
	}
	want, err := specOf(spec)
	if err != nil {
		return nil, err
	}
	bodySpec, _ := body["spec"].(map[string]any)
	if bodySpec == nil {
		bodySpec = map[string]any{}
	}
	items, _ := bodySpec["services"].([]any)
	wantServices, _ := want["services"].([]any)
	for _, f := range changed {
		if f.Service == "" {
			setOrDelete(bodySpec, want, f.Name)
			continue
		}
		item := itemNamed(items, f.Service)
		if item == nil {
			item = map[string]any{"name": f.Service}
			items = append(items, item)
		}
		setOrDelete(item, itemNamed(wantServices, f.Service), f.Name)
	}
	if len(items) > 0 {
		bodySpec["services"] = items
	}
	body["spec"] = bodySpec
	u := &unstructured.Unstructured{Object: body}
	u.SetAPIVersion(schedv1.GroupVersion.String())
	u.SetKind("UserDeployment")
	u.SetName(ud.Name)
	u.SetNamespace(ud.Namespace)
	// Refused with a Conflict if the app changed since it was read.
	u.SetResourceVersion(ud.ResourceVersion)
	return u, nil
}

func setOrDelete(dst, src map[string]any, f string) {
	if v, ok := src[f]; ok {
		dst[f] = v
	} else {
		delete(dst, f)
	}
}

// itemNamed is the list item with name, or nil.
func itemNamed(items []any, name string) map[string]any {
	for _, it := range items {
		if m, ok := it.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	return nil
}

// specOf is spec as JSON sees it.
func specOf(spec schedv1.UserDeploymentSpec) (map[string]any, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&schedv1.UserDeployment{Spec: spec})
	if err != nil {
		return nil, err
	}
	m, _ := u["spec"].(map[string]any)
	return m, nil
}

// isApply is manager's apply entry of the main resource.
func isApply(e metav1.ManagedFieldsEntry, manager string) bool {
	return e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == ""
}

// ownedBy is the set of fields manager's apply owns, nil when it has none.
func ownedBy(entries []metav1.ManagedFieldsEntry, manager string) (*fieldpath.Set, error) {
	for _, e := range entries {
		if !isApply(e, manager) || e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			return nil, fmt.Errorf("read the managed fields of %s: %w", manager, err)
		}
		return set, nil
	}
	return nil, nil
}

// takeOver moves to kubectl-sched's apply entry what the other entries of
// the main resource own under the changed fields, and returns the managed
// fields that result and, for each field taken, from whom; nil when
// nothing is to be taken.
func takeOver(entries []metav1.ManagedFieldsEntry, changed []revision.Field, now time.Time) ([]metav1.ManagedFieldsEntry, []string, error) {
	under := func(p fieldpath.Path) bool {
		return slices.ContainsFunc(changed, func(f revision.Field) bool { return f.Holds(p) })
	}
	taken := &fieldpath.Set{}
	var out []metav1.ManagedFieldsEntry
	var from []string
	for _, e := range entries {
		if isApply(e, kube.FieldManager) || e.Subresource != "" || e.FieldsV1 == nil {
			out = append(out, e)
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			return nil, nil, fmt.Errorf("read the managed fields of %s: %w", e.Manager, err)
		}
		moved := &fieldpath.Set{}
		set.Iterate(func(p fieldpath.Path) {
			if under(p) {
				moved.Insert(p)
			}
		})
		if moved.Empty() {
			out = append(out, e)
			continue
		}
		for _, f := range changed {
			found := false
			moved.Iterate(func(p fieldpath.Path) { found = found || f.Holds(p) })
			if found {
				from = append(from, fmt.Sprintf("%s (%s)", f, e.Manager))
			}
		}
		taken = taken.Union(moved)
		if rest := set.Difference(moved); !rest.Empty() {
			raw, err := rest.ToJSON()
			if err != nil {
				return nil, nil, err
			}
			e.FieldsV1 = metav1.NewFieldsV1(string(raw))
			out = append(out, e)
		}
	}
	if taken.Empty() {
		return nil, nil, nil
	}
	i := slices.IndexFunc(out, func(e metav1.ManagedFieldsEntry) bool { return isApply(e, kube.FieldManager) })
	if i < 0 {
		out = append(out, metav1.ManagedFieldsEntry{Manager: kube.FieldManager, Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: schedv1.GroupVersion.String(), FieldsType: "FieldsV1", Time: &metav1.Time{Time: now}})
		i = len(out) - 1
	}
	mine := &fieldpath.Set{}
	if f := out[i].FieldsV1; f != nil {
		if err := mine.FromJSON(f.GetRawReader()); err != nil {
			return nil, nil, err
		}
	}
	raw, err := mine.Union(taken).ToJSON()
	if err != nil {
		return nil, nil, err
	}
	out[i].FieldsV1 = metav1.NewFieldsV1(string(raw))
	return out, from, nil
}

// extract is the part of v that set holds: whole values for its members,
// the parts its children hold of the others. A list's items are matched
// by their keys (list-maps), values (sets) or index; an item owned as a
// whole keeps only its keys, which is what owning it means.
func extract(v any, set *fieldpath.Set) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		set.Members.Iterate(func(pe fieldpath.PathElement) {
			if pe.FieldName != nil {
				if x, ok := v[*pe.FieldName]; ok {
					out[*pe.FieldName] = runtime.DeepCopyJSONValue(x)
				}
			}
		})
		set.Children.Iterate(func(pe fieldpath.PathElement) {
			if pe.FieldName != nil {
				if x, ok := v[*pe.FieldName]; ok {
					child, _ := set.Children.Get(pe)
					out[*pe.FieldName] = extract(x, child)
				}
			}
		})
		return out
	case []any:
		var out []any
		for i, item := range v {
			var kept any
			found := false
			match := func(pe fieldpath.PathElement, child *fieldpath.Set) {
				if found || !matches(pe, i, item) {
					return
				}
				found = true
				switch {
				case child != nil:
					kept = extract(item, child)
					if m, ok := kept.(map[string]any); ok && pe.Key != nil {
						for _, f := range *pe.Key {
							m[f.Name] = f.Value.Unstructured()
						}
					}
				case pe.Key != nil:
					m := map[string]any{}
					for _, f := range *pe.Key {
						m[f.Name] = f.Value.Unstructured()
					}
					kept = m
				default:
					kept = runtime.DeepCopyJSONValue(item)
				}
			}
			set.Children.Iterate(func(pe fieldpath.PathElement) {
				child, _ := set.Children.Get(pe)
				match(pe, child)
			})
			set.Members.Iterate(func(pe fieldpath.PathElement) { match(pe, nil) })
			if found {
				out = append(out, kept)
			}
		}
		return out
	}
	return runtime.DeepCopyJSONValue(v)
}

// matches reports whether pe names item, the i-th of its list.
func matches(pe fieldpath.PathElement, i int, item any) bool {
	switch {
	case pe.Index != nil:
		return *pe.Index == i
	case pe.Value != nil:
		return sameJSON((*pe.Value).Unstructured(), item)
	case pe.Key != nil:
		m, ok := item.(map[string]any)
		if !ok {
			return false
		}
		for _, f := range *pe.Key {
			if !sameJSON(f.Value.Unstructured(), m[f.Name]) {
				return false
			}
		}
		return true
	}
	return false
}

func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// joinAnd is "a, b and c".
func joinAnd(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
