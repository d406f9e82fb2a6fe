package revision

import (
	"encoding/json"
	"slices"
	"time"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// Field is one field a revision records: a service's (Service set) or the
// app's (Service ""), by its JSON name; Name "" is a whole service, and
// SecretHash the secret hash annotation.
type Field struct {
	Service, Name string
	SecretHash    bool
}

func (f Field) String() string {
	switch {
	case f.SecretHash:
		return "metadata.annotations[" + schedv1.AnnotationSecretHash + "]"
	case f.Service == "":
		return "spec." + f.Name
	case f.Name == "":
		return "service " + f.Service
	}
	return "service " + f.Service + " " + f.Name
}

// Holds reports whether p, a path of managed fields, is f or under it:
// spec.<name>, spec.services[name=<service>] (and .<name>), or the
// secret hash annotation.
func (f Field) Holds(p fieldpath.Path) bool {
	name := func(i int) string {
		if i >= len(p) || p[i].FieldName == nil {
			return ""
		}
		return *p[i].FieldName
	}
	switch {
	case f.SecretHash:
		return name(0) == "metadata" && name(1) == "annotations" && name(2) == schedv1.AnnotationSecretHash
	case name(0) != "spec":
		return false
	case f.Service == "":
		return name(1) == f.Name
	}
	if name(1) != "services" || len(p) < 3 || p[2].Key == nil || f.Name != "" && name(3) != f.Name {
		return false
	}
	for _, k := range *p[2].Key {
		if k.Name == "name" && k.Value.IsString() && k.Value.AsString() == f.Service {
			return true
		}
	}
	return false
}

// ChangedFields are the fields whose values differ from prev to cur: each
// changed template field of a service both have, each service added or
// removed (whole), each changed field of the app, and the secret hash.
func ChangedFields(prev, cur Template) []Field {
	var out []Field
	p, c := jsonSpec(prev), jsonSpec(cur)
	appFields, serviceFields := TemplateFields()
	ps, _ := p["services"].([]any)
	cs, _ := c["services"].([]any)
	for _, s := range cs {
		cm, _ := s.(map[string]any)
		name, _ := cm["name"].(string)
		pm := named(ps, name)
		if pm == nil {
			out = append(out, Field{Service: name})
			continue
		}
		for _, f := range serviceFields {
			if f != "name" && !sameJSON(pm[f], cm[f]) {
				out = append(out, Field{Service: name, Name: f})
			}
		}
	}
	for _, s := range ps {
		pm, _ := s.(map[string]any)
		if name, _ := pm["name"].(string); named(cs, name) == nil {
			out = append(out, Field{Service: name})
		}
	}
	for _, f := range appFields {
		if f != "services" && !sameJSON(p[f], c[f]) {
			out = append(out, Field{Name: f})
		}
	}
	if prev.SecretHash() != cur.SecretHash() {
		out = append(out, Field{SecretHash: true})
	}
	return out
}

// jsonSpec is t's spec as JSON sees it.
func jsonSpec(t Template) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(Encode(Template{Spec: t.Spec}), &m)
	spec, _ := m["spec"].(map[string]any)
	return spec
}

// named is the list item with name, or nil.
func named(items []any, name string) map[string]any {
	for _, it := range items {
		if m, ok := it.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	return nil
}

func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// ChangedBy is who changed what ud's pods run, as its managed fields tell:
// of the field managers that own a field that changed since prev (nil for
// the first revision), the one whose entry changed last, ties going to
// the one that owns more of them. When none owns one (what changed was
// removed, say), of those that own a field a revision records. It names
// the tool (kubectl-sched, kubectl-edit, a GitOps controller), not the
// user: objects do not record users. "" when no manager owns such a field,
// as when the managed fields were stripped.
func ChangedBy(ud *schedv1.UserDeployment, prev *Template) string {
	if prev != nil {
		changed := ChangedFields(*prev, Of(ud))
		if by := lastOwner(ud, func(p fieldpath.Path) bool {
			return slices.ContainsFunc(changed, func(f Field) bool { return f.Holds(p) })
		}); by != "" {
			return by
		}
	}
	appFields, serviceFields := TemplateFields()
	return lastOwner(ud, func(p fieldpath.Path) bool { return templatePath(p, appFields, serviceFields) })
}

// lastOwner is the manager of ud's main resource whose entry changed last
// of those owning a field that match accepts; ties go to the one owning
// more such fields.
func lastOwner(ud *schedv1.UserDeployment, match func(fieldpath.Path) bool) string {
	var by string
	var at time.Time
	most := 0
	for _, e := range ud.ManagedFields {
		if e.Subresource != "" || e.FieldsV1 == nil || e.Manager == "" {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			continue
		}
		n := 0
		set.Leaves().Iterate(func(p fieldpath.Path) {
			if match(p) {
				n++
			}
		})
		if n == 0 {
			continue
		}
		var t time.Time
		if e.Time != nil {
			t = e.Time.Time
		}
		if by == "" || t.After(at) || t.Equal(at) && n > most {
			by, at, most = e.Manager, t, n
		}
	}
	return by
}

func templatePath(p fieldpath.Path, appFields, serviceFields []string) bool {
	field := func(i int) string {
		if i >= len(p) || p[i].FieldName == nil {
			return ""
		}
		return *p[i].FieldName
	}
	switch {
	case field(0) == "metadata" && field(1) == "annotations":
		return field(2) == schedv1.AnnotationSecretHash
	case field(0) != "spec":
		return false
	case field(1) == "services":
		// spec.services[name=web].image: the item's key, then its field.
		f := field(3)
		return f != "" && f != "name" && slices.Contains(serviceFields, f)
	}
	return slices.Contains(appFields, field(1))
}
