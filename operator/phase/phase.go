// Package phase runs a reconcile as cluster-api's controllers do: a scope
// (what the reconcile read and decided) passed through a list of short,
// named phases, in order, each doing one thing. A controller's Reconcile
// builds its scope and hands it to Run with its phases, so it reads as
// the list.
package phase

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Result is what a phase asks of the reconcile.
type Result struct {
	// Stop ends the reconcile after this phase: the phases after it wait
	// for the next reconcile (an event, or RequeueAfter).
	Stop bool
	// RequeueAfter brings the object back then, unless another phase asks
	// for sooner.
	RequeueAfter time.Duration
	// Retry is returned as the reconcile's error once the phases end (or
	// one stops), so that the workqueue retries with its backoff, without
	// stopping the phases after this one: a create a full quota refused
	// is told in the status first.
	Retry error
}

// Func is one phase of a reconcile of scope S.
type Func[S any] func(ctx context.Context, s S) (Result, error)

// Run runs phases in order on s until one fails or stops. Its result is
// the first phase's error, else the first Retry, else the soonest
// RequeueAfter any phase asked for.
func Run[S any](ctx context.Context, s S, phases ...Func[S]) (ctrl.Result, error) {
	var out Result
	for _, p := range phases {
		r, err := p(ctx, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		out = merge(out, r)
		if r.Stop {
			break
		}
	}
	if out.Retry != nil {
		return ctrl.Result{}, out.Retry
	}
	return ctrl.Result{RequeueAfter: out.RequeueAfter}, nil
}

// Requeue is a Result that brings the object back in d (none when d is
// zero or less).
func Requeue(d time.Duration) Result { return Result{RequeueAfter: max(d, 0)} }

// StopFor is a Result that stops the reconcile and brings the object back
// in d (only by its events when d is zero or less).
func StopFor(d time.Duration) Result { return Result{Stop: true, RequeueAfter: max(d, 0)} }

// merge keeps a's Retry unless it has none, and the sooner requeue.
func merge(a, b Result) Result {
	if a.Retry == nil {
		a.Retry = b.Retry
	}
	if b.RequeueAfter > 0 && (a.RequeueAfter <= 0 || b.RequeueAfter < a.RequeueAfter) {
		a.RequeueAfter = b.RequeueAfter
	}
	return a
}
