package agenttask

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/cachetrim"
	"github.com/kubectl-sched/kubectl-sched/operator/taskjob"
)

// TestTrimTask: the cache keeps a task's metadata the controllers read
// and drops the rest (kubectl's last-applied copy, a tenant's labels and
// annotations, managed fields); a task whose command, args, env and pod
// metadata pass cachetrim.TrimAbove loses them, but for the pod annotations that
// loosen Pod Security, so privilegeAsked says the same of both copies,
// and is marked; a small one is kept whole.
func TestTrimTask(t *testing.T) {
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "t", Namespace: "ns",
			Labels: map[string]string{schedv1.LabelWorkflow: "wf", schedv1.LabelWorkflowStep: "0", "team": strings.Repeat("x", 63)},
			Annotations: map[string]string{
				"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("{}", 100<<10),
				schedv1.AnnotationPreviousStepFinished:             "2030-01-02T03:04:05Z",
				"note":                                             "hi",
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		}
	}
	wantMeta := func(trimmed bool) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: "t", Namespace: "ns",
			Labels:      map[string]string{schedv1.LabelWorkflow: "wf", schedv1.LabelWorkflowStep: "0"},
			Annotations: map[string]string{schedv1.AnnotationPreviousStepFinished: "2030-01-02T03:04:05Z"}}
		if trimmed {
			m.Annotations[cachetrim.AnnotationTrimmed] = "true"
		}
		return m
	}

	small := &schedv1.AgentTask{ObjectMeta: meta(), Spec: MakeAgentTask("t", "ns").Image("busybox").Args("echo", "hi").Obj().Spec}
	got, err := TrimTask(small.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	task := got.(*schedv1.AgentTask)
	if diff := cmp.Diff(wantMeta(false), task.ObjectMeta); diff != "" {
		t.Errorf("small task's metadata (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(small.Spec, task.Spec); diff != "" || cachetrim.Trimmed(task) {
		t.Errorf("a small task's spec is kept whole, unmarked (-want +got):\n%s", diff)
	}

	large := &schedv1.AgentTask{ObjectMeta: meta(), Spec: LargestTaskSpec()}
	large.Spec.PodMetadata.Annotations["container.apparmor.security.beta.kubernetes.io/task"] = "unconfined"
	got, err = TrimTask(large.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	task = got.(*schedv1.AgentTask)
	if diff := cmp.Diff(wantMeta(true), task.ObjectMeta); diff != "" || !cachetrim.Trimmed(task) {
		t.Errorf("large task's metadata (-want +got):\n%s", diff)
	}
	want := large.Spec
	want.Command, want.Args, want.Env = nil, nil, nil
	want.PodMetadata = &schedv1.PodMetadata{Annotations: map[string]string{"container.apparmor.security.beta.kubernetes.io/task": "unconfined"}}
	if diff := cmp.Diff(want, task.Spec); diff != "" {
		t.Errorf("large task's spec (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(taskjob.PrivilegeAsked(large), taskjob.PrivilegeAsked(task)); diff != "" || len(taskjob.PrivilegeAsked(task)) == 0 {
		t.Errorf("privilegeAsked of the trimmed copy (-whole +trimmed):\n%s", diff)
	}
	whole, trimmed := size(t, large), size(t, task)
	t.Logf("the largest task: %d bytes whole, %d cached", whole, trimmed)
	if trimmed > 64<<10 {
		t.Errorf("the largest task is cached in %d bytes; want at most 64 KiB", trimmed)
	}
}

func size(t *testing.T, v any) int {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return len(data)
}
