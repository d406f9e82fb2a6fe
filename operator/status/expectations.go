package status

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Memory is how long an expectation (or a pacing time, Writer) is kept
// at most: what the cache has not shown a minute after a write is taken
// as lost, and decided afresh.
const Memory = time.Minute

// Key names the object an expectation is about: its Go type, namespace
// and name, and its UID when the object has one, so that an object made
// again under the same name is not taken for the one written.
type Key struct {
	Kind, Namespace, Name string
	UID                   types.UID
}

// KeyOf is o's Key.
func KeyOf(o client.Object) Key {
	return Key{Kind: fmt.Sprintf("%T", o), Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID()}
}

// Expectations are a controller's own writes and creates that its cache
// may not show yet, kept as kube-controller-manager's
// ControllerExpectations keeps the pods a ReplicaSet controller created: a
// reconcile whose cache has not observed them waits for the cache (the
// write's own event brings the object back) instead of acting again on a
// view that predates them, which would repeat the write, create a second
// time, or send a conditional write sure to be refused as a Conflict.
//
// An expectation goes once the cache shows what it expects, or after
// Memory; there is at most one per object, so they hold what a minute of
// writes brings. The zero value is ready to use, on the real clock.
type Expectations struct {
	Clock clock.PassiveClock

	mu   sync.Mutex
	memo memo[expected]
}

type expected struct {
	// from and to are a write's resourceVersions: the one it was made
	// against ("" when unknown or when it created the object) and the one
	// it made ("": no write expected).
	from, to string
	// sent is what the write sent, for its caller to compare.
	sent any
	// creates counts the creates for the object not observed yet.
	creates int
}

// Wrote records that the controller wrote the object key, read at
// resourceVersion from, and that the API server answered with version to;
// sent is what it sent. A write that made no new version (from == to)
// expects nothing.
func (e *Expectations) Wrote(key Key, from, to string, sent any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &e.memo.set(key, e.now()).v
	if to == "" || to == from {
		from, to, sent = "", "", nil
	}
	x.from, x.to, x.sent = from, to, sent
	e.drop(key, x)
}

// Unseen reports whether the cache, which holds the object key at
// resourceVersion cached, has not observed the controller's last write of
// it yet, and returns what that write sent. Once the cache shows it, or
// holds a version that cannot be ordered against it (the API server does
// not promise that resourceVersions compare), the write is forgotten and
// the cache decides.
func (e *Expectations) Unseen(key Key, cached string) (sent any, unseen bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.memo.get(key, e.now())
	if m == nil || m.v.to == "" {
		return nil, false
	}
	x := &m.v
	if cached != "" && cached == x.from {
		return x.sent, true
	}
	if c, err := resourceversion.CompareResourceVersion(cached, x.to); err == nil && c < 0 {
		return x.sent, true
	}
	x.from, x.to, x.sent = "", "", nil
	e.drop(key, x)
	return nil, false
}

// ExpectCreates records that the controller created (or is about to
// create) n objects for key that its cache does not show yet.
func (e *Expectations) ExpectCreates(key Key, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.memo.set(key, e.now()).v.creates += n
}

// CreatesObserved lowers key's expected creates by n: the cache shows
// them, or they failed.
func (e *Expectations) CreatesObserved(key Key, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if m := e.memo.get(key, e.now()); m != nil {
		m.v.creates = max(m.v.creates-n, 0)
		e.drop(key, &m.v)
	}
}

// CreatesPending says whether creates for key are expected that the cache
// has not shown, and were made less than Memory ago.
func (e *Expectations) CreatesPending(key Key) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.memo.get(key, e.now())
	return m != nil && m.v.creates > 0
}

// Forget drops what is expected of key.
func (e *Expectations) Forget(key Key) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.memo.m, key)
}

// ForgetNamespace drops what is expected of the objects of namespace ns.
func (e *Expectations) ForgetNamespace(ns string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.memo.forget(func(k Key) bool { return k.Namespace != ns })
}

// Len is how many objects have expectations.
func (e *Expectations) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.memo.m)
}

// drop forgets key once it expects nothing.
func (e *Expectations) drop(key Key, x *expected) {
	if x.to == "" && x.creates == 0 {
		delete(e.memo.m, key)
	}
}

func (e *Expectations) now() time.Time {
	if e.Clock == nil {
		return time.Now()
	}
	return e.Clock.Now()
}
