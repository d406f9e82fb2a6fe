package templates

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
)

// Identity of the template format.
const (
	APIVersion = "templates.kubectl-sched.dev/v1"
	Kind       = "Template"
)

// Parameter types.
const (
	TypeString  = "string"
	TypeInteger = "integer"
	TypeBoolean = "boolean"
	TypeLabels  = "labels"
)

// Built-in placeholders, filled from the command line rather than declared.
const (
	BuiltinName      = "name"
	BuiltinNamespace = "namespace"
)

// SecretRefName names the spec.secrets entry of a UserDeployment that
// references the Secret of secret parameters.
const SecretRefName = "params"

// AnnotationTemplate records on a rendered object the template it came from.
const AnnotationTemplate = schedv1.GroupName + "/template"

// maxTemplateSize bounds what is read from a file or ConfigMap.
const maxTemplateSize = 1 << 20

var paramNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// Template is a parsed, validated template.
type Template struct {
	APIVersion  string      `json:"apiVersion"`
	Kind        string      `json:"kind"`
	Metadata    Metadata    `json:"metadata"`
	Description string      `json:"description"`
	Parameters  []Parameter `json:"parameters,omitempty"`
	// Object holds placeholders; see the package documentation.
	Object map[string]any `json:"object"`

	// Source says where the template was found: "catalog",
	// "file:PATH" or "configmap:NAMESPACE/NAME".
	Source string `json:"-"`
	// Raw is the template as written.
	Raw []byte `json:"-"`
}

// Metadata names a template.
type Metadata struct {
	Name string `json:"name"`
}

// Parameter is a value the user gives when rendering.
type Parameter struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Type is string (the default), integer, boolean or labels.
	Type     string  `json:"type,omitempty"`
	Default  *Scalar `json:"default,omitempty"`
	Required bool    `json:"required,omitempty"`
	Secret   bool    `json:"secret,omitempty"`
}

// TypeName is the parameter's type, string when unset.
func (p Parameter) TypeName() string {
	if p.Type == "" {
		return TypeString
	}
	return p.Type
}

// Scalar is a default value: YAML strings, numbers and booleans are all
// accepted and kept as text, so `default: 2` works as well as `default: "2"`.
type Scalar string

// UnmarshalJSON accepts a string, number or boolean.
func (s *Scalar) UnmarshalJSON(b []byte) error {
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return err
	}
	switch v := v.(type) {
	case string:
		*s = Scalar(v)
	case json.Number:
		*s = Scalar(v.String())
	case bool:
		*s = Scalar(strconv.FormatBool(v))
	default:
		return fmt.Errorf("a default must be a string, number or boolean")
	}
	return nil
}

// ObjectKind is the kind the template produces.
func (t *Template) ObjectKind() string {
	k, _ := t.Object["kind"].(string)
	return k
}

// Name is the template's name.
func (t *Template) Name() string { return t.Metadata.Name }

// Origin says where the template came from, for a person: "built-in
// catalog", "file ./x.yaml", "ConfigMap team-a/x (shared in namespace
// team-a)". Commands print it with every template they use, as Announce
// does, so nobody runs a template without knowing whose it is.
func (t *Template) Origin() string {
	switch kind, where, _ := strings.Cut(t.Source, ":"); kind {
	case SourceCatalog:
		return "built-in catalog"
	case "file":
		return "file " + where
	case "configmap":
		ns, _, _ := strings.Cut(where, "/")
		if ns == SystemNamespace {
			return "ConfigMap " + where + " (the cluster's shared templates)"
		}
		return "ConfigMap " + where + " (shared in namespace " + ns + ")"
	}
	return t.Source
}

// Announce writes the line every command that renders a template prints
// on stderr: "template scx-lavd: built-in catalog".
func Announce(w io.Writer, t *Template) {
	fmt.Fprintf(w, "template %s: %s\n", t.Name(), t.Origin())
}

// Param returns the parameter called name.
func (t *Template) Param(name string) (Parameter, bool) {
	for _, p := range t.Parameters {
		if p.Name == name {
			return p, true
		}
	}
	return Parameter{}, false
}

// HasSecrets reports whether the template has secret parameters.
func (t *Template) HasSecrets() bool {
	return slices.ContainsFunc(t.Parameters, func(p Parameter) bool { return p.Secret })
}

// InvalidError says what is wrong with a template.
type InvalidError struct {
	Source   string
	Problems []string
}

func (e *InvalidError) Error() string {
	where := e.Source
	if where == "" {
		where = "template"
	}
	return fmt.Sprintf("invalid template %s: %s", where, strings.Join(e.Problems, "; "))
}

// CommandError gives a broken template the exit code of an invalid object
// (7) and a hint; other errors pass through. Commands return it.
func CommandError(err error) error {
	var inv *InvalidError
	if errors.As(err, &inv) {
		return cmdutil.Errorf(cmdutil.ExitInvalid, "Fix the template; 'kubectl sched template show NAME -o yaml' prints it as written, and the format is in the catalog's README.", "%v", err)
	}
	return err
}

// Parse reads and validates a template. source is recorded in the result
// and named in errors.
func Parse(data []byte, source string) (*Template, error) {
	if len(data) > maxTemplateSize {
		return nil, &InvalidError{Source: source, Problems: []string{fmt.Sprintf("larger than %d bytes", maxTemplateSize)}}
	}
	t := &Template{}
	// Strict: an unknown or repeated field is most likely a typo that
	// would otherwise be ignored silently.
	if err := yaml.UnmarshalStrict(data, t, useNumber); err != nil {
		return nil, &InvalidError{Source: source, Problems: []string{cleanYAMLError(err)}}
	}
	t.Source, t.Raw = source, data
	if problems := t.validate(); len(problems) > 0 {
		return nil, &InvalidError{Source: source, Problems: problems}
	}
	return t, nil
}

// useNumber keeps integers in the object exact (no float64 round trip).
func useNumber(d *json.Decoder) *json.Decoder {
	d.UseNumber()
	return d
}

func cleanYAMLError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "error converting YAML to JSON: ")
	s = strings.TrimPrefix(s, "error unmarshaling JSON: while decoding JSON: ")
	return s
}

func (t *Template) validate() []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if t.APIVersion != APIVersion {
		add("apiVersion must be %s, got %q", APIVersion, t.APIVersion)
	}
	if t.Kind != Kind {
		add("kind must be %s, got %q", Kind, t.Kind)
	}
	if errs := validation.IsDNS1123Label(t.Metadata.Name); len(errs) > 0 {
		add("metadata.name %q: %s", t.Metadata.Name, strings.Join(errs, ", "))
	}
	if strings.TrimSpace(t.Description) == "" {
		add("description is required: 'template list' shows it")
	}

	seen := map[string]bool{}
	for i, p := range t.Parameters {
		at := fmt.Sprintf("parameters[%d]", i)
		if p.Name != "" {
			at = fmt.Sprintf("parameter %q", p.Name)
		}
		switch {
		case !paramNameRE.MatchString(p.Name) || len(p.Name) > 63:
			add("%s: a name starts with a letter or '_' and holds letters, digits, '_' and '-' (at most 63)", at)
		case p.Name == BuiltinName || p.Name == BuiltinNamespace:
			add("%s: the name is built in (${{ %s }} is filled from the command line)", at, p.Name)
		case seen[p.Name]:
			add("%s is declared twice", at)
		}
		seen[p.Name] = true
		if !slices.Contains([]string{TypeString, TypeInteger, TypeBoolean, TypeLabels}, p.TypeName()) {
			add("%s: type must be string, integer, boolean or labels, got %q", at, p.Type)
			continue
		}
		if p.Required && p.Default != nil {
			add("%s: a required parameter has no default", at)
		}
		if p.Secret && p.Default != nil {
			add("%s: a secret parameter has no default", at)
		}
		if p.Secret && p.TypeName() != TypeString {
			add("%s: a secret parameter is a string", at)
		}
		if !p.Required && !p.Secret && p.Default == nil && (p.TypeName() == TypeInteger || p.TypeName() == TypeBoolean) {
			add("%s: an optional %s parameter needs a default", at, p.TypeName())
		}
		if p.Default != nil {
			if _, err := typed(p, string(*p.Default)); err != nil {
				add("%s: default: %v", at, err)
			}
		}
	}

	problems = append(problems, t.validateObject()...)
	return problems
}

func (t *Template) validateObject() []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if t.Object == nil {
		return []string{"object is required"}
	}
	kind := t.ObjectKind()
	k, ok := kinds.ByKind(kind)
	ok = ok && slices.ContainsFunc(templateKinds, func(t kinds.Kind) bool { return t.Kind == kind })
	if kind == kinds.CronWorkflow.Kind {
		// A schedule is given on the command line; the template is its
		// workflow (and its step strings are escaped as a Workflow's).
		add("object.kind CronWorkflow is not a template kind: make the template a Workflow and put it on a schedule with 'kubectl sched workflow schedule NAME --cron ... --template T'")
		return problems
	}
	if !ok {
		var names []string
		for _, k := range templateKinds {
			names = append(names, k.Kind)
		}
		add("object.kind must be one of %s, got %q", strings.Join(names, ", "), t.Object["kind"])
		return problems
	}
	if av, ok := t.Object["apiVersion"]; ok && av != schedv1.GroupVersion.String() {
		add("object.apiVersion must be %s (or omitted), got %v", schedv1.GroupVersion, av)
	}
	if md, ok := t.Object["metadata"].(map[string]any); ok {
		for _, f := range []string{"name", "generateName", "namespace"} {
			if _, set := md[f]; set {
				add("object.metadata.%s is set by the command, not the template", f)
			}
		}
	}
	if _, ok := t.Object["status"]; ok {
		add("object.status cannot be set")
	}
	if !k.Namespaced && t.HasSecrets() {
		add("a %s is cluster scoped and cannot reference a Secret: remove the secret parameters", kind)
	}
	problems = append(problems, t.placeholderProblems(kind)...)
	if len(problems) > 0 {
		return problems
	}
	return t.exampleProblems()
}

// placeholderProblems: every placeholder names a declared non-secret
// parameter or a built-in, and every non-secret parameter is used.
func (t *Template) placeholderProblems(kind string) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	used := map[string]bool{}
	walkErr := walkStrings(t.Object, nil, func(path []string, s string, isKey bool) error {
		return scan(s, func(string) {}, func(name string, _ int) error {
			where := "object." + strings.Join(path, ".")
			if isKey {
				return fmt.Errorf("%s: placeholders are only allowed in values, not in keys", where)
			}
			if kind == kinds.Workflow.Kind && isWhen(path) {
				// CEL cannot be escaped like a step string: a value would be
				// code, free to read any output the step may read.
				return fmt.Errorf("%s: ${{ %s }} in a when would be CEL, not text; give the value to a workflow param (spec.params: name: %s, value: ${{ %s }}) and compare params.%s in the when", where, name, name, name, name)
			}
			if name == BuiltinName || name == BuiltinNamespace {
				return nil
			}
			p, ok := t.Param(name)
			switch {
			case !ok:
				return fmt.Errorf("%s: ${{ %s }} names no declared parameter", where, name)
			case p.Secret:
				return fmt.Errorf("%s: ${{ %s }} is a secret parameter; its value goes into the Secret <name>-secrets, never into the object", where, name)
			}
			used[name] = true
			return nil
		})
	})
	if walkErr != nil {
		var errs interface{ Unwrap() []error }
		if errors.As(walkErr, &errs) {
			for _, e := range errs.Unwrap() {
				add("%v", e)
			}
		} else {
			add("%v", walkErr)
		}
		return problems
	}
	for _, p := range t.Parameters {
		if !p.Secret && !used[p.Name] && paramNameRE.MatchString(p.Name) {
			add("parameter %q is declared but the object never uses ${{ %s }}", p.Name, p.Name)
		}
	}
	return problems
}

// exampleProblems renders the template with example values: the object
// must decode into its kind.
func (t *Template) exampleProblems() []string {
	in := Input{Name: "example", Namespace: "default", Params: map[string]string{}, Secrets: map[string][]byte{}}
	for _, p := range t.Parameters {
		switch {
		case p.Secret:
			in.Secrets[p.Name] = []byte("example")
		case p.Default == nil:
			in.Params[p.Name] = exampleValue(p)
		}
	}
	if _, _, err := t.Render(in); err != nil {
		return []string{err.Error()}
	}
	return nil
}

func exampleValue(p Parameter) string {
	switch p.TypeName() {
	case TypeInteger:
		return "1"
	case TypeBoolean:
		return "false"
	case TypeLabels:
		return ""
	}
	return "example"
}

// templateKinds are what a catalog template renders: one run or app. A
// schedule is a Workflow template put on a schedule; WorkflowTemplates are
// published with kubectl apply and run with --from.
var templateKinds = []kinds.Kind{kinds.UserDeployment, kinds.AgentTask, kinds.Workflow, kinds.SchedExt}
