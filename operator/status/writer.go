package status

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Pace says whether a status change may wait.
type Pace int

const (
	// Now writes the change at once: what a user or the next step waits
	// on (an object ending, a step created or ended).
	Now Pace = iota
	// Paced writes the change at most once per StatusPace after the
	// object's last status write, and not in the first StatusPace after
	// the Writer first saw it: a task that ends within a second gets one
	// write, when it ends, rather than one for Pending, Running and the
	// end.
	Paced
)

// StatusPace is the least time between two paced status writes of an
// object, and between its first sight and its first. The Job controller
// batches its status updates by a second too.
const StatusPace = time.Second

// CacheRecheck is how soon a reconcile whose cache has not seen its own
// last status write looks again, should that write's event not bring
// the object back first.
const CacheRecheck = time.Second

// Writer writes the statuses of one kind of object, for its controller:
// only what changed, paced (Pace), and never from a cache that has not
// seen the Writer's own last write of that object (Expectations): such a
// write would be refused as a Conflict, after a round trip that delays
// the reconcile the next event brings. Each controller has one; the zero
// value with a Client is ready to use, on the real clock.
type Writer struct {
	Client client.Client
	Clock  clock.PassiveClock

	// writes are the status writes the cache may not show yet (guard).
	writes Expectations
	once   sync.Once
	// paced is when each object's status was last written, or first seen.
	mu    sync.Mutex
	paced memo[struct{}]
}

// Outcome is what Write did.
type Outcome struct {
	// Wrote: the status was written.
	Wrote bool
	// Wait: the status differs and was not written; write it again in
	// Wait (its reconcile's RequeueAfter), when the pace allows or the
	// cache has caught up.
	Wait time.Duration
}

// Write writes obj's status (what the reconcile computed) when it differs
// from was (the status obj was read with: a status value or a pointer to
// one). The patch carries only the metadata and status, with an
// optimistic lock, and its answer lands in obj's metadata and status: obj's
// spec is never written nor replaced, so it may be the cache's own, read
// only. A Conflict is returned, as every error: the workqueue retries with
// its backoff.
func (w *Writer) Write(ctx context.Context, obj client.Object, was any, pace Pace) (Outcome, error) {
	before, after, err := stubs(obj, was)
	if err != nil {
		return Outcome{}, err
	}
	if equality.Semantic.DeepEqual(of(before), of(after)) {
		return Outcome{}, nil
	}
	if wait := w.Due(obj, pace); wait > 0 {
		return Outcome{Wait: wait}, nil
	}
	wrote, err := Patch(ctx, w.Client, after, before)
	if err != nil || !wrote {
		return Outcome{}, err
	}
	copyInto(obj, after)
	key := KeyOf(obj)
	w.guard().Wrote(key, before.GetResourceVersion(), after.GetResourceVersion(), nil)
	w.mu.Lock()
	w.paced.set(key, w.now())
	w.mu.Unlock()
	return Outcome{Wrote: true}, nil
}

// Due is how long a changed status of obj, as cached, waits before it may
// be written at pace: the rest of StatusPace after its last write or
// first sight (Paced), or CacheRecheck while the cache has not seen the
// Writer's last write of it. Zero or less: write now. A Paced call
// records the first sight of an object it knows no write of.
func (w *Writer) Due(obj client.Object, pace Pace) time.Duration {
	key := KeyOf(obj)
	if pace == Paced {
		if wait := w.paceWait(key, obj.GetCreationTimestamp().Time); wait > 0 {
			return wait
		}
	}
	if _, unseen := w.guard().Unseen(key, obj.GetResourceVersion()); unseen {
		return CacheRecheck
	}
	return 0
}

// paceWait is the rest of StatusPace after the object's last write, or,
// when none is known (none since the operator started, or over a minute
// ago), after it was first seen. A creation timestamp has whole seconds,
// so the object was created up to a second after it: pacing from it let a
// new object's first write go out a few milliseconds after its creation,
// showing a phase (Pending) that the next second replaces. A young
// object's first sight is where its pacing starts; one seen over a second
// after created starts from created plus StatusPace, the latest it can
// have been created.
func (w *Writer) paceWait(key Key, created time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	var last time.Time
	if e := w.paced.get(key, now); e != nil {
		last = e.at
	} else if last = created.Add(StatusPace); now.Before(last) {
		last = w.paced.set(key, now).at
	}
	return last.Add(StatusPace).Sub(now)
}

// Forget drops what the Writer remembers of obj: when it is gone.
func (w *Writer) Forget(obj client.Object) {
	key := KeyOf(obj)
	w.guard().Forget(key)
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.paced.m, key)
}

// Len is how many objects the Writer remembers a write or a first sight
// of, for tests.
func (w *Writer) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return max(w.guard().Len(), len(w.paced.m))
}

// guard is w.writes, on w's clock.
func (w *Writer) guard() *Expectations {
	w.once.Do(func() { w.writes.Clock = w.Clock })
	return &w.writes
}

func (w *Writer) now() time.Time {
	if w.Clock == nil {
		return time.Now()
	}
	return w.Clock.Now()
}

// stubs are obj with only its metadata and status (after: obj's; before:
// was), so that a patch neither sends nor decodes its spec.
func stubs(obj client.Object, was any) (before, after client.Object, err error) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct || !v.Elem().FieldByName("Status").IsValid() {
		return nil, nil, fmt.Errorf("status writer: %T has no Status", obj)
	}
	st := v.Elem().FieldByName("Status")
	old := reflect.ValueOf(was)
	if old.Kind() == reflect.Pointer && old.Type().Elem() == st.Type() {
		old = old.Elem()
	}
	if !old.IsValid() || old.Type() != st.Type() {
		return nil, nil, fmt.Errorf("status writer: the status %T was read with is not a %s", was, st.Type())
	}
	meta, ok := v.Elem().FieldByName("ObjectMeta").Interface().(metav1.ObjectMeta)
	if !ok {
		return nil, nil, fmt.Errorf("status writer: %T has no ObjectMeta", obj)
	}
	stub := func(status reflect.Value) client.Object {
		s := reflect.New(v.Type().Elem())
		s.Elem().FieldByName("ObjectMeta").Set(reflect.ValueOf(*meta.DeepCopy()))
		s.Elem().FieldByName("Status").Set(status)
		return s.Interface().(client.Object)
	}
	return stub(old), stub(st), nil
}

// copyInto sets obj's metadata and status to the patch's answer in stub.
func copyInto(obj, stub client.Object) {
	dst, src := reflect.ValueOf(obj).Elem(), reflect.ValueOf(stub).Elem()
	dst.FieldByName("ObjectMeta").Set(src.FieldByName("ObjectMeta"))
	dst.FieldByName("Status").Set(src.FieldByName("Status"))
}
