package describe

import (
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// workflowTemplate shows a WorkflowTemplate or ClusterWorkflowTemplate:
// its params with their defaults and descriptions, and its steps, and how
// to run it.
func (d *describer) workflowTemplate(w *printing.DescribeWriter, obj client.Object, kind string, spec *schedv1.WorkflowSpec) {
	w.Header(obj, kind)
	if spec.Timeout != nil {
		w.Field(0, "Timeout", spec.Timeout.Duration.String())
	}
	if spec.TTLAfterFinished != nil {
		w.Field(0, "TTL After Finished", spec.TTLAfterFinished.Duration.String())
	}
	if spec.FailFast {
		w.Field(0, "Fail Fast", "true")
	}
	rows := [][]string{}
	for _, p := range spec.Params {
		rows = append(rows, []string{p.Name, printing.OrDash(printing.OneLine(p.Value)), printing.OrDash(printing.OneLine(p.Description))})
	}
	w.Table(0, "Params", []string{"Name", "Default", "Description"}, rows)
	headers := []string{"#", "Name", "Runs", "Depends On"}
	w.Table(0, "Steps", headers, templateSteps(spec.Steps))
	if len(spec.Finally) > 0 {
		w.Table(0, "Finally", headers, templateSteps(spec.Finally))
	}
	short := "wft"
	if kind == schedv1.KindClusterWorkflowTemplate {
		short = "cwft"
	}
	w.Field(0, "Run With", fmt.Sprintf("kubectl sched workflow run --from %s/%s [-p NAME=VALUE]...", short, obj.GetName()))
}

// templateSteps are a template's steps: what each runs (its image, or an
// approval) and the steps it waits for.
func templateSteps(steps []schedv1.WorkflowStep) [][]string {
	rows := [][]string{}
	for i, s := range steps {
		runs := s.Task.Image
		switch {
		case s.Approval != nil:
			runs = "approval"
		case s.ForEach != nil:
			runs += " (for each item)"
		}
		rows = append(rows, []string{strconv.Itoa(i), s.Name, runs, printing.OrDash(strings.Join(s.DependsOn, ","))})
	}
	return rows
}
