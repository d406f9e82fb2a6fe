package docgen

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// kinds are the CRDs in the order their pages are written: a schema
// already written on an earlier page (a CronWorkflow's workflowSpec is a
// Workflow's spec) links there instead of being repeated.
var kinds = []string{"agenttasks", "workflows", "cronworkflows", "workflowtemplates", "clusterworkflowtemplates", "userdeployments", "schedexts"}

// crds are docs/reference/<kind>.md: every field of each CRD's OpenAPI
// schema with its type, bounds, default, rules and description.
func crds(root string) (map[string]string, error) {
	pages := map[string]string{}
	seen := map[string]string{} // schema (without its description) -> link to its section
	files, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) != len(kinds) {
		return nil, fmt.Errorf("config/crd/bases has %d CRDs, docgen knows %d (kinds in crds.go)", len(files), len(kinds))
	}
	for _, plural := range kinds {
		path := filepath.Join(root, "config", "crd", "bases", "sched.kubectl-sched.dev_"+plural+".yaml")
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		page := strings.ToLower(crd.Spec.Names.Kind) + ".md"
		w := &crdWriter{page: page, seen: seen}
		pages[page] = w.write(crd)
	}
	return pages, nil
}

type crdWriter struct {
	page string
	seen map[string]string
	b    strings.Builder
	// queue holds the object sections still to write, in order.
	queue []section
}

type section struct {
	path   string
	schema *apiextensionsv1.JSONSchemaProps
}

func (w *crdWriter) write(crd *apiextensionsv1.CustomResourceDefinition) string {
	n := crd.Spec.Names
	v := crd.Spec.Versions[0]
	schema := v.Schema.OpenAPIV3Schema
	b := &w.b
	b.WriteString(header("config/crd/bases/sched.kubectl-sched.dev_" + n.Plural + ".yaml"))
	fmt.Fprintf(b, "# %s\n\n", n.Kind)
	fmt.Fprintf(b, "%s\n\n", paragraphs(schema.Description))
	fmt.Fprintf(b, "`%s/%s`, %s, plural `%s`", crd.Spec.Group, v.Name, strings.ToLower(string(crd.Spec.Scope)), n.Plural)
	if len(n.ShortNames) > 0 {
		fmt.Fprintf(b, ", short name `%s`", strings.Join(n.ShortNames, "`, `"))
	}
	if len(n.Categories) > 0 {
		fmt.Fprintf(b, ", category `%s`", strings.Join(n.Categories, "`, `"))
	}
	b.WriteString(". A field's bounds are checked by the API server, which refuses an object past one with the field named.\n\n")
	if len(schema.XValidations) > 0 {
		b.WriteString("Rules on the whole object:\n\n")
		rules(b, schema.XValidations)
	}
	if len(v.AdditionalPrinterColumns) > 0 {
		b.WriteString("`kubectl get` shows these columns (`-o wide` adds those marked wide):\n\n| column | value |\n|---|---|\n")
		for _, c := range v.AdditionalPrinterColumns {
			name := c.Name
			if c.Priority > 0 {
				name += " (wide)"
			}
			fmt.Fprintf(b, "| %s | `%s` |\n", cell(name), strings.ReplaceAll(c.JSONPath, "|", `\|`))
		}
		b.WriteString("\n")
	}
	for _, top := range []string{"spec", "status"} {
		if s, ok := schema.Properties[top]; ok {
			w.enqueue(top, &s)
		}
	}
	for len(w.queue) > 0 {
		s := w.queue[0]
		w.queue = w.queue[1:]
		w.section(s)
	}
	return b.String()
}

// enqueue returns the link to path's section, queueing the section unless
// the same schema has one already.
func (w *crdWriter) enqueue(path string, s *apiextensionsv1.JSONSchemaProps) string {
	key := schemaKey(s)
	if link, ok := w.seen[key]; ok {
		if page, anchor, _ := strings.Cut(link, "#"); page == w.page {
			return "#" + anchor
		}
		return link
	}
	link := w.page + "#" + Slug(path)
	w.seen[key] = link
	w.queue = append(w.queue, section{path: path, schema: s})
	return "#" + Slug(path)
}

// schemaKey identifies a schema by its content, its own description left
// out (that describes the field holding it).
func schemaKey(s *apiextensionsv1.JSONSchemaProps) string {
	c := *s
	c.Description = ""
	data, _ := json.Marshal(c)
	return string(data)
}

func (w *crdWriter) section(s section) {
	b := &w.b
	fmt.Fprintf(b, "## `%s`\n\n", s.path)
	if d := paragraphs(s.schema.Description); d != "" {
		fmt.Fprintf(b, "%s\n\n", d)
	}
	if len(s.schema.Properties) > 0 {
		b.WriteString("| field | type | bounds | description |\n|---|---|---|---|\n")
		names := make([]string, 0, len(s.schema.Properties))
		for name := range s.schema.Properties {
			names = append(names, name)
		}
		slices.Sort(names)
		// A schema two fields share gets its section under the required
		// one's path (spec.steps[], not spec.finally[]).
		for _, name := range s.schema.Required {
			if p, ok := s.schema.Properties[name]; ok {
				w.typeOf(s.path+"."+name, &p)
			}
		}
		for _, name := range names {
			p := s.schema.Properties[name]
			var bs []string
			if slices.Contains(s.schema.Required, name) {
				bs = append(bs, "**required**")
			}
			typ, more := w.typeOf(s.path+"."+name, &p)
			bs = append(bs, more...)
			fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", name, typ, strings.Join(bs, "; "), cell(p.Description))
		}
		b.WriteString("\n")
	}
	if len(s.schema.XValidations) > 0 {
		b.WriteString("Rules:\n\n")
		rules(b, s.schema.XValidations)
	}
}

// typeOf is a field's type, linking to the section of an object, and its
// bounds (an array's or a map's and then each item's).
func (w *crdWriter) typeOf(path string, s *apiextensionsv1.JSONSchemaProps) (string, []string) {
	bs := bounds(s)
	switch {
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil:
		item := s.Items.Schema
		if len(item.Properties) > 0 {
			return fmt.Sprintf("[[]object](%s)", w.enqueue(path+"[]", item)), bs
		}
		if ib := bounds(item); len(ib) > 0 {
			bs = append(bs, "each "+strings.Join(ib, ", "))
		}
		return "[]" + scalar(item), bs
	case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		val := s.AdditionalProperties.Schema
		if len(val.Properties) > 0 {
			return fmt.Sprintf("[map[string]object](%s)", w.enqueue(path+"{}", val)), bs
		}
		if vb := bounds(val); len(vb) > 0 {
			bs = append(bs, "each value "+strings.Join(vb, ", "))
		}
		return "map[string]" + scalar(val), bs
	case len(s.Properties) > 0:
		return fmt.Sprintf("[object](%s)", w.enqueue(path, s)), bs
	}
	return scalar(s), bs
}

func scalar(s *apiextensionsv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString:
		return "int or string"
	case s.Type == "":
		return "any"
	case s.Type == "object" && s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields:
		return "object (any fields)"
	case s.Format != "":
		return s.Type + " (" + s.Format + ")"
	}
	return s.Type
}

// quantityPattern is the pattern of a resource.Quantity in a CRD.
const quantityPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`

// bounds are what a schema allows, in words.
func bounds(s *apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	if len(s.Enum) > 0 {
		var vals []string
		for _, e := range s.Enum {
			vals = append(vals, "`"+strings.Trim(string(e.Raw), `"`)+"`")
		}
		out = append(out, "one of "+strings.Join(vals, ", "))
	}
	if r := between(s.MinLength, s.MaxLength, "characters"); r != "" {
		out = append(out, r)
	}
	switch s.Pattern {
	case "":
	case quantityPattern:
		out = append(out, "a quantity, such as `500m` or `1Gi`")
	default:
		out = append(out, "matches "+code(s.Pattern))
	}
	if s.Minimum != nil || s.Maximum != nil {
		out = append(out, numberRange(s))
	}
	if r := between(s.MinItems, s.MaxItems, "items"); r != "" {
		out = append(out, r)
	}
	if r := between(s.MinProperties, s.MaxProperties, "entries"); r != "" {
		out = append(out, r)
	}
	if s.UniqueItems || s.XListType != nil && *s.XListType == "set" {
		out = append(out, "no duplicates")
	}
	if s.XListType != nil && *s.XListType == "map" && len(s.XListMapKeys) > 0 {
		out = append(out, "one per `"+strings.Join(s.XListMapKeys, "`, `")+"`")
	}
	if s.Default != nil {
		def := string(s.Default.Raw)
		if unquoted, err := strconv.Unquote(def); err == nil {
			def = unquoted
		}
		out = append(out, "default "+code(def))
	}
	// An object's own rules are listed in its section.
	if len(s.Properties) == 0 {
		for _, r := range s.XValidations {
			out = append(out, "rule: "+ruleText(r))
		}
	}
	return out
}

func between(lo, hi *int64, unit string) string {
	switch {
	case lo != nil && hi != nil && *lo == *hi:
		return fmt.Sprintf("exactly %d %s", *hi, unit)
	case lo != nil && *lo > 0 && hi != nil:
		return fmt.Sprintf("%d to %d %s", *lo, *hi, unit)
	case hi != nil:
		return fmt.Sprintf("at most %d %s", *hi, unit)
	case lo != nil && *lo > 0:
		return fmt.Sprintf("at least %d %s", *lo, unit)
	}
	return ""
}

func numberRange(s *apiextensionsv1.JSONSchemaProps) string {
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	var lo, hi string
	if s.Minimum != nil {
		lo = "at least " + num(*s.Minimum)
		if s.ExclusiveMinimum {
			lo = "above " + num(*s.Minimum)
		}
	}
	if s.Maximum != nil {
		hi = "at most " + num(*s.Maximum)
		if s.ExclusiveMaximum {
			hi = "below " + num(*s.Maximum)
		}
	}
	switch {
	case s.Minimum != nil && s.Maximum != nil && !s.ExclusiveMinimum && !s.ExclusiveMaximum:
		return num(*s.Minimum) + " to " + num(*s.Maximum)
	case lo != "" && hi != "":
		return lo + ", " + hi
	}
	return lo + hi
}

// code is s as a code span that survives a table cell.
func code(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}

func ruleText(r apiextensionsv1.ValidationRule) string {
	msg := r.Message
	if msg == "" && r.MessageExpression != "" {
		msg, _ = celMessage(r.MessageExpression, nil)
	}
	if msg == "" {
		return code(r.Rule)
	}
	if r.FieldPath != "" {
		msg = code(r.FieldPath) + ": " + cell(msg)
		return msg
	}
	return cell(msg)
}

func rules(b *strings.Builder, rs apiextensionsv1.ValidationRules) {
	for _, r := range rs {
		fmt.Fprintf(b, "- %s\n", ruleText(r))
	}
	b.WriteString("\n")
}
