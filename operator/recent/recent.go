// Package recent remembers a time per object for a minute: when the
// operator created a task's Job or released a pod, so that a reconcile
// from a cache that has not seen it yet does not do it again. Entries are
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

// Times is a time per object UID; the zero value is ready to use.
type Times struct {
	mu    sync.Mutex
	times map[types.UID]time.Time
	swept time.Time // when entries older than Memory were last dropped
}

// At is uid's time, unless it was dropped or forgotten.
func (t *Times) At(uid types.UID) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.times[uid]
	return at, ok
}

// Within says whether uid's time is less than Memory before now.
func (t *Times) Within(uid types.UID, now time.Time) bool {
	at, ok := t.At(uid)
	return ok && now.Sub(at) < Memory
}

// Add sets uid's time to now, and drops the times older than Memory (at
// most once per Memory).
func (t *Times) Add(uid types.UID, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.times == nil {
		t.times = map[types.UID]time.Time{}
	}
	if now.Sub(t.swept) >= Memory {
		for k, at := range t.times {
			if now.Sub(at) >= Memory {
				delete(t.times, k)
			}
		}
		t.swept = now
	}
	t.times[uid] = now
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
