package status

import "time"

// memo is a value per object, each kept for Memory after it was last
// set; the expired ones go as new ones come, at most once per Memory, so a
// memo holds what a minute brings. Its owner locks it.
type memo[V any] struct {
	m     map[Key]*memoEntry[V]
	swept time.Time
}

type memoEntry[V any] struct {
	at time.Time
	v  V
}

// get is key's entry, nil when there is none or it expired.
func (m *memo[V]) get(key Key, now time.Time) *memoEntry[V] {
	e := m.m[key]
	if e == nil || now.Sub(e.at) >= Memory {
		return nil
	}
	return e
}

// set is key's entry, made if there was none (or it expired), as set now.
func (m *memo[V]) set(key Key, now time.Time) *memoEntry[V] {
	if m.m == nil {
		m.m = map[Key]*memoEntry[V]{}
	}
	if now.Sub(m.swept) >= Memory {
		for k, e := range m.m {
			if now.Sub(e.at) >= Memory {
				delete(m.m, k)
			}
		}
		m.swept = now
	}
	e := m.get(key, now)
	if e == nil {
		e = &memoEntry[V]{}
		m.m[key] = e
	}
	e.at = now
	return e
}

// forget drops the entries keep does not keep.
func (m *memo[V]) forget(keep func(Key) bool) {
	for k := range m.m {
		if !keep(k) {
			delete(m.m, k)
		}
	}
}
