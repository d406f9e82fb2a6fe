// Package recent remembers a time per object for a minute: when the
// operator last wrote an object's status (or first saw it, StatusWait), or
// released a pod. It is what
// the controllers pace their status writes with, and how they avoid
// sending a write again from a cache that has not seen it yet. Entries are
// dropped a minute after they were added, as new ones come, so it holds
// what a minute brings, never more.
package recent

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Memory is how long a time is kept.
const Memory = time.Minute

// Times is a time per object UID, and optionally a resourceVersion with
// it (AddVersion); the zero value is ready to use.
type Times struct {
	mu    sync.Mutex
	times map[types.UID]entry
	swept time.Time // when entries older than Memory were last dropped
}

type entry struct {
	at      time.Time
	version string
}

// At is uid's time, unless it was dropped or forgotten.
func (t *Times) At(uid types.UID) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.times[uid]
	return e.at, ok
}

// Version is the resourceVersion AddVersion kept with uid's time, "" when
// none.
func (t *Times) Version(uid types.UID) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.times[uid].version
}

// Within says whether uid's time is less than Memory before now.
func (t *Times) Within(uid types.UID, now time.Time) bool {
	at, ok := t.At(uid)
	return ok && now.Sub(at) < Memory
}

// Add sets uid's time to now, and drops the times older than Memory (at
// most once per Memory).
func (t *Times) Add(uid types.UID, now time.Time) { t.AddVersion(uid, now, "") }

// AddVersion sets uid's time to now and keeps version with it, as Add.
func (t *Times) AddVersion(uid types.UID, now time.Time, version string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.times == nil {
		t.times = map[types.UID]entry{}
	}
	if now.Sub(t.swept) >= Memory {
		for k, e := range t.times {
			if now.Sub(e.at) >= Memory {
				delete(t.times, k)
			}
		}
		t.swept = now
	}
	t.times[uid] = entry{at: now, version: version}
}

// Forget drops uid's time.
func (t *Times) Forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.times, uid)
}

// Len is how many times are kept.
func (t *Times) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.times)
}

// StatusPace is the least time between two status writes of an object
// that can wait (an unfinished task, a workflow whose steps only moved
// between Pending and Running), and between its creation and the first.
// What ends something is written at once. The Job controller batches its
// status updates by a second too.
const StatusPace = time.Second

// StatusWait is how long a status write of the object uid, created at
// created, waits: the rest of StatusPace after its last write (written),
// or, when none is known (none since the operator started, or over a
// minute ago), after it was first seen. A creation timestamp has whole
// seconds, so the object was created up to a second after it: pacing from
// it let a new object's first write go out a few milliseconds after its
// creation, showing a phase (Pending) that the next second replaces. A
// young object's first sight is recorded in written as where its pacing
// starts; one seen over a second after created starts from created plus
// StatusPace, the latest it can have been created. Zero or less: write
// now.
func StatusWait(written *Times, uid types.UID, created, now time.Time) time.Duration {
	last, ok := written.At(uid)
	if !ok {
		last = created.Add(StatusPace)
		if now.Before(last) {
			last = now
			written.Add(uid, now)
		}
	}
	return last.Add(StatusPace).Sub(now)
}
