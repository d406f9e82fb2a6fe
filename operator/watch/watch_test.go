package watch

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func pod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels}}
}

// passes is what p says of a create of obj, an update from old to obj, a
// delete of obj and a generic event of obj.
func passes(p predicate.Predicate, old, obj client.Object) [4]bool {
	return [4]bool{
		p.Create(event.CreateEvent{Object: obj}),
		p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: obj}),
		p.Delete(event.DeleteEvent{Object: obj}),
		p.Generic(event.GenericEvent{Object: obj}),
	}
}

func TestFilter(t *testing.T) {
	labelled := func(p *corev1.Pod) bool { return p.Labels["app"] != "" }
	labelChanged := func(old, cur *corev1.Pod) bool { return old.Labels["app"] != cur.Labels["app"] }
	a, b, none := pod("p", map[string]string{"app": "a"}), pod("p", map[string]string{"app": "b"}), pod("p", nil)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	cases := map[string]struct {
		p        predicate.Predicate
		old, obj client.Object
		want     [4]bool // create, update, delete, generic
	}{
		"Changed, the field changed":           {p: Changed(labelChanged), old: a, obj: b, want: [4]bool{true, true, true, false}},
		"Changed, the field did not change":    {p: Changed(labelChanged), old: a, obj: a, want: [4]bool{true, false, true, false}},
		"Updated, the field changed":           {p: Updated(labelChanged), old: a, obj: b, want: [4]bool{false, true, false, false}},
		"Updated, the field did not change":    {p: Updated(labelChanged), old: b, obj: b, want: [4]bool{false, false, false, false}},
		"Filter, an object it keeps":           {p: Filter[*corev1.Pod]{Create: labelled, Update: labelChanged, Delete: labelled}.Predicate(), old: none, obj: a, want: [4]bool{true, true, true, false}},
		"Filter, an object it does not keep":   {p: Filter[*corev1.Pod]{Create: labelled, Update: labelChanged, Delete: labelled}.Predicate(), old: a, obj: none, want: [4]bool{false, true, false, false}},
		"Filter, deletions only":               {p: Filter[*corev1.Pod]{Delete: Every[*corev1.Pod]}.Predicate(), old: a, obj: b, want: [4]bool{false, false, true, false}},
		"Filter, an object of another kind":    {p: Filter[*corev1.Pod]{Create: labelled, Update: labelChanged, Delete: labelled}.Predicate(), old: node, obj: node, want: [4]bool{true, true, true, false}},
		"Updated, an object of another kind":   {p: Updated(labelChanged), old: node, obj: node, want: [4]bool{false, true, false, false}},
		"Changed over client.Object":           {p: Changed(func(old, cur client.Object) bool { return old.GetName() != cur.GetName() }), old: a, obj: node, want: [4]bool{true, true, true, false}},
		"Changed over client.Object, the same": {p: Changed(func(old, cur client.Object) bool { return old.GetName() != cur.GetName() }), old: a, obj: b, want: [4]bool{true, false, true, false}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, passes(tc.p, tc.old, tc.obj)); diff != "" {
				t.Errorf("create, update, delete, generic (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnqueueListed(t *testing.T) {
	const index = "byApp"
	objs := []client.Object{
		pod("a1", map[string]string{"app": "a"}),
		pod("a2", map[string]string{"app": "a", "privileged": "true"}),
		pod("b1", map[string]string{"app": "b"}),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a3", Namespace: "other", Labels: map[string]string{"app": "a"}}},
	}
	c := fake.NewClientBuilder().WithObjects(objs...).
		WithIndex(&corev1.Pod{}, index, func(o client.Object) []string { return []string{o.GetLabels()["app"]} }).
		Build()
	newList := func() client.ObjectList { return &corev1.PodList{} }
	byApp := func(o client.Object) ([]client.ListOption, bool) {
		app := o.GetLabels()["app"]
		return []client.ListOption{client.MatchingFields{index: app}}, app != ""
	}
	privileged := func(o client.Object) bool { return o.GetLabels()["privileged"] == "true" }
	req := func(ns, name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
	}
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}
	cases := map[string]struct {
		where func(client.Object) ([]client.ListOption, bool)
		keep  func(client.Object) bool
		obj   client.Object
		want  []reconcile.Request
	}{
		"by an index":                        {where: byApp, obj: pod("x", map[string]string{"app": "a"}), want: []reconcile.Request{req("ns", "a1"), req("ns", "a2"), req("other", "a3")}},
		"where says nothing":                 {where: byApp, obj: pod("x", nil)},
		"in a namespaced object's namespace": {where: InNamespace, obj: pod("x", nil), want: []reconcile.Request{req("ns", "a1"), req("ns", "a2"), req("ns", "b1")}},
		"in a Namespace":                     {where: InNamespace, obj: namespace, want: []reconcile.Request{req("ns", "a1"), req("ns", "a2"), req("ns", "b1")}},
		"those keep passes":                  {where: InNamespace, keep: privileged, obj: namespace, want: []reconcile.Request{req("ns", "a2")}},
		"an index the cache lacks: no object": {where: func(client.Object) ([]client.ListOption, bool) {
			return []client.ListOption{client.MatchingFields{"none": "x"}}, true
		}, obj: namespace},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			EnqueueListed(c, newList, tc.where, tc.keep).Create(context.Background(), event.CreateEvent{Object: tc.obj}, q)
			var got []reconcile.Request
			for q.Len() > 0 {
				r, _ := q.Get()
				got = append(got, r)
				q.Done(r)
			}
			less := func(a, b reconcile.Request) bool { return a.String() < b.String() }
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(less)); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}
