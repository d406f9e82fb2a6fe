// Package cachetrim is what the operator's caches keep of AgentTasks,
// Workflows and CronWorkflows, shared by their controllers: each kind's
// transform (agenttask.TrimTask, workflow.TrimWorkflow,
// cronworkflow.TrimCron) trims the metadata as TrimMeta does, and cuts a
// spec whose bulk passes TrimAbove to what the controllers read of it,
// marked so (Trimmed) that its controller reads it whole, past the cache,
// where it needs the rest.
package cachetrim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// AnnotationTrimmed marks an object in the cache whose spec lacks what
// its controller reads past the cache (TrimTask, and the Workflow and
// CronWorkflow transforms). It is never written to the API server.
const AnnotationTrimmed = schedv1.GroupName + "/cache-trimmed"

// TrimAbove is how much of a spec the cache keeps whole: a spec whose
// bulk (its strings a tenant sizes: a task's command, args, env and pod
// metadata; a workflow's too, with its params, forEach items and whens)
// is larger is trimmed. Nearly every spec is far smaller, and is cached
// as before; a large one costs a read past the cache when its controller
// needs what was dropped.
const TrimAbove = 16 << 10

// TaskBulk is the size of the strings of s a tenant sizes most: its
// command, args, env and pod metadata, in bytes.
func TaskBulk(s *schedv1.AgentTaskSpec) int {
	n := 0
	for _, l := range [][]string{s.Command, s.Args} {
		for _, v := range l {
			n += len(v)
		}
	}
	for _, e := range s.Env {
		n += len(e.Name) + len(e.Value)
		if f := e.ValueFrom; f != nil {
			n += 1024 // a reference: names, keys and a path, bounded
		}
	}
	if pm := s.PodMetadata; pm != nil {
		for _, m := range []map[string]string{pm.Labels, pm.Annotations} {
			for k, v := range m {
				n += len(k) + len(v)
			}
		}
	}
	return n
}

// SpecBulk is the size of the strings of s a tenant sizes most: its
// steps' tasks (TaskBulk), whens, forEach items and approval
// messages, and its params, in bytes.
func SpecBulk(s *schedv1.WorkflowSpec) int {
	n := 0
	for _, list := range [][]schedv1.WorkflowStep{s.Steps, s.Finally} {
		for i := range list {
			st := &list[i]
			n += TaskBulk(&st.Task) + len(st.When)
			if fe := st.ForEach; fe != nil {
				n += len(fe.From)
				for _, item := range fe.Items {
					n += len(item)
				}
			}
			if a := st.Approval; a != nil {
				n += len(a.Message)
			}
		}
	}
	for _, p := range s.Params {
		n += len(p.Name) + len(p.Value) + len(p.Description)
	}
	return n
}

// StepNames is s cut to its steps' and finally steps' names: what a
// trimmed copy keeps.
func StepNames(s *schedv1.WorkflowSpec) schedv1.WorkflowSpec {
	out := schedv1.WorkflowSpec{}
	for _, st := range s.Steps {
		out.Steps = append(out.Steps, schedv1.WorkflowStep{Name: st.Name})
	}
	for _, st := range s.Finally {
		out.Finally = append(out.Finally, schedv1.WorkflowStep{Name: st.Name})
	}
	return out
}

// MarkTrimmed marks a cached object trimmed (AnnotationTrimmed).
func MarkTrimmed(m *metav1.ObjectMeta) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[AnnotationTrimmed] = "true"
}

// AnnotationHeldOutputs lists, on a cached task, the file outputs the
// cache dropped because they are too big for a workflow to pass on
// (schedv1.PassedFileOutputs), as key=bytes, sorted and comma-separated:
// a workflow that references one says it is too big, not missing. It is
// never written to the API server; a tenant who writes it on a task
// changes only the message of a reference to that task's outputs.
const AnnotationHeldOutputs = schedv1.GroupName + "/file-outputs-held"

// maxHeldOutputsLength bounds AnnotationHeldOutputs: MaxFileOutputs keys
// of at most 63 bytes, each with "=", up to 7 digits and ",".
const maxHeldOutputsLength = schedv1.MaxFileOutputs * (63 + 1 + 7 + 1)

// MarkHeldOutputs records on a cached task the keys and sizes of the file
// outputs outs that the cache drops (AnnotationHeldOutputs).
func MarkHeldOutputs(m *metav1.ObjectMeta, outs map[string]string) {
	if len(outs) == 0 {
		return
	}
	parts := make([]string, 0, len(outs))
	for _, k := range slices.Sorted(maps.Keys(outs)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, len(outs[k])))
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[AnnotationHeldOutputs] = strings.Join(parts, ",")
}

// HeldOutputs reads the sizes of a cached task's file outputs that the
// cache dropped (MarkHeldOutputs), by key; nil when there are none.
func HeldOutputs(o metav1.Object) map[string]int {
	v := o.GetAnnotations()[AnnotationHeldOutputs]
	if v == "" {
		return nil
	}
	held := map[string]int{}
	for part := range strings.SplitSeq(v, ",") {
		k, n, ok := strings.Cut(part, "=")
		size, err := strconv.Atoi(n)
		if ok && err == nil && k != "" {
			held[k] = size
		}
	}
	return held
}

// Trimmed reports whether an object is a cached copy its transform
// trimmed.
func Trimmed(o metav1.Object) bool {
	_, ok := o.GetAnnotations()[AnnotationTrimmed]
	return ok
}

// TrimMeta drops from a cached object's metadata what no controller reads
// and a tenant may make large: the managed fields, kubectl's
// last-applied-configuration (a copy of the whole object), and every
// label and annotation but those the controllers read (keptMeta).
func TrimMeta(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	maps.DeleteFunc(m.Labels, func(k, _ string) bool { return !keptMeta[k] })
	maps.DeleteFunc(m.Annotations, func(k, _ string) bool { return !keptMeta[k] })
	// Annotations are not reserved: a tenant may write these on any task
	// or workflow. The operator's own are within keptAnnotationLength; a
	// longer one is not the operator's, and is not kept.
	maps.DeleteFunc(m.Annotations, func(k, v string) bool {
		limit, bounded := keptAnnotationLength[k]
		return bounded && len(v) > limit
	})
}

// keptAnnotationLength bounds the kept annotations: a cache key, and the
// times the operator writes (RFC 3339 with nanoseconds is 35 bytes).
var keptAnnotationLength = map[string]int{
	schedv1.AnnotationCacheKey:             schedv1.MaxCacheKeyLength,
	AnnotationHeldOutputs:                  maxHeldOutputsLength,
	schedv1.AnnotationPreviousStepFinished: maxTimeLength,
	schedv1.AnnotationScheduledTime:        maxTimeLength,
}

const maxTimeLength = 64

// keptMeta are the labels and annotations the controllers read of a task,
// a workflow or a cron workflow, and the mark of a trimmed copy: an
// informer may transform an object twice, and the second time its bulk is
// gone.
var keptMeta = map[string]bool{
	AnnotationTrimmed:                      true,
	AnnotationHeldOutputs:                  true,
	schedv1.LabelManagedBy:                 true,
	schedv1.LabelWorkflow:                  true,
	schedv1.LabelWorkflowStep:              true,
	schedv1.LabelWorkflowItem:              true,
	schedv1.AnnotationPreviousStepFinished: true,
	schedv1.AnnotationScheduledTime:        true,
	// A step's cache key, hashed and whole (api/v1alpha1/stepcache_types.go):
	// the whole key at most MaxCacheKeyLength bytes.
	schedv1.LabelCacheKey: true,
}
