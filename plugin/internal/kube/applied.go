package kube

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Applied returns what manager last applied to obj with server-side apply:
// the fields of obj that manager's Apply entry in obj's managedFields
// lists, with obj's apiVersion, kind, namespace and name. It is the start
// of any partial change made as manager: an apply is the whole of what its
// manager wants, so a field the manager set before and does not send
// again is removed. Send Applied, changed, and only the change is made.
//
// It follows the managed fields' own paths: f:NAME is a field, k:{...}
// the item of a keyed list with those key fields, v:VALUE the item of a
// set, i:N the Nth item. Fields of obj that another manager set, or the
// API server defaulted, are not in it. A leaf is taken whole when it is a
// scalar, or a list or map that the kind's schema (the plugin's own CRDs)
// makes atomic; a leaf list or map whose items are owned one by one was
// applied empty, and is taken so. Server-side apply records no more, and
// taking such a map whole would take over the fields defaulted in it: the
// next apply without them would remove them, and leave the map null (an
// ingress: {} with its defaulted path, say).
func Applied(obj *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error) {
	out := &unstructured.Unstructured{Object: map[string]any{}}
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager != manager || mf.Operation != metav1.ManagedFieldsOperationApply || mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		set, err := parseFields(mf.FieldsV1.GetRawBytes())
		if err != nil {
			return nil, fmt.Errorf("managed fields of %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		if m, ok := extract(set, obj.Object, schemaOf(obj.GroupVersionKind())).(map[string]any); ok {
			out.Object = m
		}
	}
	out.SetAPIVersion(obj.GetAPIVersion())
	out.SetKind(obj.GetKind())
	out.SetNamespace(obj.GetNamespace())
	out.SetName(obj.GetName())
	return out, nil
}

// PathElement is one step of a path into an object: a field, or the item
// of a keyed list whose key fields have these values.
type PathElement struct {
	Field string
	Key   map[string]any
}

// Field is the path element of a field.
func Field(name string) PathElement { return PathElement{Field: name} }

// Item is the path element of a keyed list's item: key field and value
// pairs, such as Item("name", "web").
func Item(keyValues ...any) PathElement {
	key := map[string]any{}
	for i := 0; i+1 < len(keyValues); i += 2 {
		key[keyValues[i].(string)] = keyValues[i+1]
	}
	return PathElement{Key: key}
}

// Managers returns the field managers of obj that set the field at path,
// or something below it, as "name" for an apply and "name (update)" for
// other writes, sorted.
func Managers(obj *unstructured.Unstructured, path ...PathElement) []string {
	var out []string
	for _, mf := range obj.GetManagedFields() {
		if mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		set, err := parseFields(mf.FieldsV1.GetRawBytes())
		if err != nil {
			continue
		}
		found := true
		for _, pe := range path {
			if set, found = descend(set, pe); !found {
				break
			}
		}
		if !found {
			continue
		}
		name := mf.Manager
		if mf.Operation != metav1.ManagedFieldsOperationApply {
			name += " (" + strings.ToLower(string(mf.Operation)) + ")"
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func parseFields(raw []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var set map[string]any
	if err := d.Decode(&set); err != nil {
		return nil, err
	}
	return set, nil
}

// descend is the node of set for pe.
func descend(set map[string]any, pe PathElement) (map[string]any, bool) {
	for k, sub := range set {
		node, _ := sub.(map[string]any)
		if pe.Key == nil && k == "f:"+pe.Field {
			return node, true
		}
		if keyJSON, ok := strings.CutPrefix(k, "k:"); ok && pe.Key != nil {
			if key, err := parseFields([]byte(keyJSON)); err == nil && sameKey(key, pe.Key) {
				return node, true
			}
		}
	}
	return nil, false
}

// extract is the part of val that set lists; s is val's schema, nil when
// unknown.
func extract(set map[string]any, val any, s *schemaNode) any {
	if !hasChildren(set) {
		switch {
		case s.granularMap() && isMap(val):
			return map[string]any{}
		case s.granularList() && isList(val):
			return []any{}
		}
		return runtime.DeepCopyJSONValue(normalize(val))
	}
	switch v := val.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, sub := range set {
			name, ok := strings.CutPrefix(k, "f:")
			if !ok {
				continue
			}
			if x, present := v[name]; present {
				node, _ := sub.(map[string]any)
				out[name] = extract(node, x, s.field(name))
			}
		}
		return out
	case []any:
		out := []any{}
		for i, item := range v {
			if x, ok := extractItem(set, i, item, s.item()); ok {
				out = append(out, x)
			}
		}
		return out
	}
	return runtime.DeepCopyJSONValue(normalize(val))
}

func isMap(v any) bool  { _, ok := v.(map[string]any); return ok }
func isList(v any) bool { _, ok := v.([]any); return ok }

// extractItem is the part of a list's item that set lists, if it lists
// the item; s is the item's schema.
func extractItem(set map[string]any, i int, item any, s *schemaNode) (any, bool) {
	for k, sub := range set {
		node, _ := sub.(map[string]any)
		kind, arg, ok := strings.Cut(k, ":")
		if !ok {
			continue
		}
		switch kind {
		case "k":
			key, err := parseFields([]byte(arg))
			m, isMap := item.(map[string]any)
			if err != nil || !isMap || !sameKey(key, m) {
				continue
			}
			x, _ := extract(node, m, s).(map[string]any)
			if x == nil {
				x = map[string]any{}
			}
			// An item is applied with its key.
			for f := range key {
				x[f] = runtime.DeepCopyJSONValue(normalize(m[f]))
			}
			return x, true
		case "v":
			var v any
			d := json.NewDecoder(strings.NewReader(arg))
			d.UseNumber()
			if d.Decode(&v) != nil || !sameJSON(v, item) {
				continue
			}
			return runtime.DeepCopyJSONValue(normalize(item)), true
		case "i":
			if n, err := strconv.Atoi(arg); err == nil && n == i {
				return extract(node, item, s), true
			}
		}
	}
	return nil, false
}

func hasChildren(set map[string]any) bool {
	for k := range set {
		if k != "." {
			return true
		}
	}
	return false
}

// sameKey: every field of key has the same value in m.
func sameKey(key, m map[string]any) bool {
	for f, v := range key {
		if !sameJSON(v, m[f]) {
			return false
		}
	}
	return true
}

func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// normalize turns json.Number, which only keys hold, into int64 or
// float64, which DeepCopyJSONValue takes.
func normalize(v any) any {
	n, ok := v.(json.Number)
	if !ok {
		return v
	}
	if i, err := n.Int64(); err == nil {
		return i
	}
	f, _ := n.Float64()
	return f
}
