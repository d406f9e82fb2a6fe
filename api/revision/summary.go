package revision

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// Summary says in one line what changed from prev to cur (prev nil: cur is
// the first revision), as `kubectl sched history` shows it:
//
//	web: image nginx:1.25 → nginx:1.27; config (MODE changed)
//
// Values are shown for images and other short settings, never for env
// variables or config (only their names), so the line can be shown to
// whoever may read the app.
func Summary(prev *Template, cur Template) string {
	if prev == nil {
		var images []string
		for _, s := range cur.Spec.Services {
			images = append(images, s.Name+" "+s.Image)
		}
		return "first revision: " + strings.Join(images, ", ")
	}
	changes := Changes(*prev, cur)
	if len(changes) == 0 {
		return "no change"
	}
	return strings.Join(changes, "; ")
}

// Changes lists what changed from prev to cur: per service ("web: image a
// → b, env (FOO added)"), services added and removed, then the app's
// fields ("config (MODE changed)", "placement (priority High → Low)") and
// the secret values.
func Changes(prev, cur Template) []string {
	var out []string
	before := map[string]*schedv1.ServiceSpec{}
	for i := range prev.Spec.Services {
		before[prev.Spec.Services[i].Name] = &prev.Spec.Services[i]
	}
	for i := range cur.Spec.Services {
		s := &cur.Spec.Services[i]
		p, ok := before[s.Name]
		if !ok {
			out = append(out, fmt.Sprintf("%s: added (image %s)", s.Name, s.Image))
			continue
		}
		delete(before, s.Name)
		if c := fieldChanges(reflect.ValueOf(p).Elem(), reflect.ValueOf(s).Elem(), serviceOutside); len(c) > 0 {
			out = append(out, s.Name+": "+strings.Join(c, ", "))
		}
	}
	for _, s := range prev.Spec.Services {
		if _, ok := before[s.Name]; ok {
			out = append(out, s.Name+": removed")
		}
	}
	// The app's fields, services aside, each on its own.
	pv, cv := reflect.ValueOf(&prev.Spec).Elem(), reflect.ValueOf(&cur.Spec).Elem()
	for i := range pv.NumField() {
		name := jsonName(pv.Type().Field(i))
		if name == "services" || slices.Contains(appOutside, name) {
			continue
		}
		if c := fieldChange(name, pv.Field(i), cv.Field(i)); c != "" {
			out = append(out, c)
		}
	}
	if prev.SecretHash() != cur.SecretHash() {
		out = append(out, "secret values changed")
	}
	return out
}

// fieldChanges describes each field of two structs of one type that
// differs, but for those outside.
func fieldChanges(a, b reflect.Value, outside []string) []string {
	var out []string
	for i := range a.NumField() {
		name := jsonName(a.Type().Field(i))
		if name == "name" || slices.Contains(outside, name) {
			continue
		}
		if c := fieldChange(name, a.Field(i), b.Field(i)); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// fieldChange describes how one field changed, "" when it did not: a
// string's two values; a list or map of named items (env, config,
// secrets) by the names added, removed and changed; a struct (placement)
// by its fields; anything else as changed.
func fieldChange(name string, a, b reflect.Value) string {
	if equality.Semantic.DeepEqual(a.Interface(), b.Interface()) {
		return ""
	}
	switch {
	case a.Kind() == reflect.String:
		return fmt.Sprintf("%s %s → %s", name, orNone(a.String()), orNone(b.String()))
	case a.Kind() == reflect.Map && a.Type().Key().Kind() == reflect.String:
		return name + " (" + namedChanges(mapItems(a), mapItems(b)) + ")"
	case a.Kind() == reflect.Slice && isNamed(a.Type().Elem()):
		return name + " (" + namedChanges(sliceItems(a), sliceItems(b)) + ")"
	case a.Kind() == reflect.Pointer && a.Type().Elem().Kind() == reflect.Struct && !a.IsNil() && !b.IsNil():
		if c := fieldChanges(a.Elem(), b.Elem(), nil); len(c) > 0 {
			return name + " (" + strings.Join(c, ", ") + ")"
		}
	case a.Kind() == reflect.Pointer && a.IsNil():
		return name + " added"
	case a.Kind() == reflect.Pointer && b.IsNil():
		return name + " removed"
	}
	return name + " changed"
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// isNamed: the items of a list keyed by name (env, secrets, image pull
// secrets).
func isNamed(t reflect.Type) bool {
	switch t {
	case reflect.TypeOf(schedv1.EnvVar{}), reflect.TypeOf(schedv1.SecretReference{}), reflect.TypeOf(corev1.LocalObjectReference{}):
		return true
	}
	return false
}

func mapItems(v reflect.Value) map[string]any {
	out := map[string]any{}
	for _, k := range v.MapKeys() {
		out[k.String()] = v.MapIndex(k).Interface()
	}
	return out
}

func sliceItems(v reflect.Value) map[string]any {
	out := map[string]any{}
	for i := range v.Len() {
		out[v.Index(i).FieldByName("Name").String()] = v.Index(i).Interface()
	}
	return out
}

// namedChanges lists the names added, removed and changed, each group in
// order: "A added, B removed, C changed".
func namedChanges(a, b map[string]any) string {
	var added, removed, changed []string
	for _, k := range sortedKeys(b) {
		old, ok := a[k]
		switch {
		case !ok:
			added = append(added, k)
		case !equality.Semantic.DeepEqual(old, b[k]):
			changed = append(changed, k)
		}
	}
	for _, k := range sortedKeys(a) {
		if _, ok := b[k]; !ok {
			removed = append(removed, k)
		}
	}
	var parts []string
	for _, g := range []struct {
		names []string
		verb  string
	}{{added, "added"}, {removed, "removed"}, {changed, "changed"}} {
		if len(g.names) > 0 {
			parts = append(parts, strings.Join(g.names, " ")+" "+g.verb)
		}
	}
	if len(parts) == 0 {
		return "reordered"
	}
	return strings.Join(parts, ", ")
}
