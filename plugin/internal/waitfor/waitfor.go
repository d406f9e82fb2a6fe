// Package waitfor follows objects through watch events until a condition
// holds, never by polling, as kubectl rollout status does: an informer
// (client-go's watchtools.UntilWithSync), so a dropped watch is resumed or
// re-listed.
package waitfor

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrDeleted is returned by Object when the object is deleted while watched.
var ErrDeleted = errors.New("it was deleted while being watched")

// Object calls fn with each version of obj (found by obj's namespace and
// name; list is its list kind), the current one first, until fn returns true
// or an error, or ctx ends (then it returns ctx.Err()). Like kubectl rollout
// status it runs an informer on the one object, so a dropped watch is
// resumed or re-listed, and nothing is polled. fn must not keep or change
// the object it is given.
func Object[T client.Object](ctx context.Context, c client.WithWatch, obj T, list client.ObjectList, fn func(T) (bool, error)) error {
	ns, name := obj.GetNamespace(), obj.GetName()
	precondition := func(store cache.Store) (bool, error) {
		if _, exists, err := store.Get(obj); err != nil || exists {
			return false, err
		}
		return true, apierrors.NewNotFound(groupResource(c, obj), name)
	}
	cond := func(e apiwatch.Event) (bool, error) {
		switch e.Type {
		case apiwatch.Deleted:
			return false, ErrDeleted
		case apiwatch.Error:
			return false, apierrors.FromObject(e.Object)
		}
		o, ok := e.Object.(T)
		if !ok {
			return false, nil
		}
		return fn(o)
	}
	_, err := watchtools.UntilWithSync(ctx, listWatch(c, list, ns, name), obj, precondition, cond)
	if err != nil && ctx.Err() != nil && (wait.Interrupted(err) || errors.Is(err, ctx.Err())) {
		return ctx.Err()
	}
	return err
}

// listWatch lists and watches the one object named name, as kubectl rollout
// status does, through the controller-runtime client.
func listWatch(c client.WithWatch, list client.ObjectList, ns, name string) cache.ListerWatcher {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	opts := func(o metav1.ListOptions) []client.ListOption {
		o.FieldSelector = sel
		return []client.ListOption{client.InNamespace(ns), &client.ListOptions{Raw: &o}}
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			l := list.DeepCopyObject().(client.ObjectList)
			return l, c.List(ctx, l, opts(o)...)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (apiwatch.Interface, error) {
			return c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), opts(o)...)
		},
	}
}

func groupResource(c client.WithWatch, obj client.Object) schema.GroupResource {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return schema.GroupResource{}
	}
	m, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}
	}
	return m.Resource.GroupResource()
}
