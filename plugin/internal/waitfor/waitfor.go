// Package waitfor follows objects through watch events until a condition
// holds, never by polling, as kubectl rollout status does: an informer
// (client-go's watchtools.UntilWithSync), so a dropped watch is resumed or
// re-listed. Every wait of the plugin goes through Condition.
package waitfor

import (
	"context"
	"errors"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrDeleted is returned by Object when the object is deleted while watched.
var ErrDeleted = errors.New("it was deleted while being watched")

// Condition runs cond on each event of what lw lists and watches, the
// objects there now first (as Added events), until cond returns true or an
// error, or ctx ends: then it returns ctx.Err(). precondition, when not
// nil, first sees the synced store; true from it ends the wait.
//
// The first list failing ends the wait with its error, as the Get before a
// poll did: an informer would retry it until ctx ends, even from a server
// that refuses it or cannot be reached. Lists after a dropped watch are
// retried.
func Condition(ctx context.Context, lw cache.ListerWatcher, objType runtime.Object, precondition watchtools.PreconditionFunc, cond watchtools.ConditionFunc) error {
	inner, stop := context.WithCancel(ctx)
	defer stop()
	first := &firstList{lw: cache.ToListerWatcherWithContext(lw), stop: stop}
	_, err := watchtools.UntilWithSync(inner, &cache.ListWatch{
		ListWithContextFunc:  first.list,
		WatchFuncWithContext: first.watch,
	}, objType, precondition, cond)
	if lerr := first.failed(); lerr != nil {
		return lerr
	}
	if err != nil && ctx.Err() != nil && (wait.Interrupted(err) || errors.Is(err, ctx.Err())) {
		return ctx.Err()
	}
	return err
}

// firstList keeps the error of a list made before any list or watch
// succeeded, and stops the wait.
type firstList struct {
	lw   cache.ListerWatcherWithContext
	stop context.CancelFunc

	mu     sync.Mutex
	synced bool
	err    error
}

func (f *firstList) list(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	l, err := f.lw.ListWithContext(ctx, o)
	f.mu.Lock()
	first := !f.synced && f.err == nil
	if err == nil {
		f.synced = true
	} else if first {
		f.err = err
	}
	f.mu.Unlock()
	if err != nil && first {
		f.stop()
		// Returned once the wait stopped the informer, so the reflector
		// does not log the error the wait returns.
		<-ctx.Done()
	}
	return l, err
}

// watch counts as a success too: client-go's watch-list starts with a
// watch rather than a list.
func (f *firstList) watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := f.lw.WatchWithContext(ctx, o)
	if err == nil {
		f.mu.Lock()
		f.synced = true
		f.mu.Unlock()
	}
	return w, err
}

func (f *firstList) failed() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Object calls fn with each version of obj (found by obj's namespace and
// name; list is its list kind), the current one first, until fn returns true
// or an error, or ctx ends (then it returns ctx.Err()). An object that does
// not exist is a NotFound error; one deleted while watched, ErrDeleted.
// fn must not keep or change the object it is given.
func Object[T client.Object](ctx context.Context, c client.WithWatch, obj T, list client.ObjectList, fn func(T) (bool, error)) error {
	name := obj.GetName()
	precondition := func(store cache.Store) (bool, error) {
		if _, exists, err := store.Get(obj); err != nil || exists {
			return false, err
		}
		return true, apierrors.NewNotFound(groupResource(c, obj), name)
	}
	cond := func(e watch.Event) (bool, error) {
		switch e.Type {
		case watch.Deleted:
			return false, ErrDeleted
		case watch.Error:
			return false, apierrors.FromObject(e.Object)
		}
		o, ok := e.Object.(T)
		if !ok {
			return false, nil
		}
		return fn(o)
	}
	return Condition(ctx, ListWatch(c, list, obj.GetNamespace(), Named(name)), obj, precondition, cond)
}

// Resource calls fn with each version of the object name of r, the current
// one first, and with nil while there is none (not created yet, or
// deleted), until fn returns true or an error, or ctx ends (then it returns
// ctx.Err()). It is Object for what is known only as unstructured (install's
// manifests). fn must not keep or change the object it is given.
func Resource(ctx context.Context, r dynamic.ResourceInterface, name string, fn func(*unstructured.Unstructured) (bool, error)) error {
	precondition := func(store cache.Store) (bool, error) {
		if len(store.ListKeys()) > 0 {
			return false, nil // its Added event follows
		}
		return fn(nil)
	}
	cond := func(e watch.Event) (bool, error) {
		if e.Type == watch.Deleted {
			return fn(nil)
		}
		u, ok := e.Object.(*unstructured.Unstructured)
		if !ok {
			return false, nil
		}
		return fn(u)
	}
	narrow := Named(name)
	lw := listWatch(
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, o) },
		r.Watch, narrow)
	return Condition(ctx, lw, &unstructured.Unstructured{}, precondition, cond)
}

// Named narrows a ListWatch to the object name, as kubectl rollout status
// does.
func Named(name string) metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
}

// ListWatch lists and watches, through the controller-runtime client, the
// objects of list's kind in namespace ns ("" for all, or for a cluster-wide
// kind) that narrow's label and field selectors pick.
func ListWatch(c client.WithWatch, list client.ObjectList, ns string, narrow metav1.ListOptions) cache.ListerWatcher {
	opts := func(o metav1.ListOptions) []client.ListOption {
		return []client.ListOption{client.InNamespace(ns), &client.ListOptions{Raw: &o}}
	}
	return listWatch(
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			l := list.DeepCopyObject().(client.ObjectList)
			return l, c.List(ctx, l, opts(o)...)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), opts(o)...)
		}, narrow)
}

// listWatch adds narrow's selectors to every list and watch.
func listWatch(list cache.ListWithContextFunc, watchFn cache.WatchFuncWithContext, narrow metav1.ListOptions) cache.ListerWatcher {
	with := func(o metav1.ListOptions) metav1.ListOptions {
		o.LabelSelector, o.FieldSelector = narrow.LabelSelector, narrow.FieldSelector
		return o
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return list(ctx, with(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return watchFn(ctx, with(o))
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
