package kube

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-sched/kubectl-sched/config"
)

// schemaNode is what Applied needs of a CRD's OpenAPI schema: its shape,
// and which maps and lists are atomic.
type schemaNode struct {
	Type                 string                 `json:"type"`
	Properties           map[string]*schemaNode `json:"properties"`
	AdditionalProperties json.RawMessage        `json:"additionalProperties"`
	Items                *schemaNode            `json:"items"`
	MapType              string                 `json:"x-kubernetes-map-type"`
	ListType             string                 `json:"x-kubernetes-list-type"`
}

// field is the schema of field name of an object, nil when unknown.
func (s *schemaNode) field(name string) *schemaNode {
	if s == nil {
		return nil
	}
	if p, ok := s.Properties[name]; ok {
		return p
	}
	if bytes.HasPrefix(bytes.TrimSpace(s.AdditionalProperties), []byte("{")) {
		var v schemaNode
		if json.Unmarshal(s.AdditionalProperties, &v) == nil {
			return &v
		}
	}
	return nil
}

// item is the schema of a list's items.
func (s *schemaNode) item() *schemaNode {
	if s == nil {
		return nil
	}
	return s.Items
}

// granularMap: an object whose fields are owned one by one. An object with
// no fields or values declared keeps what it is given (its fields are
// unknown), and is taken whole.
func (s *schemaNode) granularMap() bool {
	return s != nil && s.Type == "object" && s.MapType != "atomic" && (len(s.Properties) > 0 || len(s.AdditionalProperties) > 0)
}

// granularList: a list whose items are owned one by one; a CRD's lists
// are atomic unless they say otherwise.
func (s *schemaNode) granularList() bool {
	return s != nil && s.Type == "array" && (s.ListType == "map" || s.ListType == "set")
}

type crdDoc struct {
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind string `json:"kind"`
		} `json:"names"`
		Versions []struct {
			Name   string `json:"name"`
			Schema struct {
				OpenAPIV3Schema *schemaNode `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

// crdSchemas are the schemas of the plugin's own CRDs, by kind and version.
var crdSchemas = sync.OnceValue(func() map[schema.GroupVersionKind]*schemaNode {
	out := map[schema.GroupVersionKind]*schemaNode{}
	files, _ := fs.Glob(config.Manifests, "crd/bases/*.yaml")
	for _, f := range files {
		data, err := config.Manifests.ReadFile(f)
		if err != nil {
			continue
		}
		var crd crdDoc
		if yaml.Unmarshal(data, &crd) != nil {
			continue
		}
		for _, v := range crd.Spec.Versions {
			out[schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = v.Schema.OpenAPIV3Schema
		}
	}
	return out
})

// schemaOf is the schema of kind gvk, nil when the plugin has none.
func schemaOf(gvk schema.GroupVersionKind) *schemaNode { return crdSchemas()[gvk] }
