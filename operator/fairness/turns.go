package fairness

import "container/list"

// turns holds values by flow and hands them out one flow at a time, in
// turn, one value each, oldest first within a flow: round robin, as the
// API server's fair queuing with one seat per turn. A flow that gets a
// value joins the back of the turn, and one that runs out leaves it.
// Memory is per value held; a flow costs nothing once it has none. Not
// safe for concurrent use.
type turns[V any] struct {
	flows map[string]*flowValues[V]
	turn  list.List // of *flowValues[V]
	n     int
}

type flowValues[V any] struct {
	name   string
	values list.List // of V
	// elem is the flow's place in the turn.
	elem *list.Element
}

// held is a value's place, for remove.
type held struct {
	flow string
	elem *list.Element
}

// push appends v to flow's values.
func (t *turns[V]) push(flow string, v V) held {
	if t.flows == nil {
		t.flows = map[string]*flowValues[V]{}
	}
	f, ok := t.flows[flow]
	if !ok {
		f = &flowValues[V]{name: flow}
		f.elem = t.turn.PushBack(f)
		t.flows[flow] = f
	}
	t.n++
	return held{flow: flow, elem: f.values.PushBack(v)}
}

// pop takes the oldest value of the flow whose turn it is, and sends that
// flow to the back of the turn.
func (t *turns[V]) pop() (V, bool) {
	front := t.turn.Front()
	if front == nil {
		var zero V
		return zero, false
	}
	f := front.Value.(*flowValues[V])
	t.turn.MoveToBack(f.elem)
	h := held{flow: f.name, elem: f.values.Front()}
	v := h.elem.Value.(V)
	t.remove(h)
	return v, true
}

// remove takes out the value at h, and its flow when it is left empty.
func (t *turns[V]) remove(h held) {
	f := t.flows[h.flow]
	f.values.Remove(h.elem)
	t.n--
	if f.values.Len() == 0 {
		t.turn.Remove(f.elem)
		delete(t.flows, h.flow)
	}
}

// len is how many values are held.
func (t *turns[V]) len() int { return t.n }
