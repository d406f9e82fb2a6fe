// Package wftemplate copies the template a Workflow names
// (spec.workflowTemplateRef) into its spec, once, when the run starts: the
// run then records what it runs, and a template edited or deleted later
// changes no run that started. A retry (spec.retryOf) of a run from the
// same template takes what that run copied, not the template as it is now.
package wftemplate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// Unresolved reports whether wf names a template the operator has not
// copied in yet.
func Unresolved(wf *schedv1.Workflow) bool {
	ref := wf.Spec.WorkflowTemplateRef
	return ref != nil && !ref.Resolved() && len(wf.Spec.Steps) == 0
}

// Error is why a run cannot take its template, for its status: Reason is
// the workflow's reason, Wait says the run stays Pending and tries again
// (the template may be created later), else it fails.
type Error struct {
	Reason  string
	Message string
	Wait    bool
}

func (e *Error) Error() string { return e.Message }

// Resolve returns wf's spec with its template copied in. The template is
// read with r (past the operator's cache, which holds no templates): a
// WorkflowTemplate only in wf's namespace, or the ClusterWorkflowTemplate
// the ref names, each by the kind the ref says. prev is the run
// spec.retryOf names (nil when none or gone): when it came from the same
// template, its copy is taken instead of the template.
func Resolve(ctx context.Context, r client.Reader, wf, prev *schedv1.Workflow) (schedv1.WorkflowSpec, error) {
	ref := wf.Spec.WorkflowTemplateRef
	if p := prev; p != nil && p.Spec.WorkflowTemplateRef != nil && p.Spec.WorkflowTemplateRef.Resolved() &&
		p.Spec.WorkflowTemplateRef.Kind == ref.Kind && p.Spec.WorkflowTemplateRef.Name == ref.Name {
		pr := p.Spec.WorkflowTemplateRef
		return Merge(&p.Spec, &wf.Spec, fmt.Sprintf("%s (as workflow %s took it)", ref, p.Name), pr.UID, pr.ResourceVersion)
	}
	var (
		obj  client.Object
		spec *schedv1.WorkflowSpec
		key  = client.ObjectKey{Name: ref.Name}
		what string
	)
	switch ref.Kind {
	case schedv1.KindWorkflowTemplate:
		t := &schedv1.WorkflowTemplate{}
		obj, spec, key.Namespace = t, &t.Spec, wf.Namespace
		what = fmt.Sprintf("WorkflowTemplate %s in namespace %s", ref.Name, wf.Namespace)
	case schedv1.KindClusterWorkflowTemplate:
		t := &schedv1.ClusterWorkflowTemplate{}
		obj, spec = t, &t.Spec
		what = "ClusterWorkflowTemplate " + ref.Name
	default:
		// The CRD's enum allows no other.
		return schedv1.WorkflowSpec{}, &Error{Reason: schedv1.ReasonInvalidSpec, Message: fmt.Sprintf("spec.workflowTemplateRef.kind %q: name a WorkflowTemplate or a ClusterWorkflowTemplate", ref.Kind)}
	}
	if err := r.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return schedv1.WorkflowSpec{}, &Error{Reason: schedv1.ReasonTemplateNotFound, Wait: true,
				Message: fmt.Sprintf("%s does not exist: create it, or delete this run and name another in spec.workflowTemplateRef ('kubectl sched template list' lists them); the run waits for it", what)}
		}
		return schedv1.WorkflowSpec{}, fmt.Errorf("read %s: %w", what, err)
	}
	return Merge(spec, &wf.Spec, ref.String(), obj.GetUID(), obj.GetResourceVersion())
}

// Merge is the run spec run with the template tmpl copied in: its steps,
// finally steps and workspaces; its params, each with the run's value
// where the run sets it (a param the template does not declare is an
// Error); its timeout and ttlAfterFinished where the run sets none; its
// failFast when true. What only a run has (retryOf, cancel, suspend,
// approvals, requestedBy, noCache) is the run's. The ref records uid and
// resourceVersion. what names the template in messages.
func Merge(tmpl, run *schedv1.WorkflowSpec, what string, uid types.UID, resourceVersion string) (schedv1.WorkflowSpec, error) {
	out := *run.DeepCopy()
	t := tmpl.DeepCopy()
	declared := make([]string, 0, len(t.Params))
	for _, p := range t.Params {
		declared = append(declared, p.Name)
	}
	var unknown []string
	for _, p := range run.Params {
		if !slices.Contains(declared, p.Name) {
			unknown = append(unknown, p.Name)
		}
	}
	if len(unknown) > 0 {
		has := "declares no params"
		if len(declared) > 0 {
			has = "declares " + strings.Join(declared, ", ")
		}
		isNot := "is not a param"
		if len(unknown) > 1 {
			isNot = "are not params"
		}
		return schedv1.WorkflowSpec{}, &Error{Reason: schedv1.ReasonInvalidParams,
			Message: fmt.Sprintf("spec.params: %s %s of %s, which %s: set only those (kubectl sched template list shows them)", strings.Join(unknown, ", "), isNot, what, has)}
	}
	params := t.Params
	for i := range params {
		for _, p := range run.Params {
			if p.Name == params[i].Name {
				params[i].Value = p.Value
			}
		}
	}
	out.Params = params
	out.Steps, out.Finally, out.Workspaces = t.Steps, t.Finally, t.Workspaces
	if out.Timeout == nil {
		out.Timeout = t.Timeout
	}
	if out.TTLAfterFinished == nil {
		out.TTLAfterFinished = t.TTLAfterFinished
	}
	out.FailFast = out.FailFast || t.FailFast
	out.WorkflowTemplateRef.UID = uid
	out.WorkflowTemplateRef.ResourceVersion = resourceVersion
	return out, nil
}
