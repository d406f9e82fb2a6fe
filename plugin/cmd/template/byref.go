package template

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// byRef is a WorkflowTemplate or ClusterWorkflowTemplate as a row of the
// list: a workflow run by reference (workflow run --from), not rendered.
type byRef struct {
	name, source string
	params       []string
}

// listByRef lists the namespace's WorkflowTemplates and the
// ClusterWorkflowTemplates, named as --from takes them (wft/NAME,
// cwft/NAME). What cannot be read is a warning, as for template
// ConfigMaps; nothing is listed without a cluster, or where the CRDs are
// not installed.
func (o *ListOptions) listByRef(ctx context.Context) []byRef {
	c := o.source.Client
	if c == nil {
		return nil
	}
	var out []byRef
	params := func(spec *schedv1.WorkflowSpec) []string {
		var names []string
		for _, p := range spec.Params {
			names = append(names, p.Name)
		}
		return names
	}
	var wfts schedv1.WorkflowTemplateList
	if err := c.List(ctx, &wfts, client.InNamespace(o.namespace)); o.listed(err, "WorkflowTemplates in namespace "+o.namespace) {
		for _, t := range wfts.Items {
			out = append(out, byRef{name: "wft/" + t.Name, source: "workflowtemplate:" + t.Namespace + "/" + t.Name, params: params(&t.Spec)})
		}
	}
	var cwfts schedv1.ClusterWorkflowTemplateList
	if err := c.List(ctx, &cwfts); o.listed(err, "ClusterWorkflowTemplates") {
		for _, t := range cwfts.Items {
			out = append(out, byRef{name: "cwft/" + t.Name, source: "clusterworkflowtemplate:" + t.Name, params: params(&t.Spec)})
		}
	}
	return out
}

// listed reports whether the list of what succeeded, warning when it was
// refused or failed while the cluster answered.
func (o *ListOptions) listed(err error, what string) bool {
	switch {
	case err == nil:
		return true
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		// kubectl-sched is not installed, or older: no such kinds.
	case apierrors.IsForbidden(err):
		o.warn(fmt.Sprintf("not searching %s: forbidden", what))
	case apierrors.ReasonForError(err) != "":
		o.warn(fmt.Sprintf("not searching %s: %v", what, err))
	}
	return false
}

// row is the byRef's row of the table.
func (r byRef) row(wide bool) []string {
	row := []string{r.name, "Workflow", r.source, "Run by reference: kubectl sched workflow run --from " + r.name}
	if wide {
		row = append(row, strings.Join(r.params, ","))
	}
	return row
}
