package tierbounds_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestTiersWorkUnderADefaultPriorityClass: many clusters have a
// PriorityClass with globalDefault, which the API server gives every pod
// that names none. One above the free tier's threshold (here 1000) made
// every free-tier pod without a placement.priority fall to the tier's
// priority quota (pods: 0 for the classes above it): tasks never ran, apps
// never started. The tier's quota now names the class its pods get
// instead, the highest of its own (kubectl-sched-low), and the operator
// gives it to the pods it makes: a member's task runs, and an app made
// before the class existed rolls onto it. Not parallel: the class is the
// whole cluster's, and goes when the test ends.
func TestTiersWorkUnderADefaultPriorityClass(t *testing.T) {
	ctx := t.Context()
	const ns = "priority-free"
	member := testenv.Tenant(t, sim, ns, "free", "pat", 2*time.Minute)
	createAs(t, member, MakeUserDeployment("shop", ns).Service("web", "registry.example/web:1", 8080, schedv1.ExposureInternal).Obj())
	poll(t, pollTimeout, "the app's pod running", func(ctx context.Context) error {
		_, err := appPod(ctx, ns, "shop", "")
		return err
	})

	def := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "cluster-default"}, Value: 1000, GlobalDefault: true}
	if err := sim.Client.Create(ctx, def); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Client.Delete(context.Background(), def) })
	poll(t, pollTimeout, "the tier's quota to name its pods' class", func(ctx context.Context) error {
		q := &corev1.ResourceQuota{}
		if err := sim.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: schedv1.TierObjectName}, q); err != nil {
			return err
		}
		if got := q.Annotations[schedv1.AnnotationTierDefaultPriorityClass]; got != "kubectl-sched-low" {
			return fmt.Errorf("default class %q", got)
		}
		return nil
	})

	createAs(t, member, MakeAgentTask("job", ns).Image("registry.example/agent:1").
		PodAnnotation(cluster.AnnotationRunSeconds, "1").PodAnnotation(cluster.AnnotationTerminationMessage, "k=v").Obj())
	poll(t, pollTimeout, "the task to succeed", func(ctx context.Context) error {
		a := &schedv1.AgentTask{}
		if err := member.Get(ctx, client.ObjectKey{Namespace: ns, Name: "job"}, a); err != nil {
			return err
		}
		if a.Status.Phase != schedv1.TaskSucceeded {
			return fmt.Errorf("task %s (%s): %s", a.Status.Phase, a.Status.Reason, a.Status.Message)
		}
		return nil
	})
	for _, p := range taskPods(ctx, t, ns, "job") {
		if p.Spec.PriorityClassName != "kubectl-sched-low" || p.Spec.Priority == nil || *p.Spec.Priority != -100 {
			t.Errorf("task pod %s: class %q priority %v, want kubectl-sched-low at -100", p.Name, p.Spec.PriorityClassName, p.Spec.Priority)
		}
	}

	poll(t, pollTimeout, "the app rolled onto the tier's class", func(ctx context.Context) error {
		dep := &appsv1.Deployment{}
		if err := sim.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.ServiceObject("shop", "web")}, dep); err != nil {
			return err
		}
		if c := dep.Spec.Template.Spec.PriorityClassName; c != "kubectl-sched-low" {
			return fmt.Errorf("Deployment's pods get class %q", c)
		}
		_, err := appPod(ctx, ns, "shop", "kubectl-sched-low")
		return err
	})
}

// appPod is a running pod of app of class ("" any).
func appPod(ctx context.Context, ns, app, class string) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := sim.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelUserDeployment: app}); err != nil {
		return nil, err
	}
	for i, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && (class == "" || p.Spec.PriorityClassName == class) {
			return &pods.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no running pod of class %q among %d", class, len(pods.Items))
}
