package docgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// policy is one ValidatingAdmissionPolicy with its binding and the
// comments written above it and above each of its checks.
type policy struct {
	file      string
	optional  bool
	comment   string
	vap       admissionv1.ValidatingAdmissionPolicy
	binding   *admissionv1.ValidatingAdmissionPolicyBinding
	notes     map[string]string // validation index or match condition name -> its comment
	variables map[string]string // variables that are text, as celMessage reads them
}

// policies is docs/reference/policies.md: each admission policy of
// config/policy (and config/policy/optional), what it matches and each
// check's message.
func policies(root string) (string, error) {
	var all []*policy
	for _, dir := range []string{"config/policy", "config/policy/optional"} {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.yaml"))
		if err != nil {
			return "", err
		}
		for _, f := range files {
			if filepath.Base(f) == "kustomization.yaml" {
				continue
			}
			ps, err := readPolicies(f)
			if err != nil {
				return "", fmt.Errorf("%s: %w", f, err)
			}
			for _, p := range ps {
				p.file = filepath.ToSlash(filepath.Join(dir, filepath.Base(f)))
				p.optional = strings.HasSuffix(dir, "optional")
				all = append(all, p)
			}
		}
	}
	var b strings.Builder
	b.WriteString(header("config/policy/*.yaml and config/policy/optional/*.yaml"))
	b.WriteString("# Admission policies\n\n")
	b.WriteString("The ValidatingAdmissionPolicies `kubectl sched install` applies (those of `config/policy/optional` only when their API is served, see [Operator settings](../admins/settings.md)): ")
	b.WriteString("what each is for, the requests it sees, and each check with the message it refuses with. ")
	b.WriteString("In a message, ⟨name⟩ stands for a value the policy fills in from the request. ")
	b.WriteString("[The security model](../admins/security.md) says why each exists.\n\n")
	b.WriteString("| policy | checks | requests it sees |\n|---|---|---|\n")
	for _, p := range all {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %d | %s |\n", p.vap.Name, Slug(p.vap.Name), len(p.vap.Spec.Validations), cell(matches(p.vap.Spec.MatchConstraints)))
	}
	for _, p := range all {
		p.write(&b)
	}
	return b.String(), nil
}

func readPolicies(path string) ([]*policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*policy
	var bindings []admissionv1.ValidatingAdmissionPolicyBinding
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		if len(doc.Content) == 0 {
			continue
		}
		var obj map[string]any
		if err := doc.Decode(&obj); err != nil {
			return nil, err
		}
		js, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		switch obj["kind"] {
		case "ValidatingAdmissionPolicy":
			p := &policy{notes: map[string]string{}, variables: map[string]string{}}
			if err := json.Unmarshal(js, &p.vap); err != nil {
				return nil, err
			}
			top := doc.Content[0]
			p.comment = comment(doc.HeadComment + "\n\n" + top.HeadComment + "\n\n" + top.Content[0].HeadComment)
			spec := child(top, "spec")
			for i, v := range child(spec, "validations").Content {
				p.notes[fmt.Sprint(i)] = comment(v.HeadComment + "\n" + v.Content[0].HeadComment)
			}
			for _, c := range child(spec, "matchConditions").Content {
				p.notes["condition:"+child(c, "name").Value] = comment(c.HeadComment + "\n" + c.Content[0].HeadComment)
			}
			for _, v := range p.vap.Spec.Variables {
				if celIsText(v.Expression) {
					p.variables[v.Name], _ = celMessage(v.Expression, p.variables)
				}
			}
			out = append(out, p)
		case "ValidatingAdmissionPolicyBinding":
			var bnd admissionv1.ValidatingAdmissionPolicyBinding
			if err := json.Unmarshal(js, &bnd); err != nil {
				return nil, err
			}
			bindings = append(bindings, bnd)
		}
	}
	for _, p := range out {
		for i := range bindings {
			if bindings[i].Spec.PolicyName == p.vap.Name {
				p.binding = &bindings[i]
			}
		}
		if p.binding == nil {
			return nil, fmt.Errorf("policy %s has no binding in the same file", p.vap.Name)
		}
	}
	return out, nil
}

// child is the value of key in a YAML mapping, or an empty node.
func child(n *yaml.Node, key string) *yaml.Node {
	if n != nil && n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i+1]
			}
		}
	}
	return &yaml.Node{}
}

// comment turns YAML comment lines into Markdown, keeping their lines so
// a list stays a list.
func comment(text string) string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			lines = append(lines, "")
			continue
		}
		l = strings.TrimPrefix(strings.TrimPrefix(l, "#"), " ")
		lines = append(lines, escapeProse(l))
	}
	out := strings.TrimSpace(strings.Join(lines, "\n"))
	for strings.Contains(out, "\n\n\n") {
		out = strings.ReplaceAll(out, "\n\n\n", "\n\n")
	}
	return out
}

func (p *policy) write(b *strings.Builder) {
	spec := p.vap.Spec
	fmt.Fprintf(b, "\n## %s\n\n", p.vap.Name)
	if p.comment != "" {
		fmt.Fprintf(b, "%s\n\n", p.comment)
	}
	fmt.Fprintf(b, "- File: [`%s`](../../%s)", p.file, p.file)
	if p.optional {
		b.WriteString(", added by `kubectl sched install` when External Secrets is served (`--external-secrets-policy`)")
	}
	b.WriteString(".\n")
	fmt.Fprintf(b, "- Requests: %s.\n", cell(matches(spec.MatchConstraints)))
	if mc := spec.MatchConstraints; mc != nil {
		if s := selector(mc.NamespaceSelector); s != "" {
			fmt.Fprintf(b, "- Namespaces: labelled %s.\n", s)
		}
		if s := selector(mc.ObjectSelector); s != "" {
			fmt.Fprintf(b, "- Objects: labelled %s.\n", s)
		}
	}
	for _, c := range spec.MatchConditions {
		fmt.Fprintf(b, "- Only when `%s`", c.Name)
		note := strings.TrimSuffix(strings.Join(strings.Fields(p.notes["condition:"+c.Name]), " "), ".")
		if note != "" {
			fmt.Fprintf(b, ": %s", note)
		}
		b.WriteString(".\n")
	}
	if pk := spec.ParamKind; pk != nil {
		ref := p.binding.Spec.ParamRef
		fmt.Fprintf(b, "- Reads a %s", pk.Kind)
		if ref != nil && ref.Name != "" {
			fmt.Fprintf(b, " `%s`", ref.Name)
		}
		if ref != nil && ref.Namespace != "" {
			fmt.Fprintf(b, " in `%s`", ref.Namespace)
		}
		if ref != nil && ref.ParameterNotFoundAction != nil {
			if *ref.ParameterNotFoundAction == admissionv1.AllowAction {
				b.WriteString(" (none found: the request passes)")
			} else {
				b.WriteString(" (none found: the request is refused)")
			}
		}
		b.WriteString(".\n")
	}
	if mr := p.binding.Spec.MatchResources; mr != nil {
		if s := selector(mr.NamespaceSelector); s != "" {
			fmt.Fprintf(b, "- Bound in namespaces labelled %s.\n", s)
		}
		if s := selector(mr.ObjectSelector); s != "" {
			fmt.Fprintf(b, "- Bound to objects labelled %s.\n", s)
		}
	}
	var actions []string
	for _, a := range p.binding.Spec.ValidationActions {
		actions = append(actions, string(a))
	}
	failure := "Fail"
	if spec.FailurePolicy != nil {
		failure = string(*spec.FailurePolicy)
	}
	fmt.Fprintf(b, "- Actions: %s; failure policy %s.\n\n", strings.Join(actions, ", "), failure)
	if len(spec.Validations) == 0 {
		return
	}
	why := false
	for i := range spec.Validations {
		why = why || p.notes[fmt.Sprint(i)] != ""
	}
	if why {
		b.WriteString("| # | refuses with | reason | why |\n|---|---|---|---|\n")
	} else {
		b.WriteString("| # | refuses with | reason |\n|---|---|---|\n")
	}
	for i, v := range spec.Validations {
		// The expression's message, unless it reads worse than the
		// static one (which the API server falls back to).
		msg := v.Message
		if v.MessageExpression != "" {
			if m, ok := celMessage(v.MessageExpression, p.variables); ok && m != "" && (msg == "" || !strings.Contains(m, "⟨…⟩")) {
				msg = m
			}
		}
		if msg == "" {
			msg = "failed rule: " + v.Expression
		}
		reason := ""
		if v.Reason != nil {
			reason = string(*v.Reason)
		}
		fmt.Fprintf(b, "| %d | %s | %s |", i+1, cell(msg), reason)
		if why {
			fmt.Fprintf(b, " %s |", cell(p.notes[fmt.Sprint(i)]))
		}
		b.WriteString("\n")
	}
}

// matches is what requests a policy sees, in words.
func matches(mc *admissionv1.MatchResources) string {
	if mc == nil {
		return ""
	}
	var parts []string
	for _, r := range mc.ResourceRules {
		var groups []string
		for _, g := range r.APIGroups {
			if g == "" {
				g = "core"
			}
			groups = append(groups, g)
		}
		var ops []string
		for _, o := range r.Operations {
			ops = append(ops, string(o))
		}
		s := fmt.Sprintf("%s of %s (%s)", strings.Join(ops, ", "), strings.Join(r.Resources, ", "), strings.Join(groups, ", "))
		if r.Scope != nil && *r.Scope != admissionv1.AllScopes {
			s += ", " + strings.ToLower(string(*r.Scope))
		}
		parts = append(parts, s)
	}
	out := strings.Join(parts, "; ")
	for _, r := range mc.ExcludeResourceRules {
		out += "; not " + strings.Join(r.Resources, ", ")
	}
	return out
}

func selector(s *metav1.LabelSelector) string {
	if s == nil || len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0 {
		return ""
	}
	return "`" + metav1.FormatLabelSelector(s) + "`"
}
