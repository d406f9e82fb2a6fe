package status

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// Pure logic: an unchanged status sends nothing; a changed one is written.
// (The optimistic lock against a real API server is tested by each
// controller's conflict tests.)
func TestPatchWritesOnlyChanges(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := schedv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	task := &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "ns"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(task).WithStatusSubresource(task).Build()
	ctx := context.Background()
	if err := c.Get(ctx, client.ObjectKeyFromObject(task), task); err != nil {
		t.Fatal(err)
	}

	before := task.DeepCopy()
	if wrote, err := Patch(ctx, c, task, before); wrote || err != nil {
		t.Fatalf("unchanged: wrote %v, %v", wrote, err)
	}
	SetCondition(&task.Status.Conditions, 3, metav1.Condition{Type: schedv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Done", Message: "all done"})
	task.Status.Phase = schedv1.TaskSucceeded
	if wrote, err := Patch(ctx, c, task, before); !wrote || err != nil {
		t.Fatalf("changed: wrote %v, %v", wrote, err)
	}
	got := &schedv1.AgentTask{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(task), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != schedv1.TaskSucceeded || len(got.Status.Conditions) != 1 || got.Status.Conditions[0].ObservedGeneration != 3 {
		t.Errorf("status %+v", got.Status)
	}
}
