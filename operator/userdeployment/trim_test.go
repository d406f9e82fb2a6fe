package userdeployment_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/userdeployment"
)

// TestTrimKeepsWhatTheDriftCheckCompares: objects the operator applied are
// cached trimmed to the fields it set (by the managed fields the API server
// keeps), their identity, replicas and status. The drift check gives the
// same answers on the trimmed copy: in sync as applied, and with someone
// else's additions; out of sync when someone changes a field the operator
// set, since that field moves to their manager and leaves the cached copy.
func TestTrimKeepsWhatTheDriftCheckCompares(t *testing.T) {
	ns := namespace(t)
	ctx := t.Context()
	ud := MakeUserDeployment("trim", ns).Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).
		EditService("web", func(s *schedv1.ServiceSpec) { s.Env = []schedv1.EnvVar{{Name: "LOG", Value: "info"}} }).Obj()
	var dep *appsv1.Deployment
	var svc *corev1.Service
	for _, o := range userdeployment.PlanObjects(ud, userdeployment.Settings{}) {
		switch o := o.(type) {
		case *appsv1.Deployment:
			dep = o
		case *corev1.Service:
			svc = o
		}
	}
	gvk := appsv1.SchemeGroupVersion.WithKind("Deployment")
	// live applies obj as the operator does (no owner: nothing here owns it)
	// and returns the trimmed copy of what the API server then holds.
	apply := func(obj client.Object) *unstructured.Unstructured {
		t.Helper()
		form, err := userdeployment.ApplyForm(obj)
		if err != nil {
			t.Fatal(err)
		}
		form.SetOwnerReferences(nil)
		// Apply leaves the server's answer in what it is given.
		if err := sim.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(form.DeepCopy()), client.FieldOwner(userdeployment.FieldOwner), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
		return form
	}
	trimmed := func(obj client.Object, gvk schema.GroupVersionKind) client.Object {
		t.Helper()
		if err := sim.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
		if len(obj.GetManagedFields()) == 0 {
			t.Fatal("the API server returned no managed fields")
		}
		out, err := userdeployment.TrimOwned(gvk)(obj)
		if err != nil {
			t.Fatal(err)
		}
		return out.(client.Object)
	}
	inSync := func(form *unstructured.Unstructured, actual client.Object) bool {
		t.Helper()
		ok, err := userdeployment.InSync(form, actual)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	form := apply(dep)
	got := trimmed(&appsv1.Deployment{ObjectMeta: dep.ObjectMeta}, gvk).(*appsv1.Deployment)
	pod := got.Spec.Template.Spec
	switch {
	case got.ManagedFields != nil:
		t.Error("managed fields kept")
	case got.UID == "" || got.ResourceVersion == "" || got.Generation == 0:
		t.Errorf("identity lost: %+v", got.ObjectMeta)
	case got.Labels[schedv1.LabelService] != "web" || pod.Containers[0].Image != "nginx:1.27" || pod.Containers[0].Env[0].Value != "info":
		t.Errorf("the operator's fields lost: %+v", got)
	case got.Spec.RevisionHistoryLimit == nil || *got.Spec.RevisionHistoryLimit != 0:
		t.Errorf("the operator's revisionHistoryLimit lost: %v", got.Spec.RevisionHistoryLimit)
	case pod.DNSPolicy != "" || pod.SchedulerName != "" || got.Spec.Strategy.RollingUpdate != nil || pod.Containers[0].TerminationMessagePath != "":
		t.Errorf("server defaults kept: %+v", got.Spec)
	case got.Spec.Replicas == nil || *got.Spec.Replicas != 1:
		t.Errorf("replicas = %v, want 1", got.Spec.Replicas)
	}
	if !inSync(form, got) {
		t.Error("as applied: not in sync")
	}

	// edit changes the Deployment as someone else would, by hand.
	edit := func(change func(*appsv1.Deployment)) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			live := &appsv1.Deployment{}
			if err := sim.Client.Get(ctx, client.ObjectKeyFromObject(dep), live); err != nil {
				return err
			}
			change(live)
			return sim.Client.Update(ctx, live, client.FieldOwner("kubectl-edit"))
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	// Someone else's env var and annotation are theirs: no drift, and not
	// cached, however large (a tenant may edit the operator's Deployments).
	edit(func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Env = append(d.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "X", Value: "1"})
		d.Annotations["padding"] = strings.Repeat("x", 64<<10)
	})
	got = trimmed(&appsv1.Deployment{ObjectMeta: dep.ObjectMeta}, gvk).(*appsv1.Deployment)
	if n := len(got.Spec.Template.Spec.Containers[0].Env); n != 1 || got.Annotations["padding"] != "" || !inSync(form, got) {
		t.Errorf("someone else's env var and annotation: %d env vars cached, %d bytes of annotation, in sync %v; want 1, none and in sync",
			n, len(got.Annotations["padding"]), inSync(form, got))
	}

	// The image changed out of band: drift.
	edit(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "evil:1" })
	if got := trimmed(&appsv1.Deployment{ObjectMeta: dep.ObjectMeta}, gvk); inSync(form, got) {
		t.Error("image changed out of band: in sync")
	}

	// Scaled through the scale subresource, as an autoscaler does: the
	// replicas are kept, and are drift unless the plan leaves them alone.
	apply(dep)
	scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 4}}
	if err := sim.Client.SubResource("scale").Update(ctx, &appsv1.Deployment{ObjectMeta: dep.ObjectMeta}, client.WithSubResourceBody(scale)); err != nil {
		t.Fatal(err)
	}
	got = trimmed(&appsv1.Deployment{ObjectMeta: dep.ObjectMeta}, gvk).(*appsv1.Deployment)
	if got.Spec.Replicas == nil || *got.Spec.Replicas != 4 || inSync(form, got) {
		t.Errorf("scaled to 4: replicas %v, in sync %v; want 4, not in sync", got.Spec.Replicas, inSync(form, got))
	}
	autoscaled := form.DeepCopy()
	unstructured.RemoveNestedField(autoscaled.Object, "spec", "replicas")
	if !inSync(autoscaled, got) {
		t.Error("scaled by an autoscaler the plan leaves the replicas to: not in sync")
	}

	// A Service gets a cluster IP and defaulted ports: not drift.
	form = apply(svc)
	gotSvc := trimmed(&corev1.Service{ObjectMeta: svc.ObjectMeta}, corev1.SchemeGroupVersion.WithKind("Service")).(*corev1.Service)
	if gotSvc.Spec.ClusterIP != "" || !inSync(form, gotSvc) {
		t.Errorf("Service: cluster IP %q cached, in sync %v; want none and in sync", gotSvc.Spec.ClusterIP, inSync(form, gotSvc))
	}
}
