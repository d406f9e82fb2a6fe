// Package watch holds what the controllers' watches share: the predicates
// that say which events of a kind can change what a controller does,
// written over the kind's own type (Filter, Changed, Updated), and the
// handler that maps one object's change to the objects a cache list
// selects (EnqueueListed).
package watch

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Filter says, with funcs over the watched kind T, which of its events
// pass: Create and Delete by the object, Update by the old and the new
// one. A nil func passes none of its events. Generic events, which a
// watch of a kind never sends, pass none. An object that is not a T (a
// watch of T never sends one) passes, so a mistake wakes too much rather
// than nothing.
type Filter[T client.Object] struct {
	Create func(obj T) bool
	Update func(old, new T) bool
	Delete func(obj T) bool
}

// Predicate is f for the builder's For, Owns and Watches.
func (f Filter[T]) Predicate() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return one(f.Create, e.Object) },
		DeleteFunc: func(e event.DeleteEvent) bool { return one(f.Delete, e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if f.Update == nil {
				return false
			}
			old, ok1 := e.ObjectOld.(T)
			cur, ok2 := e.ObjectNew.(T)
			return !ok1 || !ok2 || f.Update(old, cur)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

func one[T client.Object](f func(T) bool, o client.Object) bool {
	if f == nil {
		return false
	}
	obj, ok := o.(T)
	return !ok || f(obj)
}

// Every passes every object: for a Filter's Create or Delete.
func Every[T client.Object](T) bool { return true }

// Changed passes every creation and deletion of T's objects, and the
// updates that changed says matter.
func Changed[T client.Object](changed func(old, new T) bool) predicate.Funcs {
	return Filter[T]{Create: Every[T], Update: changed, Delete: Every[T]}.Predicate()
}

// Updated passes only the updates that changed says matter: a creation
// or deletion of T's objects never does.
func Updated[T client.Object](changed func(old, new T) bool) predicate.Funcs {
	return Filter[T]{Update: changed}.Predicate()
}

// EnqueueListed enqueues, for the object of an event, the objects of
// newList's kind that the options where gives for it select in c (a
// cache), those keep passes (nil: every one). where's ok false maps the
// object to nothing. An error is logged, and maps to nothing: the cache
// answers from memory, and only fails for an index it lacks.
func EnqueueListed(c client.Reader, newList func() client.ObjectList, where func(client.Object) (opts []client.ListOption, ok bool), keep func(client.Object) bool) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		opts, ok := where(o)
		if !ok {
			return nil
		}
		list := newList()
		if err := c.List(ctx, list, opts...); err != nil {
			log.FromContext(ctx).Error(err, "Cannot list the objects a change concerns", "list", fmt.Sprintf("%T", list), "object", client.ObjectKeyFromObject(o))
			return nil
		}
		return Requests(list, keep)
	})
}

// Requests are the reconcile requests of list's items that keep passes
// (nil: every one).
func Requests(list client.ObjectList, keep func(client.Object) bool) []reconcile.Request {
	var reqs []reconcile.Request
	_ = meta.EachListItem(list, func(item runtime.Object) error {
		if obj, ok := item.(client.Object); ok && (keep == nil || keep(obj)) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
		return nil
	})
	return reqs
}

// InNamespace selects, for EnqueueListed, the objects in the namespace of
// the event's object, or in the Namespace that is the event's object.
func InNamespace(o client.Object) ([]client.ListOption, bool) {
	ns := o.GetNamespace()
	if _, ok := o.(*corev1.Namespace); ok {
		ns = o.GetName()
	}
	return []client.ListOption{client.InNamespace(ns)}, true
}
