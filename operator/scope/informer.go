package scope

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kind is the informer of a kind cached per namespace: it holds the
// informer of each namespace served, and the handlers and indexers added,
// which a namespace taken up later gets too.
type kind struct {
	c        *Cache
	key      kindKey
	template client.Object
	// Guarded by c.mu.
	informers map[string]cache.Informer
	handlers  []*registration
	indexers  []toolscache.Indexers
}

var _ cache.Informer = &kind{}

func (k *kind) newObject() client.Object { return k.template.DeepCopyObject().(client.Object) }

// newList is an empty list of the kind, in its form.
func (k *kind) newList(scheme *runtime.Scheme) (client.ObjectList, error) {
	gvk := k.key.gvk
	gvk.Kind += "List"
	switch k.key.form {
	case "unstructured":
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk)
		return l, nil
	case "metadata":
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(gvk)
		return l, nil
	}
	obj, err := scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	l, ok := obj.(client.ObjectList)
	if !ok {
		return nil, fmt.Errorf("%s is not a list", gvk)
	}
	return l, nil
}

func (k *kind) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return k.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{})
}

func (k *kind) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return k.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{ResyncPeriod: &resync})
}

func (k *kind) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	reg := &registration{c: k.c, handler: h, opts: opts, byNamespace: map[string]toolscache.ResourceEventHandlerRegistration{}}
	for ns, inf := range k.informers {
		r, err := inf.AddEventHandlerWithOptions(h, opts)
		if err != nil {
			return nil, err
		}
		reg.byNamespace[ns] = r
	}
	k.handlers = append(k.handlers, reg)
	return reg, nil
}

func (k *kind) RemoveEventHandler(r toolscache.ResourceEventHandlerRegistration) error {
	reg, ok := r.(*registration)
	if !ok {
		return fmt.Errorf("%T is not a registration of this informer", r)
	}
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	for ns, nr := range reg.byNamespace {
		if inf, ok := k.informers[ns]; ok {
			if err := inf.RemoveEventHandler(nr); err != nil {
				return err
			}
		}
	}
	reg.byNamespace = map[string]toolscache.ResourceEventHandlerRegistration{}
	k.handlers = slices.DeleteFunc(k.handlers, func(h *registration) bool { return h == reg })
	return nil
}

func (k *kind) AddIndexers(indexers toolscache.Indexers) error {
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	for _, inf := range k.informers {
		if err := inf.AddIndexers(indexers); err != nil {
			return err
		}
	}
	k.indexers = append(k.indexers, indexers)
	return nil
}

func (k *kind) HasSynced() bool {
	k.c.mu.RLock()
	defer k.c.mu.RUnlock()
	for _, inf := range k.informers {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

func (k *kind) HasSyncedChecker() toolscache.DoneChecker {
	k.c.mu.RLock()
	defer k.c.mu.RUnlock()
	checkers := map[string]toolscache.DoneChecker{}
	for ns, inf := range k.informers {
		checkers[ns] = inf.HasSyncedChecker()
	}
	return allDone(k.key.gvk.Kind, checkers)
}

func (k *kind) IsStopped() bool {
	k.c.mu.RLock()
	defer k.c.mu.RUnlock()
	for _, inf := range k.informers {
		if !inf.IsStopped() {
			return false
		}
	}
	return true
}

// registration is a handler added to a kind's informer: its registration
// in each namespace's informer.
type registration struct {
	c       *Cache
	handler toolscache.ResourceEventHandler
	opts    toolscache.HandlerOptions
	// Guarded by c.mu.
	byNamespace map[string]toolscache.ResourceEventHandlerRegistration
}

func (r *registration) snapshot() []toolscache.ResourceEventHandlerRegistration {
	r.c.mu.RLock()
	defer r.c.mu.RUnlock()
	out := make([]toolscache.ResourceEventHandlerRegistration, 0, len(r.byNamespace))
	for _, nr := range r.byNamespace {
		out = append(out, nr)
	}
	return out
}

// HasSynced: the handler has had the initial objects of every namespace
// served when it was added.
func (r *registration) HasSynced() bool {
	for _, nr := range r.snapshot() {
		if !nr.HasSynced() {
			return false
		}
	}
	return true
}

func (r *registration) HasSyncedChecker() toolscache.DoneChecker {
	r.c.mu.RLock()
	defer r.c.mu.RUnlock()
	checkers := map[string]toolscache.DoneChecker{}
	for ns, nr := range r.byNamespace {
		checkers[ns] = nr.HasSyncedChecker()
	}
	return allDone("handler", checkers)
}

// doneChecker is done when all its checkers are.
type doneChecker struct {
	name string
	done chan struct{}
}

func allDone(what string, checkers map[string]toolscache.DoneChecker) toolscache.DoneChecker {
	names := make([]string, 0, len(checkers))
	for ns := range checkers {
		names = append(names, ns)
	}
	slices.Sort(names)
	d := &doneChecker{name: what + " in " + strings.Join(names, ", "), done: make(chan struct{})}
	go func() {
		for _, c := range checkers {
			<-c.Done()
		}
		close(d.done)
	}()
	return d
}

func (d *doneChecker) Name() string          { return d.name }
func (d *doneChecker) Done() <-chan struct{} { return d.done }
