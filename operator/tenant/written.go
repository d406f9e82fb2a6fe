package tenant

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// written remembers, per object, the resourceVersion of the controller's
// last apply and what it applied, until the cache has caught up with it. A
// reconcile from a cache that has not seen the write yet (another event of
// the same object came first, such as the quota controller's recount after
// a spec edit) would otherwise find the old spec and apply the same again.
// Entries are per namespace, at most one per object the tier makes, and go
// once the cache holds the write or the namespace stops being a tenant's.
type written struct {
	mu sync.Mutex
	ns map[string]map[writtenKey]writtenEntry
}

type writtenKey struct{ kind, name string }

type writtenEntry struct {
	resourceVersion string
	applied         client.Object
}

func keyOf(obj client.Object) writtenKey {
	return writtenKey{kind: fmt.Sprintf("%T", obj), name: obj.GetName()}
}

// add remembers that applied (as it was sent) was written as
// resourceVersion.
func (w *written) add(applied client.Object, resourceVersion string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ns == nil {
		w.ns = map[string]map[writtenKey]writtenEntry{}
	}
	m := w.ns[applied.GetNamespace()]
	if m == nil {
		m = map[writtenKey]writtenEntry{}
		w.ns[applied.GetNamespace()] = m
	}
	m[keyOf(applied)] = writtenEntry{resourceVersion: resourceVersion, applied: applied}
}

// pending reports whether cached predates the controller's last write of
// the object and that write was desired as it is now: the write stands,
// and the cache will show it. Once the cache has caught up (or the
// resourceVersions cannot be compared: they are opaque to clients on an
// API server that does not promise their order), the entry goes and the
// cache decides.
func (w *written) pending(desired, cached client.Object) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.ns[desired.GetNamespace()]
	e, ok := m[keyOf(desired)]
	if !ok {
		return false
	}
	if c, err := resourceversion.CompareResourceVersion(cached.GetResourceVersion(), e.resourceVersion); err != nil || c >= 0 {
		delete(m, keyOf(desired))
		return false
	}
	return UpToDate(desired, e.applied)
}

// forget drops what was remembered of namespace ns.
func (w *written) forget(ns string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.ns, ns)
}

// len is how many objects are remembered, for tests.
func (w *written) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, m := range w.ns {
		n += len(m)
	}
	return n
}
