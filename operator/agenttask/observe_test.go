package agenttask

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// TestObserveReadsPastALaggingPodCache: after an API server restart the Job
// informer can resync before the pod informer, so a Complete Job is seen
// with no pod. The pod still exists (the outputs finalizer holds it) and its
// outputs must be read from the API server, not reported lost.
func TestObserveReadsPastALaggingPodCache(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = schedv1.AddToScheme(scheme)

	task := MakeAgentTask("t", "ns").Image("x").Obj()
	task.UID = "task-uid"
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: names.Job("t"), Namespace: "ns", UID: "job-uid",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: schedv1.GroupVersion.String(), Kind: "AgentTask", Name: "t", UID: task.UID, Controller: ptr.To(true)}}},
		Status: batchv1.JobStatus{Succeeded: 1, Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "t-abcde", Namespace: "ns",
		Labels:          map[string]string{schedv1.LabelAgentTask: names.Job("t")},
		Finalizers:      []string{OutputsFinalizer},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}}},
		Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{Name: "task",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Message: "answer=42"}}}}}}
	// A forged pod the Job does not control is ignored on this path too.
	forged := pod.DeepCopy()
	forged.Name, forged.OwnerReferences = "forged", nil
	forged.Status.ContainerStatuses[0].State.Terminated.Message = "answer=forged"

	index := func(o client.Object) []string {
		if v, ok := o.GetLabels()[schedv1.LabelAgentTask]; ok {
			return []string{v}
		}
		return nil
	}
	cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(task, job).WithIndex(&corev1.Pod{}, podTaskIndex, index).
		WithIndex(&corev1.Event{}, eventJobIndex, eventJob).Build()
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(task, job, pod, forged).Build()

	for name, tc := range map[string]struct {
		reader  client.Reader
		outputs map[string]string
		message string
	}{
		"pod read past the cache": {reader: live, outputs: map[string]string{"answer": "42"}, message: "succeeded with 1 output(s)"},
		"pod really gone":         {reader: cached, message: "succeeded; its pod was removed before its outputs could be read"},
	} {
		t.Run(name, func(t *testing.T) {
			r := &Reconciler{Client: cached, APIReader: tc.reader}
			o, err := r.observe(context.Background(), task)
			if err != nil {
				t.Fatal(err)
			}
			st := computeStatus(task, o, metav1.Now())
			if st.Phase != schedv1.TaskSucceeded {
				t.Fatalf("phase %s, want Succeeded", st.Phase)
			}
			if diff := cmp.Diff(tc.outputs, st.Outputs); diff != "" {
				t.Errorf("outputs (-want +got):\n%s", diff)
			}
			if st.Message != tc.message {
				t.Errorf("message %q, want %q", st.Message, tc.message)
			}
		})
	}
}
