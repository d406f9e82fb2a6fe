package templates

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/substitution"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
)

// Input is what a template is rendered with.
type Input struct {
	// Name is the object's name, and ${{ name }}.
	Name string
	// Namespace is the object's namespace (ignored for SchedExt), and
	// ${{ namespace }}.
	Namespace string
	// Params are the values of non-secret parameters, as text.
	Params map[string]string
	// Secrets are the values of secret parameters. They go into the
	// returned Secret only.
	Secrets map[string][]byte
}

// SecretName is the Secret that holds the secret parameters of the object
// called name.
func SecretName(name string) string { return name + "-secrets" }

// Labels of the Secret of secret parameters: part of kubectl-sched, for
// the app, task or workflow it is named after.
const (
	LabelPartOf   = "app.kubernetes.io/part-of"
	LabelInstance = "app.kubernetes.io/instance"
)

// Render finds the template ref names in src and renders it; see
// [Template.Render]. Errors keep their exit codes; pass them through
// [CommandError] to give broken templates theirs.
func Render(ctx context.Context, src *Source, ref string, in Input) (client.Object, *corev1.Secret, error) {
	t, err := src.Get(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	return t.Render(in)
}

// Render renders the template: the object, and the Secret holding the
// secret parameters (nil when none were given). The caller applies both,
// the Secret first. Unknown, missing or ill-typed parameters are usage
// errors (exit code 2) listing what the template expects.
func (t *Template) Render(in Input) (client.Object, *corev1.Secret, error) {
	if in.Name == "" {
		return nil, nil, fmt.Errorf("render template %s: the object needs a name", t.Name())
	}
	values, err := t.values(in)
	if err != nil {
		return nil, nil, err
	}
	kind := t.ObjectKind()
	rendered, err := transform(t.Object, nil, func(path []string, s string) (any, error) {
		if name, ok := wholePlaceholder(s); ok {
			if p, _ := t.Param(name); p.TypeName() != TypeString {
				return typed(p, values[name])
			}
		}
		escape := kind == kinds.Workflow.Kind && isReferenceString(path)
		var b strings.Builder
		err := scan(s, func(l string) { b.WriteString(l) }, func(name string, _ int) error {
			v, ok := values[name]
			if !ok {
				return fmt.Errorf("${{ %s }} names no declared parameter", name)
			}
			if escape {
				v = substitution.Escape(v)
			}
			b.WriteString(v)
			return nil
		})
		return b.String(), err
	})
	if err != nil {
		return nil, nil, t.invalid(err)
	}
	m := rendered.(map[string]any)
	m["apiVersion"] = schedv1.GroupVersion.String()
	data, err := json.Marshal(m)
	if err != nil {
		return nil, nil, t.invalid(err)
	}

	k, ok := kinds.ByKind(kind)
	if !ok {
		return nil, nil, t.invalid(fmt.Errorf("cannot make a %q", kind))
	}
	obj := k.New()
	obj.GetObjectKind().SetGroupVersionKind(k.GVK())
	if err := kinds.DecodeStrict(data, obj); err != nil {
		return nil, nil, t.invalid(fmt.Errorf("the object does not decode into a %s: %w", kind, err))
	}
	obj.SetName(in.Name)
	if k.Namespaced {
		obj.SetNamespace(in.Namespace)
	}
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationTemplate] = t.Name()
	obj.SetAnnotations(ann)

	secret := t.secret(in, obj)
	if ud, ok := obj.(*schedv1.UserDeployment); ok {
		referenceSecret(ud, secret)
	}
	if wf, ok := obj.(*schedv1.Workflow); ok {
		if errs := substitution.ValidateWorkflow(&wf.Spec); len(errs) > 0 {
			return nil, nil, t.invalid(errs.ToAggregate())
		}
	}
	return obj, secret, nil
}

func (t *Template) invalid(err error) error {
	return &InvalidError{Source: t.Source, Problems: []string{err.Error()}}
}

// isReferenceString reports whether path is a Workflow string that the
// operator reads ${...} references from (api/substitution): the image,
// command, args and env values of the task of a step or finally step, and
// its forEach.from. Values inserted there are escaped, so a parameter can
// never make a reference (to another step's outputs, a param or ${item}).
// forEach.items are not read (an item is text, like an output) and are not
// escaped.
func isReferenceString(path []string) bool {
	if len(path) < 4 || path[0] != "spec" || path[1] != "steps" && path[1] != "finally" {
		return false
	}
	switch path[3] {
	case "forEach":
		return len(path) == 5 && path[4] == "from"
	case "task":
	default:
		return false
	}
	if len(path) < 5 {
		return false
	}
	switch path[4] {
	case "image":
		return len(path) == 5
	case "command", "args":
		return len(path) == 6
	case "env":
		return len(path) == 7 && path[6] == "value"
	}
	return false
}

// isWhen reports whether path is a Workflow step's when, a CEL expression.
func isWhen(path []string) bool {
	return len(path) == 4 && path[0] == "spec" && (path[1] == "steps" || path[1] == "finally") && path[3] == "when"
}

// values checks the input against the parameters and returns the text of
// every placeholder, built-ins included.
func (t *Template) values(in Input) (map[string]string, error) {
	var problems []string
	for _, k := range sortedKeys(in.Params) {
		p, ok := t.Param(k)
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("unknown parameter %q%s", k, t.suggest(k)))
		case p.Secret:
			problems = append(problems, fmt.Sprintf("%q is a secret parameter: give it with --secret %s=VALUE or --secret-file %s=PATH, not --set", k, k, k))
		}
	}
	for _, k := range sortedKeys(in.Secrets) {
		p, ok := t.Param(k)
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("unknown secret parameter %q%s", k, t.suggest(k)))
		case !p.Secret:
			problems = append(problems, fmt.Sprintf("%q is not a secret parameter: give it with --set %s=VALUE", k, k))
		}
	}
	values := map[string]string{BuiltinName: in.Name, BuiltinNamespace: in.Namespace}
	for _, p := range t.Parameters {
		if p.Secret {
			if v, ok := in.Secrets[p.Name]; p.Required && (!ok || len(v) == 0) {
				problems = append(problems, fmt.Sprintf("missing required secret parameter %q (--secret %s=VALUE)", p.Name, p.Name))
			}
			continue
		}
		v, given := in.Params[p.Name]
		switch {
		case p.Required && (!given || v == ""):
			problems = append(problems, fmt.Sprintf("missing required parameter %q", p.Name))
			continue
		case !given && p.Default != nil:
			v = string(*p.Default)
		case !given:
			v = ""
		}
		if given {
			if _, err := typed(p, v); err != nil {
				problems = append(problems, fmt.Sprintf("parameter %q: %v", p.Name, err))
				continue
			}
		}
		values[p.Name] = v
	}
	if len(problems) > 0 {
		return nil, cmdutil.Usage(t.Expected(), "template %s: %s", t.Name(), strings.Join(problems, "; "))
	}
	return values, nil
}

// Expected lists the parameters, for errors: name, and required or default.
func (t *Template) Expected() string {
	if len(t.Parameters) == 0 {
		return fmt.Sprintf("Template %s takes no parameters.", t.Name())
	}
	var params, secrets []string
	for _, p := range t.Parameters {
		var attrs []string
		if p.TypeName() != TypeString {
			attrs = append(attrs, p.TypeName())
		}
		switch {
		case p.Required:
			attrs = append(attrs, "required")
		case p.Default != nil:
			attrs = append(attrs, fmt.Sprintf("default %q", string(*p.Default)))
		default:
			attrs = append(attrs, "optional")
		}
		s := p.Name + " (" + strings.Join(attrs, ", ") + ")"
		if p.Secret {
			secrets = append(secrets, s)
		} else {
			params = append(params, s)
		}
	}
	var parts []string
	if len(params) > 0 {
		parts = append(parts, "--set "+strings.Join(params, ", "))
	}
	if len(secrets) > 0 {
		parts = append(parts, "--secret "+strings.Join(secrets, ", "))
	}
	return fmt.Sprintf("Template %s expects: %s. See 'kubectl sched template show %s'.", t.Name(), strings.Join(parts, "; "), t.Name())
}

// suggest names a declared parameter close to k, for typos.
func (t *Template) suggest(k string) string {
	best, bestD := "", 3
	for _, p := range t.Parameters {
		if d := distance(strings.ToLower(k), strings.ToLower(p.Name)); d < bestD {
			best, bestD = p.Name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// distance is the Levenshtein distance, bounded to short names.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// typed converts a value to its parameter's type.
func typed(p Parameter, v string) (any, error) {
	switch p.TypeName() {
	case TypeInteger:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("want an integer, got %q", v)
		}
		return n, nil
	case TypeBoolean:
		switch strings.TrimSpace(v) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("want true or false, got %q", v)
	case TypeLabels:
		m, err := labels.ConvertSelectorToLabelsMap(v)
		if err != nil {
			return nil, fmt.Errorf("want key=value pairs separated by commas, got %q: %v", v, err)
		}
		out := map[string]any{}
		for k, val := range m {
			out[k] = val
		}
		return out, nil
	}
	return v, nil
}

// secret builds the Secret of secret parameters, or nil without values.
func (t *Template) secret(in Input, obj client.Object) *corev1.Secret {
	data := map[string][]byte{}
	for _, p := range t.Parameters {
		if v, ok := in.Secrets[p.Name]; p.Secret && ok {
			data[p.Name] = v
		}
	}
	if len(data) == 0 {
		return nil
	}
	// The user writes this Secret, so it carries none of the operator's
	// reserved labels (config/policy/reserved_labels.yaml).
	lbls := map[string]string{LabelPartOf: schedv1.ManagedByValue, LabelInstance: obj.GetName()}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name: SecretName(in.Name), Namespace: in.Namespace, Labels: lbls,
			Annotations: map[string]string{AnnotationTemplate: t.Name()},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

// referenceSecret points the app's "params" secret reference at secret, or
// drops the reference when there is no Secret to point at.
func referenceSecret(ud *schedv1.UserDeployment, secret *corev1.Secret) {
	i := slices.IndexFunc(ud.Spec.Secrets, func(r schedv1.SecretReference) bool { return r.Name == SecretRefName })
	switch {
	case secret == nil && i >= 0:
		ud.Spec.Secrets = slices.Delete(ud.Spec.Secrets, i, i+1)
	case secret == nil:
	case i >= 0:
		ud.Spec.Secrets[i].SecretName = secret.Name
	default:
		ud.Spec.Secrets = append(ud.Spec.Secrets, schedv1.SecretReference{Name: SecretRefName, SecretName: secret.Name})
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
